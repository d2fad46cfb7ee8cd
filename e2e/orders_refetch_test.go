package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// ordersRefetchPlatforms: a small account at 1 request/s (its platform
// allows 2) and a big one backfilling 30 days with 64 slices at once at 5
// requests/s, on one task queue; a webhook destination takes the small
// account's changes. The queue's activity dispatch rate is the sum of its
// accounts' rates (6/s, package worker), so the big backfill's pages queue
// up on the server: the backlog a refetch must pass.
const ordersRefetchPlatforms = `
default:
  kind: sim
  interval: 10s
  overlap: 3s
  settle: 1s
  timeout: 5s
  retries: 5
  retry_interval: 200ms
  task_queue: orders-shared
platforms:
  e2e-small:
    endpoint: "{{SIM}}/shops/small"
    credentials: {env: ORDERSYNC_E2E_SMALL_TOKEN}
    start: -2m
    concurrency: 2
    rate_limit: {rps: 1, burst: 1}
  e2e-big:
    endpoint: "{{SIM2}}/shops/big"
    credentials: {env: ORDERSYNC_E2E_BIG_TOKEN}
    start: -720h
    interval: 1h
    concurrency: 64
    page_size: 10
    max_pages: 3
    rate_limit: {rps: 5, burst: 1}
destinations:
  e2e-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    platforms: [e2e-small]
    batch_size: 50
    timeout: 2s
    retry_interval: 100ms
`

