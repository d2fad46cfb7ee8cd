package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneWayToNameAccounts: an account was an argument for platform
// pause|resume|status but --platform for slices and dlq, and a destination
// an argument for deliveries but --destination for verify. Now every
// command that acts on named accounts takes both forms, with the same
// result.
func TestOneWayToNameAccounts(t *testing.T) {
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	file := writePlatforms(t, quietPlatform)
	same := [][2][]string{
		{{"platform", "pause", "quiet"}, {"platform", "pause", "--platform", "quiet"}},
		{{"platform", "resume", "quiet"}, {"platform", "resume", "-p", "quiet"}},
		{{"slices", "reprocess", "--platform", "quiet", "--from", "-2d", "--to", "-1d"}, {"slices", "reprocess", "quiet", "--from", "-2d", "--to", "-1d"}},
		{{"deliveries", "pause", "oms"}, {"deliveries", "pause", "--destination", "oms"}},
	}
	for _, pair := range same {
		var got [2]string
		for i, args := range pair {
			code, out, errOut := runCommand(t, &silentClient{}, append(args, "-f", file, "--timeout", "50ms")...)
			require.Equal(t, ExitFailure, code, "%v: %s", args, errOut)
			got[i] = out + errOut
		}
		require.Equal(t, got[0], got[1], "%v and %v", pair[0], pair[1])
		require.Regexp(t, `(cursor/quiet|delivery/oms)`, got[0], "%v reached the workflow", pair[0])
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"platform", "pause"}, `name the platform: ordersync platform pause NAME, or --platform NAME`},
		{[]string{"deliveries", "pause"}, `name the destination: ordersync deliveries pause NAME, or --destination NAME`},
		{[]string{"deliveries", "pause", "a", "--destination", "b"}, `ordersync deliveries pause takes one destination, got 2`},
		{[]string{"dlq", "retry", "quiet", "--platform", "other", "--all"}, `ordersync dlq retry names "quiet" and --platform "other": give one`},
		{[]string{"dlq", "retry", "--all"}, `name the platform: as the argument, or --platform`},
		{[]string{"slices", "reprocess", "a", "b"}, `accepts at most 1 arg(s)`},
	} {
		code, _, errOut := runCommand(t, &silentClient{}, append(tc.args, "-f", file)...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// TestWorkerPlatformsIsDeprecated: worker's --platforms still works, with a
// note on standard error; --platform is the spelling every command shares.
func TestWorkerPlatformsIsDeprecated(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_A_TOKEN", "")
	file := writePlatforms(t, `
default: {kind: sim}
platforms:
  a:
    endpoint: http://127.0.0.1:1/shops/a
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
`)
	for _, flag := range []string{"--platform", "--platforms"} {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&App{Out: &out, Err: &errOut})
		root.SetOut(&out)
		code := Execute(root, []string{"worker", flag, "a", "-f", file}, &errOut)
		// The platform was selected: its empty credential stops the worker.
		require.Equal(t, ExitUsage, code, errOut.String())
		require.Contains(t, errOut.String(), `platform "a": field "credentials": credential environment variable ORDERSYNC_TEST_A_TOKEN is empty`)
		// Cobra prints the note with Print: standard error unless SetOut
		// names another writer, as here.
		deprecated := strings.Contains(out.String(), "Flag --platforms has been deprecated, use --platform")
		require.Equal(t, flag == "--platforms", deprecated, errOut.String())
	}
}
