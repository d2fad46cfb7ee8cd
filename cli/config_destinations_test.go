package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const validateDestinationsFile = `
default: {kind: sim}
platforms:
  a:
    endpoint: http://127.0.0.1:1/shops/a
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
destinations:
  oms:
    kind: webhook
    url: http://127.0.0.1:1/hook
    secret: {env: ORDERSYNC_TEST_OMS_SECRET}
    platforms: [a]
  bus:
    kind: nats
    url: nats://127.0.0.1:4222
    subject: orders
`

// TestValidateChecksWhatTheWorkerChecks: a destination's unset secret, and
// a webhook secret not in whsec_ form (which failed only at the first
// send), stop `config validate` as they stop `worker`: exit 2, one line
// naming the destination and the reference, never the secret.
func TestValidateChecksWhatTheWorkerChecks(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(dir, "orders.db"))
	t.Setenv("ORDERSYNC_METRICS_ADDRESS", "")
	t.Setenv("ORDERSYNC_TEST_A_TOKEN", "secret-a")
	file := writePlatforms(t, validateDestinationsFile)

	for _, tc := range []struct {
		secret string // "" unsets it
		want   string
	}{
		{"", `destination "oms": field "secret": credential environment variable ORDERSYNC_TEST_OMS_SECRET is not set`},
		{"s3cret-not-base64!", `destination "oms": field "secret": webhook secret env:ORDERSYNC_TEST_OMS_SECRET is not whsec_ followed by base64`},
	} {
		if tc.secret == "" {
			t.Setenv("ORDERSYNC_TEST_OMS_SECRET", "")
			require.NoError(t, unsetenv("ORDERSYNC_TEST_OMS_SECRET"))
		} else {
			t.Setenv("ORDERSYNC_TEST_OMS_SECRET", tc.secret)
		}
		for _, args := range [][]string{{"config", "validate"}, {"worker"}} {
			code, out, errOut := runCommand(t, nil, append(args, "-f", file)...)
			require.Equal(t, ExitUsage, code, "%v: %s%s", args, out, errOut)
			require.Contains(t, errOut, tc.want, "%v", args)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "%v: %s", args, errOut)
			if tc.secret != "" {
				require.NotContains(t, errOut, tc.secret)
			}
		}
		code, _, errOut := runCommand(t, nil, "config", "validate", "--no-credentials", "-f", file)
		require.Equal(t, ExitOK, code, "--no-credentials checks the file only: %s", errOut)
	}
}

// TestValidatePrintsDestinations: the table and the JSON carry the
// destinations beside the platforms (they were left out).
func TestValidatePrintsDestinations(t *testing.T) {
	t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	t.Setenv("ORDERSYNC_TEST_A_TOKEN", "secret-a")
	t.Setenv("ORDERSYNC_TEST_OMS_SECRET", DemoHookSecret)
	file := writePlatforms(t, validateDestinationsFile)

	code, out, errOut := runCommand(t, nil, "config", "validate", "-f", file)
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, `(?m)^a\s+sim\s`, out)
	require.Regexp(t, `(?m)^DESTINATION\s+KIND\s+TARGET\s+SECRET\s+PLATFORMS`, out)
	require.Regexp(t, `(?m)^oms\s+webhook\s+http://127\.0\.0\.1:1/hook\s+env:ORDERSYNC_TEST_OMS_SECRET\s+a\s`, out)
	require.Regexp(t, `(?m)^bus\s+nats\s+nats://127\.0\.0\.1:4222 orders\.>\s+-\s+all\s`, out)
	require.NotContains(t, out, DemoHookSecret)

	code, out, errOut = runCommand(t, nil, "config", "validate", "-f", file, "-o", "json")
	require.Equal(t, ExitOK, code, errOut)
	var got struct {
		Platforms []struct {
			Name string `json:"name"`
		} `json:"platforms"`
		Destinations []struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"destinations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Platforms, 1)
	require.Equal(t, "a", got.Platforms[0].Name)
	require.Len(t, got.Destinations, 2)
	require.NotContains(t, out, DemoHookSecret)
}

// unsetenv removes a variable t.Setenv saved (and restores after the test).
func unsetenv(name string) error { return os.Unsetenv(name) }
