package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// chromiumPath is Debian's chromium package; .ci/run installs it.
const chromiumPath = "/usr/bin/chromium"

// Two platforms: ui-wrongtoken's token is wrong, so its first slice fails
// with a 401, a permanent error, goes to the dead-letter workflow and ends
// FAILED; ui-paused works and an operator pauses it.
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
  ui-paused:
    endpoint: "{{SIM}}/shops/open"
    credentials: {env: ORDERSYNC_E2E_UI_TOKEN}
`

// TestWebUIShowsFailedSlicesAndPausedCursors checks what an operator sees,
// first through the API the Web UI reads, then in the Web UI itself in
// headless Chromium:
//   - a dead-lettered slice is FAILED, with a SliceDeadLettered failure
//     naming the cause, its summary (kind, window) and its outcome in its
//     current details; `Platform = "ui-wrongtoken" AND SliceState =
//     "failed"` lists it, and its page says Failed;
//   - a paused cursor has PlatformState "paused", which `PlatformState =
//     "paused"` filters by, and its page shows its current details (state,
//     watermark, why it waits).
//
// ORDERSYNC_WEBUI_SCREENSHOTS=<dir> saves webui-failed-slice.png and
// webui-paused-cursor.png there (docs/ holds the ones the README shows).
func TestWebUIShowsFailedSlicesAndPausedCursors(t *testing.T) {
	parallel(t, heavy)
	if testing.Short() {
		t.Skip("end-to-end: embedded server with the Web UI and a browser")
	}
	chromiumAvailable(t)
	srv, err := devserver.Start(devserver.Options{
		FrontendPort: -1, UIPort: -1,
		LogFile: filepath.Join(t.TempDir(), "temporal.log"),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	require.NotEmpty(t, srv.UIAddress())
	c := dial(t, srv)
	ctx := context.Background()

	cfg := sim.DefaultConfig()
	cfg.Shops = []sim.ShopConfig{{Name: "locked", Token: "the-real-token"}, {Name: "open", Token: "open-token"}}
	cfg.AdminToken = adminToken
	cfg.History, cfg.HistoryOrders = time.Hour, 20
	s, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })
	setenv(t, "ORDERSYNC_E2E_UI_WRONG_TOKEN", "not-the-token")
	setenv(t, "ORDERSYNC_E2E_UI_TOKEN", "open-token")

	file, err := config.Parse([]byte(strings.ReplaceAll(webUIPlatforms, "{{SIM}}", simSrv.URL)))
	require.NoError(t, err)
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ws, err := worker.Start(worker.Options{Client: c, Store: st, Platforms: file.Platforms, StopTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(ws.Stop)
	_, err = starter.EnsureCursors(ctx, c, file.Platforms, time.Now())
	require.NoError(t, err)

	// The failed slice, through the API: visibility says which slice.
	failedQuery := `Platform = "ui-wrongtoken" AND SliceState = "failed"`
	sliceID, sliceRun := firstListed(t, c, failedQuery)
	require.True(t, strings.HasPrefix(sliceID, "slice/ui-wrongtoken/"), sliceID)
	eventually(t, time.Minute, "the slice to close", func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, sliceID, sliceRun)
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	desc, err := c.DescribeWorkflowExecution(ctx, sliceID, sliceRun)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, desc.GetWorkflowExecutionInfo().GetStatus())
	var summary, details string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary))
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetExecutionConfig().GetUserMetadata().GetDetails(), &details))
	require.Regexp(t, `^regular slice \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ → `, summary)
	require.Contains(t, details, "**Platform** ui-wrongtoken")
	err = c.GetWorkflow(ctx, sliceID, sliceRun).Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "the slice's failure: %v", err)
	require.Equal(t, api.ErrSliceDeadLettered, app.Type())
	require.Contains(t, app.Message(), "401")
	var res api.SliceResult
	require.NoError(t, app.Details(&res))
	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Contains(t, currentDetailsOf(t, c, sliceID, sliceRun), "**failed** after 0 page(s)")
	// The cursor learnt the outcome: the failure counts, the watermark passed it.
	eventually(t, time.Minute, "the cursor to count the failed slice", func() bool {
		return cursorStatus(t, c, "ui-wrongtoken").Counts.SlicesFailed >= 1
	})

	// The paused cursor, through the API.
	cursorID := api.CursorWorkflowID("ui-paused")
	require.NoError(t, c.SignalWorkflow(ctx, cursorID, "", api.SignalPause, api.PauseRequest{Reason: "maintenance"}))
	pausedQuery := `PlatformState = "paused"`
	id, _ := firstListed(t, c, pausedQuery)
	require.Equal(t, cursorID, id, "only the paused cursor has PlatformState paused")
	cdesc, err := c.DescribeWorkflowExecution(ctx, cursorID, "")
	require.NoError(t, err)
	var state string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
		cdesc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[searchattr.PlatformState.GetName()], &state))
	require.Equal(t, searchattr.PlatformPaused, state)
	cursorDetails := currentDetailsOf(t, c, cursorID, "")
	require.Contains(t, cursorDetails, "**paused** · waiting: paused: maintenance")
	require.Contains(t, cursorDetails, "**Watermark** ")

	// The same in the Web UI.
	shots := os.Getenv("ORDERSYNC_WEBUI_SCREENSHOTS")
	b := startBrowser(t, 1280, 760)
	ns := srv.Namespace()
	text := b.open(fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", srv.UIAddress(), ns, url.QueryEscape(failedQuery)), sliceID)
	require.NotContains(t, text, "cursor/ui-wrongtoken", "the filter filters: the running cursor is not listed")
	b.open(fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", srv.UIAddress(), ns, url.PathEscape(sliceID), sliceRun),
		"FAILED", "slice dead-lettered after 1 attempt(s)", "401")
	if shots != "" {
		b.screenshot(filepath.Join(shots, "webui-failed-slice.png"))
	}
	text = b.open(fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", srv.UIAddress(), ns, url.QueryEscape(pausedQuery)), cursorID)
	require.NotContains(t, text, "cursor/ui-wrongtoken")
	// The workflow's User Metadata tab shows its current details.
	b.open(fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/user-metadata", srv.UIAddress(), ns, url.PathEscape(cursorID), cdesc.GetWorkflowExecutionInfo().GetExecution().GetRunId()),
		"RUNNING", "paused · waiting: paused: maintenance", "Watermark")
	if shots != "" {
		b.screenshot(filepath.Join(shots, "webui-paused-cursor.png"))
	}
}

// firstListed waits until query lists a workflow and returns its IDs: the
// Web UI can only show what visibility has indexed.
func firstListed(t *testing.T, c client.Client, query string) (string, string) {
	t.Helper()
	var id, run string
	eventually(t, time.Minute, "a workflow matching "+query, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil || len(resp.GetExecutions()) == 0 {
			return false
		}
		id, run = resp.GetExecutions()[0].GetExecution().GetWorkflowId(), resp.GetExecutions()[0].GetExecution().GetRunId()
		return true
	})
	return id, run
}

// currentDetailsOf reads a workflow's current details as the Web UI does:
// by the SDK's built-in metadata query.
func currentDetailsOf(t *testing.T, c client.Client, id, run string) string {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), id, run, "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}

func cursorStatus(t *testing.T, c client.Client, platform string) api.CursorStatus {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), api.CursorWorkflowID(platform), "", api.QueryStatus)
	require.NoError(t, err)
	var st api.CursorStatus
	require.NoError(t, v.Get(&st))
	return st
}

// chromiumFlags are what headless Chromium needs on a machine without a
// network or a GPU, running as root.
func chromiumFlags(userDataDir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + userDataDir}
}
