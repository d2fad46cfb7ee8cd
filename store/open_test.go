package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenDSNForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)

	for _, dsn := range []string{
		"sqlite://" + filepath.Join(dir, "abs", "a.db"), // sqlite:///abs/...
		"sqlite://rel/b.db",
		filepath.Join(dir, "plain", "c.db"),
		"d.db",
		DefaultDSN,
	} {
		s, err := Open(ctx, dsn)
		require.NoError(t, err, dsn)
		require.NoError(t, s.Close())
	}
	for _, path := range []string{"abs/a.db", "rel/b.db", "plain/c.db", "d.db", DefaultSQLitePath} {
		_, err := os.Stat(filepath.Join(dir, path))
		require.NoError(t, err, "%s should exist", path)
	}
}

func TestOpenRejectsUnknownDSN(t *testing.T) {
	ctx := context.Background()
	for dsn, want := range map[string]string{
		"mysql://user:secret@host/db": `unsupported DSN scheme "mysql"`,
		"orders.sqlite":               `has no scheme and is not a path ending in .db`,
		"":                            `has no scheme`,
		"sqlite://":                   `empty path`,
		"sqlite:///tmp/x.db?mode=ro":  `must not contain '?'`,
	} {
		s, err := Open(ctx, dsn)
		require.Error(t, err, dsn)
		require.Nil(t, s)
		require.Contains(t, err.Error(), want, dsn)
		require.NotContains(t, err.Error(), "secret", "the DSN's password must not leak")
	}
}
