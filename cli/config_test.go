package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCredentialsAreCheckedBeforeWork: `config validate` and `worker`
// resolve every credential reference up front and refuse with exit status
// 2, one line per platform naming the reference; `--no-credentials` and the
// commands run from an operator's machine (apply, start) do not need the
// secrets.
func TestCredentialsAreCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(dir, "orders.db"))
	t.Setenv("ORDERSYNC_METRICS_ADDRESS", "")
	t.Setenv("ORDERSYNC_TEST_A_TOKEN", "secret-a")
	missing := filepath.Join(dir, "missing-secret")
	file := writePlatforms(t, `
default: {kind: sim}
platforms:
  a:
    endpoint: http://127.0.0.1:1/shops/a
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
  b:
    endpoint: http://127.0.0.1:1/shops/b
    credentials: {env: ORDERSYNC_TEST_B_TOKEN}
  c:
    endpoint: http://127.0.0.1:1/shops/c
    credentials: {file: `+missing+`}
`)
	want := []string{
		"ordersync: " + file + `: platform "b": field "credentials": credential environment variable ORDERSYNC_TEST_B_TOKEN is not set`,
		"ordersync: " + file + `: platform "c": field "credentials": credential file ` + missing + ` cannot be read: no such file or directory`,
	}
	for _, args := range [][]string{{"config", "validate"}, {"worker"}, {"worker", "--platforms", "a,c"}} {
		code, out, errOut := runCommand(t, nil, append(args, "-f", file)...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
		require.Empty(t, out)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if args[0] == "worker" && len(args) > 1 {
			require.Equal(t, want[1:], lines, "a worker checks the platforms it serves")
			continue
		}
		require.Equal(t, want, lines, "%v", args)
		require.NotContains(t, errOut, "secret-a")
	}

	code, out, errOut := runCommand(t, nil, "config", "validate", "--no-credentials", "-f", file)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "PLATFORM")

	code, out, errOut = runCommand(t, &silentClient{}, "platform", "apply", "--dry-run", "-f", file)
	require.Equal(t, ExitOK, code, "apply runs where the secrets are not: %s", errOut)
	require.Contains(t, out, "b: would be started")
}

// TestValidateWarnsOfLegacyAPIs: a platform on an API its platform is
// removing loads and validates (exit 0), with a warning on standard error
// that names the platform, the field and the date.
func TestValidateWarnsOfLegacyAPIs(t *testing.T) {
	file := writePlatforms(t, `
platforms:
  old-amazon:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {env: ORDERSYNC_TEST_AMZ}
    options: {api_version: v0, marketplace_ids: [A1PA6795UKMFR9]}
  new-amazon:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {env: ORDERSYNC_TEST_AMZ}
    options: {marketplace_ids: [A1PA6795UKMFR9]}
`)
	code, out, errOut := runCommand(t, nil, "config", "validate", "--no-credentials", "-f", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "old-amazon")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, lines, 1, errOut)
	require.Contains(t, lines[0], `warning: platform "old-amazon": field "options.api_version": Amazon removes Orders API v0`)
	require.Contains(t, lines[0], "2027-03-27")
}