// TestOrdersRefetchAheadOfBackfill: `orders refetch` of an order the
// store lacks stores the platform's newest version within 5 s while
// another account's backfill keeps a backlog of page tasks on the shared
// task queue;
// the small account's platform never sees more requests than its rate
// (no 429, at most 2 in any second, as 1/s with a burst of 1 allows);
// `orders get` then shows the version delivered to the webhook; and two
// requests for one order at once are one refetch, one platform call.
func TestOrdersRefetchAheadOfBackfill(t *testing.T) {
	parallel(t, timed)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	// The big account's platform: its own simulator, no rate limit, a
	// month of orders to backfill.
	bigCfg := sim.DefaultConfig()
	bigCfg.Seed = 27
	bigCfg.Shops = []sim.ShopConfig{{Name: "big", Token: "big-token"}}
	bigCfg.History = 30 * 24 * time.Hour
	bigCfg.HistoryOrders = 20000
	bigCfg.LiveRate = 0
	bigCfg.Late = 0
	bigCfg.RateLimit = sim.RateLimit{}
	bigSim, err := sim.New(bigCfg)
	require.NoError(t, err)
	bigSrv, err := bigSim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = bigSrv.Close() })
	setenv(t, "ORDERSYNC_E2E_BIG_TOKEN", "big-token")

	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	setenv(t, "ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	// The small account's platform: 2 requests/s, new orders every second.
	cfg := sim.DefaultConfig()
	cfg.Seed = 28
	cfg.Shops = []sim.ShopConfig{{Name: "small", Token: "small-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 30
	cfg.LiveRate = 1
	cfg.MaxUpdates = 2
	cfg.UpdateSpread = 20 * time.Second
	cfg.Late = 0
	cfg.RateLimit = sim.RateLimit{RPS: 2, Burst: 2}
	yaml := strings.NewReplacer("{{SIM2}}", bigSrv.URL, "{{HOOK}}", hook.URL).Replace(ordersRefetchPlatforms)
	s := startSystem(t, cfg, yaml)
	code, _, stderr := s.runCLI("platform", "apply")
	require.Zero(t, code, stderr)

	// The small account catches up, then stops polling: what it lacks
	// from now on only a refetch brings.
	s.waitWatermark("e2e-small", time.Now().Add(-20*time.Second), 2*time.Minute)
	code, _, stderr = s.runCLI("platform", "pause", "e2e-small")
	require.Zero(t, code, stderr)
	time.Sleep(2 * time.Second) // the slice in flight, if any, ends

	big := s.status("e2e-big")
	require.NotEmpty(t, big.InFlight, "the big account is backfilling")
	require.True(t, big.Watermark.Before(time.Now().Add(-24*time.Hour)), "far from done: %s", big.Watermark)
	// The precondition: the big backfill's page tasks wait on the queue.
	backlogDeadline := time.Now().Add(time.Minute)
	for {
		if _, act := queueBacklog(t, s, "orders-shared"); act >= 10 {
			break
		}
		require.True(t, time.Now().Before(backlogDeadline), "the big backfill left no backlog of page tasks on orders-shared")
		time.Sleep(500 * time.Millisecond)
	}

	ctx := context.Background()
	id, want := newerOrder(t, s, "small", "e2e-small")
	before := s.sim.Stats().Shops["small"]
	wfBacklog, actBacklog := queueBacklog(t, s, "orders-shared")

	start := time.Now()
	code, out, stderr := s.runCLI("orders", "refetch", "e2e-small", id, "-o", "json")
	took := time.Since(start) - s.cliWaited // the wait for other tests' commands is not the refetch's
	require.Zero(t, code, "%s%s", out, stderr)
	var res struct {
		Orders []orderops.Refetch `json:"orders"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Len(t, res.Orders, 1)
	require.Contains(t, []string{api.RefetchCreated, api.RefetchUpdated}, res.Orders[0].Outcome, out)
	stored, ok, err := s.store.GetOrder(ctx, "e2e-small", id)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, stored.UpdatedAt.Before(want), "the newest version: stored %s, platform %s", stored.UpdatedAt, want)
	big = s.status("e2e-big")
	t.Logf("refetch of %s: %s in %s (waits %d) while e2e-big had %d slices in flight, %d queued, watermark %s; "+
		"orders-shared backlog when it started: %d workflow tasks, %d activity tasks",
		id, res.Orders[0].Outcome, took.Round(time.Millisecond), res.Orders[0].Waits, len(big.InFlight), len(big.Queued), big.Watermark.Format(time.RFC3339),
		wfBacklog, actBacklog)
	require.Less(t, took, 5*time.Second, "stored within 5 s")

	// The platform's rate was kept: no 429, and at most the burst plus
	// one request in any second.
	after := s.sim.Stats().Shops["small"]
	require.Zero(t, after.RateLimited, "the small account was never answered 429")
	require.LessOrEqual(t, after.PeakRequestsPerSecond, 2)
	require.Greater(t, after.Requests, before.Requests, "the refetch asked the platform")
	t.Logf("small account: %d requests in all (%d for the refetch), peak %d/s; big account: %d requests",
		after.Requests, after.Requests-before.Requests, after.PeakRequestsPerSecond, bigSim.Stats().Shops["big"].Requests)

	// Delivered: orders get shows it, once the webhook acknowledged it.
	changes, err := s.store.OrderChanges(ctx, "e2e-small", id)
	require.NoError(t, err)
	require.NotEmpty(t, changes)
	waitDelivered(t, s, "e2e-hook", changes[len(changes)-1].Seq, time.Minute)
	code, out, stderr = s.runCLI("orders", "get", "e2e-small", id, "-o", "json")
	require.Zero(t, code, stderr)
	var got orderops.Order
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.True(t, got.UpdatedAt.Equal(stored.UpdatedAt))
	require.NotNil(t, got.Canonical)
	require.NotEmpty(t, got.Versions)
	require.Len(t, got.Deliveries, 1)
	require.Equal(t, "e2e-hook", got.Deliveries[0].Destination)
	require.Equal(t, orderops.Delivered, got.Deliveries[0].State, out)

	// Two requests for one order at once: one refetch, one call to the
	// platform.
	reg, ok := store.RegistryOf(s.store)
	require.True(t, ok)
	svc := &orderops.Service{Store: s.store, Registry: reg, Temporal: s.client}
	id3, _ := newerOrder(t, s, "small", "e2e-small")
	before = s.sim.Stats().Shops["small"]
	var runs [2][]orderops.Refetch
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: "e2e-small", IDs: []string{id3}})
			assert.NoError(t, err)
			runs[i] = r
		}()
	}
	wg.Wait()
	require.Len(t, runs[0], 1)
	require.Len(t, runs[1], 1)
	require.Equal(t, runs[0][0].RunID, runs[1][0].RunID, "the second request joined the first")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	svc.Wait(wctx, runs[0])
	cancel()
	require.Contains(t, []string{api.RefetchCreated, api.RefetchUpdated}, runs[0][0].Outcome, runs[0][0].Error)
	require.Equal(t, before.Requests+1, s.sim.Stats().Shops["small"].Requests, "one call to the platform")

	// For comparison, logged, not asserted: the same at priority 5, below
	// the backfill's 3. Priority is strict, so it waits for the backlog.
	id2, _ := newerOrder(t, s, "small", "e2e-small")
	_, act := queueBacklog(t, s, "orders-shared")
	start = time.Now()
	code, out, _ = s.runCLI("orders", "refetch", "e2e-small", id2, "--priority", "5", "--timeout", "20s", "-o", "json")
	res.Orders = nil
	_ = json.Unmarshal([]byte(out), &res)
	outcome := "?"
	if len(res.Orders) == 1 {
		outcome = res.Orders[0].Outcome
	}
	t.Logf("for comparison: a refetch at priority 5, with %d activity tasks on orders-shared, ended %q (exit %d) after %s",
		act, outcome, code, time.Since(start).Round(time.Millisecond))
}

// newerOrder waits (up to 30 s) for an order the simulator's shop shows
// newer than the store holds it (or that the store lacks), and returns
// its id and the platform's updated_at.
func newerOrder(t *testing.T, s *system, shop, platform string) (string, time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		truth, err := s.sim.Truth(shop, s.sim.Now())
		require.NoError(t, err)
		for i := len(truth.Orders) - 1; i >= 0; i-- {
			o := truth.Orders[i]
			stored, ok, err := s.store.GetOrder(context.Background(), platform, o.ID)
			require.NoError(t, err)
			if !ok || stored.UpdatedAt.Before(o.UpdatedAt) {
				return o.ID, o.UpdatedAt
			}
		}
		require.True(t, time.Now().Before(deadline), "the simulator made no new version in 30s")
		time.Sleep(200 * time.Millisecond)
	}
}

// queueBacklog is the server's approximate backlog of workflow and
// activity tasks on a task queue: how many tasks wait for a worker.
func queueBacklog(t *testing.T, s *system, queue string) (workflow, activity int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n := func(typ enumspb.TaskQueueType) int64 {
		resp, err := s.client.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: s.stack.namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: typ, ReportStats: true})
		require.NoError(t, err)
		return resp.GetStats().GetApproximateBacklogCount()
	}
	return n(enumspb.TASK_QUEUE_TYPE_WORKFLOW), n(enumspb.TASK_QUEUE_TYPE_ACTIVITY)
}
