package credentials_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

func writeSecret(t *testing.T, path, text string, mtime time.Time) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	require.NoError(t, os.Chtimes(path, mtime, mtime))
}

func TestStaticFileReReadWhenChanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "token")
	old := time.Now().Add(-time.Hour)
	writeSecret(t, path, "shpat_first\n", old)
	src := credentials.Static(config.CredentialRef{File: path})
	require.Equal(t, "file:"+path, src.String())

	got, err := src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "shpat_first", got)

	// Overwritten in place: the stamp changed, the next call reads it.
	writeSecret(t, path, "shpat_second_longer", old.Add(time.Minute))
	got, err = src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "shpat_second_longer", got)

	// Replaced by a rename (how most tools write secrets): another file.
	tmp := path + ".new"
	writeSecret(t, tmp, "shpat_third_longer!", old.Add(time.Minute))
	require.NoError(t, os.Rename(tmp, path))
	got, err = src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "shpat_third_longer!", got)
	require.Equal(t, []string{"shpat_first", "shpat_second_longer", "shpat_third_longer!"}, src.Recent())
}

func TestStaticFileUnchangedStampIsNotReadButRefusedIs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "token")
	old := time.Now().Add(-time.Hour)
	writeSecret(t, path, "token-aaaa", old)
	src := credentials.Static(config.CredentialRef{File: path})
	got, err := src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "token-aaaa", got)

	// The same size and modification time: the stamp cannot tell, so
	// Secret keeps the text it read (one stat, no read) ...
	writeSecret(t, path, "token-bbbb", old)
	got, err = src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "token-aaaa", got)

	// ... and a refusal reads the file at once and sees the change.
	changed, err := src.Refused(ctx, "token-aaaa")
	require.NoError(t, err)
	require.True(t, changed)
	got, err = src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "token-bbbb", got)

	// Refused with the file as it was: nothing new to try.
	changed, err = src.Refused(ctx, "token-bbbb")
	require.NoError(t, err)
	require.False(t, changed)
}

func TestStaticEnvReadEachCall(t *testing.T) {
	ctx := context.Background()
	t.Setenv("ORDERSYNC_TEST_STATIC_TOKEN", " first-token ")
	src := credentials.Static(config.CredentialRef{Env: "ORDERSYNC_TEST_STATIC_TOKEN"})
	got, err := src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "first-token", got)
	t.Setenv("ORDERSYNC_TEST_STATIC_TOKEN", "second-token")
	got, err = src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, "second-token", got)
	changed, err := src.Refused(ctx, "first-token")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "env:ORDERSYNC_TEST_STATIC_TOKEN", src.String())
}

func TestStaticErrorsNameTheReferenceNeverTheSecret(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "token")
	writeSecret(t, path, "very-secret-token", time.Now().Add(-time.Hour))
	src := credentials.Static(config.CredentialRef{File: path})
	_, err := src.Secret(ctx)
	require.NoError(t, err)

	require.NoError(t, os.Remove(path))
	_, err = src.Secret(ctx)
	require.Error(t, err, "a file gone is an error, not the old secret")
	require.Contains(t, err.Error(), path)
	require.NotContains(t, err.Error(), "very-secret-token")
	_, err = src.Refused(ctx, "very-secret-token")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "very-secret-token")

	writeSecret(t, path, "   \n", time.Now().Add(-time.Hour))
	_, err = src.Secret(ctx)
	require.ErrorContains(t, err, "is empty")

	_, err = credentials.Static(config.CredentialRef{Stored: "acme"}).Secret(ctx)
	require.ErrorContains(t, err, "stored:acme")
}

func TestStaticRecentKeepsTheLastFew(t *testing.T) {
	ctx := context.Background()
	src := credentials.Static(config.CredentialRef{Env: "ORDERSYNC_TEST_STATIC_ROT"})
	var all []string
	for i := range 6 {
		v := "rotated-" + strings.Repeat("x", i)
		all = append(all, v)
		t.Setenv("ORDERSYNC_TEST_STATIC_ROT", v)
		_, err := src.Secret(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, all[2:], src.Recent())
}
