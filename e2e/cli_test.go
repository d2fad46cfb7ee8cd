package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/internal/slicequeue"
	"github.com/ordersync/ordersync/sim"
)

// runCLI runs one ordersync command in-process against the system and
// returns its exit code and output.
func (s *system) runCLI(args ...string) (code int, stdout, stderr string) {
	s.t.Helper()
	var out, errOut bytes.Buffer
	// The command reads its settings from the environment, which parallel
	// tests share: it runs with the system's, and other tests' commands wait.
	s.cliWaited = withEnv(s.cliEnv(), func() {
		app := &cli.App{Out: &out, Err: &errOut}
		root := cli.NewRootCommand(app)
		code = cli.Execute(root, append(args, "-f", s.platformsPath), &errOut)
	})
	return code, out.String(), errOut.String()
}

// cliEnv is the environment an ordersync command needs to act on the system.
func (s *system) cliEnv() map[string]string {
	return map[string]string{
		"ORDERSYNC_TEMPORAL_ADDRESS":   s.srv.FrontendAddress(),
		"ORDERSYNC_TEMPORAL_NAMESPACE": s.stack.namespace,
		"ORDERSYNC_STORE_DSN":          s.storeDSN,
		"ORDERSYNC_LOG_LEVEL":          "error",
	}
}

const cliPlatforms = `
default:
  kind: sim
  start: -2m
  interval: 10s
  overlap: 3s
  settle: 1s
  timeout: 3s
  retries: 3
  retry_interval: 200ms
  concurrency: 3
  rate_limit: {rps: 200, burst: 20}
  page_size: 50
platforms:
  cli-a:
    endpoint: "{{SIM}}/shops/a"
    credentials: {env: ORDERSYNC_E2E_A_TOKEN}
  cli-b:
    endpoint: "{{SIM}}/shops/b"
    credentials: {env: ORDERSYNC_E2E_B_TOKEN}
`

