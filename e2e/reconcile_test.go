package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// reconcilePlatforms: a Shopify shop on the simulator's GraphQL surface,
// polled in 10-second slices, reconciled in minute windows without a
// recheck, no re-sweep.
const reconcilePlatforms = `
platforms:
  e2e-rec:
    kind: shopify
    endpoint: "{{SIM}}/shops/rec"
    credentials: {env: ORDERSYNC_E2E_REC_TOKEN}
    start: -2m
    interval: 10s
    overlap: 3s
    settle: 1s
    timeout: 5s
    retries: 5
    retry_interval: 200ms
    rate_limit: {rps: 20, burst: 10}
    page_size: 20
    options: {restore_rate: 2000, max_cost_available: 20000, line_items_page_size: 2}
    task_queue: orders-e2e-rec
    reconcile_window: 1m
    reconcile_recheck: 0s
`

// TestReconcileFindsOrdersTheListHid: the simulator hides three new
// orders from its orders query for a while (as Shopify's search sometimes
// does) while ordersCount counts them. Polling passes their slices while
// they are hidden and misses them; the minute window's count
// reconciliation finds the difference, has the cursor reprocess exactly
// that window, counts again and reports it closed; `reconcile report`
// shows it, and the store then holds every order the platform shows.
func TestReconcileFindsOrdersTheListHid(t *testing.T) {
	parallel(t, timed)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	reconcileHiddenOrders(t)
}

// TestRecordHistoriesReconcile records the Reconcile workflow's replay
// history from the run above (reconcile_difference_closed.json: windows
// without a difference, and one whose difference a reprocess closed). Like
// TestRecordHistories it runs only under ORDERSYNC_RECORD_HISTORIES (make
// histories), into the same new release folder.
func TestRecordHistoriesReconcile(t *testing.T) {
	parallel(t, timed)
	write := releaseWriter(t)
	s := reconcileHiddenOrders(t)
	id := api.ReconcileWorkflowID("e2e-rec")
	desc, err := s.client.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	write("reconcile_difference_closed.json", exportHistory(t, s.client, id, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()))
}

// reconcileHiddenOrders runs TestReconcileFindsOrdersTheListHid's story
// and returns its system, its Reconcile workflow still running.
func reconcileHiddenOrders(t *testing.T) *system {
	cfg := sim.DefaultConfig()
	cfg.Seed = 41
	cfg.Shops = []sim.ShopConfig{{Name: "rec", Token: "rec-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 20
	cfg.LiveRate = 1
	cfg.MaxUpdates = 0
	cfg.Late = 0
	cfg.RateLimit = sim.RateLimit{}
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	s := startSystem(t, cfg, reconcilePlatforms)
	s.startCursors()
	const platform = "e2e-rec"
	ctx := context.Background()

	// Hide three orders early enough in a minute window that polling
	// passes them hidden (a slice is fetched within 14 s of its orders)
	// and they show again before the window is counted, just after its end.
	now := time.Now()
	end := now.Truncate(time.Minute).Add(time.Minute)
	if end.Sub(now) < 30*time.Second {
		time.Sleep(time.Until(end) + 500*time.Millisecond)
		now, end = time.Now(), end.Add(time.Minute)
	}
	window := [2]time.Time{end.Add(-time.Minute), end}
	require.NoError(t, s.sim.HideFromList("rec", 3, end.Sub(now)-10*time.Second))

	// Polling passed the hidden orders' slices: the store lacks them.
	hiddenBy := time.Now().Add(18 * time.Second)
	s.waitWatermark(platform, hiddenBy, time.Minute)
	require.True(t, time.Now().Before(end), "the window is still open")
	require.Equal(t, 3, missingIn(t, s, platform, window[0], hiddenBy), "polling missed the hidden orders")

	// Reconciliation: the window's difference, its reprocess, its recount.
	var res store.ReconcileResult
	deadline := time.Now().Add(75 * time.Second)
	for {
		rs, err := s.store.ReconcileResults(ctx, platform, 0)
		require.NoError(t, err)
		found := false
		for _, r := range rs {
			if r.From.Equal(window[0]) {
				res, found = r, true
			}
		}
		if found && res.Outcome != api.ReconcileReprocessing {
			break
		}
		if time.Now().After(deadline) {
			v, err := s.client.QueryWorkflow(ctx, api.ReconcileWorkflowID(platform), "", api.QueryReconcile)
			require.NoError(t, err)
			var rst api.ReconcileStatus
			require.NoError(t, v.Get(&rst))
			t.Fatalf("no reconcile result for %v within 75 s: %+v\nreconcile: %+v\ncursor: %+v", window, rs, rst, s.status(platform))
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.Equal(t, api.ReconcileClosed, res.Outcome, "%+v", res)
	require.Equal(t, res.StoreCount+3, res.PlatformCount, "the platform counted the three hidden orders")
	require.True(t, res.Reprocessed)
	require.Equal(t, res.PlatformCount, res.RecountStore, "the reprocess stored them")
	require.Equal(t, res.RecountPlatform, res.RecountStore)

	st := s.waitWatermark(platform, end, time.Minute)
	require.Zero(t, missingIn(t, s, platform, time.Time{}, st.Watermark), "0 missing up to the watermark")

	v, err := s.client.QueryWorkflow(ctx, api.ReconcileWorkflowID(platform), "", api.QueryReconcile)
	require.NoError(t, err)
	var rst api.ReconcileStatus
	require.NoError(t, v.Get(&rst))
	require.EqualValues(t, 1, rst.Counts.Differences, "%+v", rst)
	require.EqualValues(t, 1, rst.Counts.Closed)
	require.Zero(t, rst.Counts.Open)
	require.Equal(t, "1m0s", rst.Window)

	// What the reconciliation cost on the engine (docs/reconcile.md).
	events, timers, activities := 0, 0, 0
	iter := s.client.GetWorkflowHistory(ctx, api.ReconcileWorkflowID(platform), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		events++
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			timers++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			activities++
		}
	}
	t.Logf("reconcile history: %d events, %d timers, %d activities for %d checks (%d with a difference)",
		events, timers, activities, rst.Counts.Checks, rst.Counts.Differences)

	code, out, errOut := s.runCLI("reconcile", "report", "--platform", platform, "-o", "json")
	require.Zero(t, code, "%s%s", out, errOut)
	var rep struct {
		Results   []store.ReconcileResult `json:"results"`
		Platforms []struct {
			Name       string `json:"name"`
			Reconciled bool   `json:"reconciled"`
		} `json:"platforms"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotEmpty(t, rep.Results)
	shown := false
	for _, r := range rep.Results {
		shown = shown || (r.From.Equal(window[0]) && r.Outcome == api.ReconcileClosed)
	}
	require.True(t, shown, out)
	require.Len(t, rep.Platforms, 1)
	require.True(t, rep.Platforms[0].Reconciled)
	return s
}

// missingIn counts the orders the simulator shows with updated_at in
// [from, to) whose version the store lacks.
func missingIn(t *testing.T, s *system, platform string, from, to time.Time) int {
	t.Helper()
	truth, err := s.sim.Truth("rec", time.Time{})
	require.NoError(t, err)
	stored, err := s.store.OrderVersions(context.Background(), platform)
	require.NoError(t, err)
	missing := 0
	for _, o := range truth.Orders {
		if o.UpdatedAt.Before(from) || !o.UpdatedAt.Before(to) {
			continue
		}
		if got, ok := stored[o.ID]; !ok || !got.Equal(o.UpdatedAt.Truncate(time.Second)) {
			missing++
		}
	}
	return missing
}
