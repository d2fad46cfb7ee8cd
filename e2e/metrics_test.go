package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// One platform that works (and is rate limited now and then) and one whose
// token is wrong, so every series has something to show.
const metricsPlatforms = `
default:
  kind: sim
  start: -30m
  interval: 5m
  overlap: 30s
  settle: 1s
  timeout: 5s
  retries: 5
  retry_interval: 200ms
  max_retry_interval: 1s
  concurrency: 2
  rate_limit: {rps: 100, burst: 10}
  page_size: 10
platforms:
  m-good:
    endpoint: "{{SIM}}/shops/good"
    credentials: {env: ORDERSYNC_E2E_GOOD_TOKEN}
  m-bad:
    endpoint: "{{SIM}}/shops/good"
    credentials: {env: ORDERSYNC_E2E_M_BAD_TOKEN}
    task_queue: orders-m-shared
`

// TestMetricsEndpointAfterRealWork runs a worker with metrics on a real
// listener, lets it backfill one platform and fail another, scrapes
// /metrics and checks the numbers against the simulator and the cursor.
func TestMetricsEndpointAfterRealWork(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := startServer(t, "")
	t.Cleanup(func() { _ = srv.Stop() })
	rec := metrics.New()
	handler, err := rec.TemporalHandler()
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(),
		Logger: quietLogger{}, MetricsHandler: handler})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	metricsSrv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = metricsSrv.Close() })

	cfg := sim.DefaultConfig()
	cfg.Seed = 5
	cfg.Shops = []sim.ShopConfig{{Name: "good", Token: "good-token"}}
	cfg.AdminToken = adminToken
	cfg.History, cfg.HistoryOrders = 30*time.Minute, 150
	cfg.LiveRate, cfg.Late = 0, 0
	// A tight limit makes the backfill meet some 429s.
	cfg.RateLimit = sim.RateLimit{RPS: 20, Burst: 2}
	s, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })
	setenv(t, "ORDERSYNC_E2E_GOOD_TOKEN", "good-token")
	setenv(t, "ORDERSYNC_E2E_M_BAD_TOKEN", "wrong-token")

	file, err := config.Parse([]byte(strings.ReplaceAll(metricsPlatforms, "{{SIM}}", simSrv.URL)))
	require.NoError(t, err)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ws, err := worker.Start(worker.Options{Client: c, Store: st, Platforms: file.Platforms,
		StopTimeout: 5 * time.Second, Metrics: rec, MetricsPollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(ws.Stop)
	_, err = starter.EnsureCursors(context.Background(), c, file.Platforms, time.Now())
	require.NoError(t, err)

	// Wait until the good platform caught up and the bad one dead-lettered
	// its backfill, as the poller sees it.
	var body string
	caughtUp := func() bool {
		body = scrapeMetrics(t, metricsSrv.URL())
		// Slices end on the platform's 5-minute grid, so a caught-up
		// cursor's watermark is up to one interval (plus settle) behind.
		lag := metricValue(body, `ordersync_watermark_lag_seconds{platform="m-good"}`)
		// The dead-letter workflow holds a failed slice before its cursor
		// hears the outcome: wait for both.
		return metricValue(body, `ordersync_caught_up{platform="m-good"}`) == 1 && lag > 0 && lag < 5*60+30 &&
			metricValue(body, `ordersync_dead_letters{platform="m-bad"}`) >= 3 &&
			metricValue(body, `ordersync_slices_total{outcome="failed",platform="m-bad"}`) >= 3
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !caughtUp() {
		require.True(t, time.Now().Before(deadline), "never caught up / dead-lettered; last scrape:\n%s", grepOrdersync(body))
		time.Sleep(250 * time.Millisecond)
	}
	// Read the simulator between two scrapes that agree, so no request
	// slipped in between (the cursor keeps following the present).
	var shop sim.ShopStats
	for {
		shop = s.Stats().Shops["good"]
		again := scrapeMetrics(t, metricsSrv.URL())
		if grepOrdersync(again) == grepOrdersync(body) {
			break
		}
		body = again
	}
	t.Logf("scrape:\n%s", grepOrdersync(body))
	good := statusOf(t, c, "m-good")
	// A counter that never moved has no series yet: count it as 0.
	v := func(series string) float64 { return max(0, metricValue(body, series)) }
	// Activity counters agree with the simulator, which saw every request.
	require.Equal(t, float64(shop.Pages), v(`ordersync_pages_total{platform="m-good"}`))
	require.Equal(t, float64(shop.RateLimited), v(`ordersync_rate_limited_total{platform="m-good"}`))
	require.Equal(t, float64(shop.RateLimited), v(`ordersync_api_errors_total{class="rate_limited",platform="m-good"}`))
	require.Equal(t, float64(shop.Unauthorized), v(`ordersync_api_errors_total{class="permanent",platform="m-bad"}`))
	upserted := v(`ordersync_orders_upserted_total{platform="m-good",result="inserted"}`) +
		v(`ordersync_orders_upserted_total{platform="m-good",result="updated"}`) +
		v(`ordersync_orders_upserted_total{platform="m-good",result="unchanged"}`)
	require.Equal(t, float64(shop.OrdersServed), upserted)
	require.Positive(t, v(`ordersync_orders_upserted_total{platform="m-good",result="inserted"}`))

	// Workflow-derived series agree with the cursor's status.
	// The 30-minute backfill probes with one 5-minute slice and then
	// takes the rest in one (the span grows to what the density allows,
	// density-backfill-span): at least two slices.
	require.GreaterOrEqual(t, v(`ordersync_slices_total{outcome="completed",platform="m-good"}`), 2.0)
	require.LessOrEqual(t, v(`ordersync_slices_total{outcome="completed",platform="m-good"}`), float64(good.Counts.SlicesCompleted))
	bad := statusOf(t, c, "m-bad")
	require.GreaterOrEqual(t, v(`ordersync_slices_total{outcome="failed",platform="m-bad"}`), 3.0)
	require.LessOrEqual(t, v(`ordersync_slices_total{outcome="failed",platform="m-bad"}`), float64(bad.Counts.SlicesFailed))
	require.Equal(t, map[bool]float64{false: 0, true: 1}[bad.BreakerOpen], v(`ordersync_breaker_open{platform="m-bad"}`))
	require.Equal(t, 0.0, v(`ordersync_slices_total{outcome="failed",platform="m-good"}`))
	require.Equal(t, 0.0, v(`ordersync_dead_letters{platform="m-good"}`))
	require.GreaterOrEqual(t, v(`ordersync_inflight_slices{platform="m-good"}`), 0.0)
	require.GreaterOrEqual(t, v(`ordersync_late_arrivals_total{platform="m-good"}`), 0.0)
	require.Equal(t, 1.0, metricValue(body, `ordersync_cursor_status_up{platform="m-good"}`))
	require.GreaterOrEqual(t, metricValue(body, `ordersync_inflight_slices{platform="m-good"}`), 0.0, "series missing")

	// The Temporal SDK's own metrics come through the same registry.
	require.Positive(t, sumPrefix(body, "temporal_request_total{"))
	require.Positive(t, sumPrefix(body, "temporal_activity_execution_latency_seconds_count{"))
	require.Positive(t, sumPrefix(body, "temporal_workflow_completed_total"))
}

// grepOrdersync keeps the ordersync_ series of a scrape, for the log.
func grepOrdersync(body string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "ordersync_") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// sumPrefix adds up every sample whose series starts with prefix.
func sumPrefix(body, prefix string) float64 {
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			series, _, _ := strings.Cut(line, " ")
			sum += max(0, metricValue(body, series))
		}
	}
	return sum
}