func cliSim() sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed = 3
	cfg.Shops = []sim.ShopConfig{{Name: "a", Token: "a-token"}, {Name: "b", Token: "b-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 150
	cfg.LiveRate = 1
	cfg.Late = time.Second
	return cfg
}

// TestCLICommandsAgainstTheServer drives the operator CLI against a running
// system and checks each command's effect on the workflows and the store.
func TestCLICommandsAgainstTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s := startSystem(t, cliSim(), cliPlatforms)

	code, out, errOut := s.runCLI("platform", "start", "--all")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "cursor/cli-a")
	code, out, _ = s.runCLI("platform", "start", "cli-a")
	require.Zero(t, code)
	require.Contains(t, out, "already running", "start is idempotent")

	code, out, _ = s.runCLI("platform", "list")
	require.Zero(t, code)
	require.Regexp(t, `cli-a\s+sim\s+orders-sim\s+running`, out)

	// Pause: the cursor says so and starts nothing new; resume continues.
	code, out, errOut = s.runCLI("platform", "pause", "cli-b", "--reason", "maintenance")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "cli-b: paused")
	require.Equal(t, "paused: maintenance", s.status("cli-b").Waiting)
	code, _, _ = s.runCLI("platform", "resume", "cli-b")
	require.Zero(t, code)
	require.False(t, s.status("cli-b").Paused)

	// Status as JSON for scripts.
	code, out, _ = s.runCLI("platform", "status", "-o", "json")
	require.Zero(t, code)
	var rows []struct {
		Platform string            `json:"platform"`
		Running  bool              `json:"running"`
		Cursor   *api.CursorStatus `json:"cursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	require.Len(t, rows, 2)
	require.True(t, rows[0].Running)
	code, out, _ = s.runCLI("platform", "status")
	require.Zero(t, code)
	require.Contains(t, out, "BACKFILL")

	// Reprocess exactly a range, from a point of cli-a's slice grid.
	from := slicequeue.GridOf("cli-a", 10*time.Second).Floor(time.Now().Add(-90 * time.Second))
	to := from.Add(25 * time.Second)
	code, out, errOut = s.runCLI("slices", "reprocess", "--platform", "cli-a", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	require.Zero(t, code, errOut)
	require.Contains(t, out, "queued 3 slice(s)", "10s slices: 10+10+5")

	// Errors are one line with exit code 2, and change nothing.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"slices", "reprocess", "--platform", "nope", "--from", "-2m", "--to", "-1m"}, `unknown platform "nope"`},
		{[]string{"slices", "reprocess", "--platform", "cli-a", "--from", "last tuesday", "--to", "-1m"}, `--from "last tuesday"`},
		{[]string{"slices", "reprocess", "--platform", "cli-a", "--from", "-1m", "--to", "-2m"}, "is not before --to"},
		{[]string{"dlq", "retry", "--platform", "cli-a", "--slice", "slice/cli-a/nope"}, "is not in the dead-letter workflow"},
	} {
		code, _, errOut = s.runCLI(tc.args...)
		require.Equal(t, cli.ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	}

	code, out, _ = s.runCLI("dlq", "list", "--platform", "cli-a", "-o", "json")
	require.Zero(t, code)
	require.JSONEq(t, "[]", out)

	// Verify after the cursors caught up: nothing missing or stale.
	s.waitWatermark("cli-a", time.Now().Add(-15*time.Second), 2*time.Minute)
	code, out, errOut = s.runCLI("verify", "--platform", "cli-a", "--sim-admin-token", adminToken)
	require.Zero(t, code, out+errOut)
	require.Regexp(t, `\d+ orders updated before .* checked: 0 missing, 0 stale`, out)

	// apply: the file's platforms, whose cursors run, are registered; then
	// a changed setting reaches the registry and the running cursor.
	code, out, errOut = s.runCLI("platform", "apply")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "cli-a: started; its cursor was running: it gets these settings")
	changed := strings.Replace(cliPlatforms, "page_size: 50", "page_size: 40", 1)
	s.platformsPath = writeTemp(t, strings.ReplaceAll(changed, "{{SIM}}", s.simSrv.URL))
	code, out, errOut = s.runCLI("platform", "apply", "--dry-run")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "cli-a: would be updated (page_size)")
	code, out, errOut = s.runCLI("platform", "apply")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "cli-a: updated (page_size)")
	eventually(t, 15*time.Second, "the cursor to take page_size 40", func() bool {
		return s.status("cli-a").Settings.PageSize == 40
	})
	code, out, _ = s.runCLI("platform", "apply")
	require.Zero(t, code)
	require.Contains(t, out, "cli-a: unchanged")

	// Read-only commands work from the server alone: in a directory with no
	// platforms file and none named, status shows every running cursor,
	// dlq list every dead-letter workflow, verify takes the settings from
	// the cursor, start finds the platform in the registry; a command that
	// needs the file says how to give one.
	t.Chdir(t.TempDir())
	for k, v := range s.cliEnv() {
		t.Setenv(k, v) // as runCLI had them, but for the file
	}
	t.Setenv("ORDERSYNC_PLATFORMS_FILE", "")
	os.Unsetenv("ORDERSYNC_PLATFORMS_FILE")
	noFile := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		app := &cli.App{Out: &out, Err: &errOut}
		code := cli.Execute(cli.NewRootCommand(app), append(args, "--address", s.srv.FrontendAddress()), &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut = noFile("platform", "status", "-o", "json")
	require.Zero(t, code, errOut)
	var fleet []struct {
		Platform string `json:"platform"`
		Running  bool   `json:"running"`
		State    string `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &fleet), out)
	require.Len(t, fleet, 2, out)
	require.Equal(t, "cli-a", fleet[0].Platform)
	require.True(t, fleet[0].Running)
	require.NotEmpty(t, fleet[0].State)
	code, out, errOut = noFile("dlq", "list", "-o", "json")
	require.Zero(t, code, errOut)
	require.JSONEq(t, "[]", out)
	code, out, errOut = noFile("verify", "--platform", "cli-a", "--sim-admin-token", adminToken)
	require.Zero(t, code, out+errOut)
	require.Contains(t, out, "0 missing, 0 stale")
	code, out, errOut = noFile("platform", "start", "cli-a")
	require.Zero(t, code, "a registered platform needs no file: %s", errOut)
	require.Contains(t, out, "already running")
	code, _, errOut = noFile("platform", "apply")
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, errOut, "platforms file platforms.yaml not found: give one with -f FILE or ORDERSYNC_PLATFORMS_FILE=FILE")

	// An unreachable server is exit 1 and names the address tried.
	t.Setenv("ORDERSYNC_TEMPORAL_ADDRESS", "127.0.0.1:1")
	var errBuf bytes.Buffer
	app := &cli.App{Out: &bytes.Buffer{}, Err: &errBuf}
	code = cli.Execute(cli.NewRootCommand(app), []string{"platform", "list", "-f", s.platformsPath}, &errBuf)
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errBuf.String(), "cannot reach Temporal at 127.0.0.1:1")
}
