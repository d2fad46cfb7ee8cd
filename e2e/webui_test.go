package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// chromiumPath is Debian's chromium package; .ci/run installs it.
const chromiumPath = "/usr/bin/chromium"

// A platform whose token is wrong: its first slice fails with a 401, a
// permanent error, goes to the dead-letter workflow and is marked failed.
const webUIPlatforms = `
default:
  kind: sim
  start: -20m
  interval: 10m
  overlap: 1m
  settle: 1s
  timeout: 5s
  retries: 1
  retry_interval: 200ms
  concurrency: 1
  rate_limit: {rps: 50, burst: 5}
  page_size: 50
platforms:
  ui-wrongtoken:
    endpoint: "{{SIM}}/shops/locked"
    credentials: {env: ORDERSYNC_E2E_UI_WRONG_TOKEN}
`

// TestWebUIFindsFailedSlicesOfAPlatform fails a slice, then opens the
// Temporal Web UI in headless Chromium on the workflow list filtered by
// `Platform = "ui-wrongtoken" AND SliceState = "failed"`, the query the
// README gives operators, and checks the failed slice is listed.
func TestWebUIFindsFailedSlicesOfAPlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: embedded server with the Web UI and a browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: .ci/run installs Debian's chromium package", chromiumPath)
		}
		t.Skipf("!!! SKIPPING the Web UI test: %s not found (apt-get install chromium); CI runs it", chromiumPath)
	}
	srv, err := devserver.Start(devserver.Options{
		FrontendPort: -1, UIPort: -1,
		LogFile: filepath.Join(t.TempDir(), "temporal.log"),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	require.NotEmpty(t, srv.UIAddress())
	c := dial(t, srv)

	cfg := sim.DefaultConfig()
	cfg.Shops = []sim.ShopConfig{{Name: "locked", Token: "the-real-token"}}
	cfg.AdminToken = adminToken
	cfg.History, cfg.HistoryOrders = time.Hour, 20
	s, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })
	t.Setenv("ORDERSYNC_E2E_UI_WRONG_TOKEN", "not-the-token")

	file, err := config.Parse([]byte(strings.ReplaceAll(webUIPlatforms, "{{SIM}}", simSrv.URL)))
	require.NoError(t, err)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ws, err := worker.Start(worker.Options{Client: c, Store: st, Platforms: file.Platforms, StopTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(ws.Stop)
	_, err = starter.EnsureCursors(context.Background(), c, file.Platforms, time.Now())
	require.NoError(t, err)

	// The same query through the API first: the UI can only show what
	// visibility has indexed, and this says which slice to look for.
	query := `Platform = "ui-wrongtoken" AND SliceState = "failed"`
	var sliceID string
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil || len(resp.GetExecutions()) == 0 {
			return false
		}
		sliceID = resp.GetExecutions()[0].GetExecution().GetWorkflowId()
		return true
	}, time.Minute, 250*time.Millisecond, "no failed slice of ui-wrongtoken became visible")
	require.True(t, strings.HasPrefix(sliceID, "slice/ui-wrongtoken/"), sliceID)

	page := fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", srv.UIAddress(), srv.Namespace(), url.QueryEscape(query))
	dom := renderPage(t, page, sliceID)
	require.Contains(t, dom, sliceID, "the filtered workflow list in the Web UI does not show the failed slice")
	// The filter really filtered: the cursor (running) is not listed.
	require.NotContains(t, dom, "cursor/ui-wrongtoken")

	if out := os.Getenv("ORDERSYNC_WEBUI_SCREENSHOT"); out != "" {
		screenshot(t, page, out)
	}
}

// chromiumFlags are what headless Chromium needs on a machine without a
// network or a GPU, running as root.
func chromiumFlags(userDataDir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + userDataDir}
}

// renderPage loads page in headless Chromium and returns the DOM after its
// scripts ran. The Web UI is a JavaScript app that fetches the list after
// loading, so one dump may come too early: it retries with a longer
// virtual-time budget until want appears or time runs out.
func renderPage(t *testing.T, page, want string) string {
	t.Helper()
	var dom string
	for _, budget := range []int{5000, 10000, 20000, 30000} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		args := append(chromiumFlags(t.TempDir()), fmt.Sprintf("--virtual-time-budget=%d", budget), "--dump-dom", page)
		out, err := exec.CommandContext(ctx, chromiumPath, args...).Output()
		cancel()
		require.NoError(t, err, "chromium --dump-dom %s", page)
		dom = string(out)
		if strings.Contains(dom, want) {
			return dom
		}
		t.Logf("Web UI: %q not in the DOM after a %d ms budget (%d bytes); trying longer", want, budget, len(dom))
	}
	return dom
}

// screenshot saves a PNG of page, for a person to look at.
func screenshot(t *testing.T, page, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(chromiumFlags(t.TempDir()), "--virtual-time-budget=20000", "--window-size=1400,800",
		"--screenshot="+out, page)
	if b, err := exec.CommandContext(ctx, chromiumPath, args...).CombinedOutput(); err != nil {
		t.Logf("screenshot failed: %v: %s", err, b)
	}
}
