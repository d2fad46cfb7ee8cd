package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runCreds runs the root command and returns what it printed.
func runCreds(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&App{Out: &out, Err: &errOut})
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	all := out.String() + errOut.String()
	if err != nil {
		all += err.Error()
	}
	require.NotContains(t, all, "SECRET", "ordersync %s printed a secret", strings.Join(args, " "))
	return out.String(), err
}

// TestCredentialsCommands walks the operator's path: a key, an app, an
// imported token, list and show, a key rotation that lets the old key go,
// and removal; no secret is ever printed.
func TestCredentialsCommands(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(dir, "state.db"))
	t.Setenv("ORDERSYNC_PLATFORMS_FILE", "/nonexistent/platforms.yaml")
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", "")
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS_FILE", "")
	t.Setenv("APP_SECRET", "cs-SECRET-1")
	t.Setenv("SHOP_ACCESS", "at-SECRET-2")
	refreshFile := filepath.Join(dir, "refresh")
	require.NoError(t, os.WriteFile(refreshFile, []byte("rt-SECRET-3\n"), 0o600))

	_, err := runCreds(t, "credentials", "app", "set", "app-a", "--client-id", "cid", "--client-secret-env", "APP_SECRET")
	requireUsage(t, err, "ORDERSYNC_CREDENTIAL_KEYS")

	oldKey, err := runCreds(t, "credentials", "new-key")
	require.NoError(t, err)
	oldKey = strings.TrimSpace(oldKey)
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", oldKey)

	_, err = runCreds(t, "credentials", "app", "set", "app-a", "--client-id", "cid", "--client-secret", "x")
	require.ErrorContains(t, err, "unknown flag: --client-secret", "a secret is never a flag's value")
	_, err = runCreds(t, "credentials", "app", "set", "app-a", "--client-id", "cid", "--client-secret-env", "UNSET_VAR_X")
	requireUsage(t, err, "UNSET_VAR_X is not set")
	out, err := runCreds(t, "credentials", "app", "set", "app-a", "--client-id", "cid", "--client-secret-env", "APP_SECRET")
	require.NoError(t, err)
	require.Contains(t, out, "app-a: stored app at generation 1")

	_, err = runCreds(t, "credentials", "import", "shop-a", "--kind", "shopify", "--app", "app-a",
		"--token-url", "http://example.com/token", "--refresh-token-file", refreshFile)
	requireUsage(t, err, "plain http only to this machine")
	out, err = runCreds(t, "credentials", "import", "shop-a", "--kind", "shopify", "--app", "app-a",
		"--token-url", "https://acme.myshopify.com/admin/oauth/access_token", "--refresh-token-file", refreshFile,
		"--access-token-env", "SHOP_ACCESS", "--expires-in", "1h")
	require.NoError(t, err)
	require.Contains(t, out, "shop-a: stored shopify at generation 1")

	out, err = runCreds(t, "credentials", "list", "-o", "json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 2)
	require.Equal(t, "app-a", rows[0]["name"])
	require.Equal(t, "shop-a", rows[1]["name"])
	require.Equal(t, "app-a", rows[1]["app"])
	require.NotEmpty(t, rows[1]["access_expires_at"])
	out, err = runCreds(t, "credentials", "show", "shop-a")
	require.NoError(t, err)
	require.Contains(t, out, "needs re-authorization:")

	newKey, err := runCreds(t, "credentials", "new-key")
	require.NoError(t, err)
	newKey = strings.TrimSpace(newKey)
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", newKey+","+oldKey)
	out, err = runCreds(t, "credentials", "rotate-key")
	require.NoError(t, err)
	newID, _, _ := strings.Cut(newKey, ":")
	require.Contains(t, out, "re-sealed 2 credential(s) with key "+newID)

	// The old key is gone from the setting; the rows open with the new one.
	keysFile := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(keysFile, []byte(newKey+"\n"), 0o600))
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", "")
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS_FILE", keysFile)
	out, err = runCreds(t, "credentials", "rotate-key")
	require.NoError(t, err)
	require.Contains(t, out, "re-sealed 0 credential(s)")
	out, err = runCreds(t, "credentials", "app", "set", "app-a", "--client-id", "cid2", "--client-secret-env", "APP_SECRET")
	require.NoError(t, err)
	require.Contains(t, out, "generation 3 (key "+newID+")")

	_, err = runCreds(t, "credentials", "remove", "app-a")
	require.ErrorContains(t, err, "refreshes shop-a")
	_, err = runCreds(t, "credentials", "remove", "shop-a")
	require.NoError(t, err)
	_, err = runCreds(t, "credentials", "remove", "app-a")
	require.NoError(t, err)
	_, err = runCreds(t, "credentials", "show", "shop-a")
	require.ErrorContains(t, err, "no stored credential has that name")
}
