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
	"github.com/ordersync/ordersync/internal/credtest"
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

	require.Equal(t, "shpat_first", credtest.Secret(ctx, t, src))

	// Overwritten in place: the stamp changed, the next call reads it.
	writeSecret(t, path, "shpat_second_longer", old.Add(time.Minute))
	require.Equal(t, "shpat_second_longer", credtest.Secret(ctx, t, src))

	// Replaced by a rename (how most tools write secrets): another file.
	tmp := path + ".new"
	writeSecret(t, tmp, "shpat_third_longer!", old.Add(time.Minute))
	require.NoError(t, os.Rename(tmp, path))
	require.Equal(t, "shpat_third_longer!", credtest.Secret(ctx, t, src))
	require.Equal(t, []string{"shpat_first", "shpat_second_longer", "shpat_third_longer!"}, src.Recent())
}

func TestStaticFileUnchangedStampIsNotReadButRefusedIs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "token")
	old := time.Now().Add(-time.Hour)
	writeSecret(t, path, "token-aaaa", old)
	src := credentials.Static(config.CredentialRef{File: path})
	require.Equal(t, "token-aaaa", credtest.Secret(ctx, t, src))

	// The same size and modification time: the stamp cannot tell, so
	// Secret keeps the text it read (one stat, no read) ...
	writeSecret(t, path, "token-bbbb", old)
	require.Equal(t, "token-aaaa", credtest.Secret(ctx, t, src))

	// ... and a refusal reads the file at once and sees the change.
	require.True(t, credtest.Refused(ctx, t, src, "token-aaaa"))
	require.Equal(t, "token-bbbb", credtest.Secret(ctx, t, src))

	// Refused with the file as it was: nothing new to try.
	require.False(t, credtest.Refused(ctx, t, src, "token-bbbb"))
}

func TestStaticEnvReadEachCall(t *testing.T) {
	ctx := context.Background()
	t.Setenv("ORDERSYNC_TEST_STATIC_TOKEN", " first-token ")
	src := credentials.Static(config.CredentialRef{Env: "ORDERSYNC_TEST_STATIC_TOKEN"})
	require.Equal(t, "first-token", credtest.Secret(ctx, t, src))
	t.Setenv("ORDERSYNC_TEST_STATIC_TOKEN", "second-token")
	require.Equal(t, "second-token", credtest.Secret(ctx, t, src))
	require.True(t, credtest.Refused(ctx, t, src, "first-token"))
	require.Equal(t, "env:ORDERSYNC_TEST_STATIC_TOKEN", src.String())
}

func TestStaticErrorsNameTheReferenceNeverTheSecret(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "token")
	writeSecret(t, path, "very-secret-token", time.Now().Add(-time.Hour))
	src := credentials.Static(config.CredentialRef{File: path})
	credtest.Secret(ctx, t, src)

	require.NoError(t, os.Remove(path))
	_, err := src.Secret(ctx)
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
		credtest.Secret(ctx, t, src)
	}
	require.Equal(t, all[2:], src.Recent())
}
