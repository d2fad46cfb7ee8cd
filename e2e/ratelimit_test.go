package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
)

// Rate-limit demonstration settings; docs/ratelimit.md reports a run.
const (
	rlLimit    = 5.0 // the platform's limit, requests/s, in the simulator and in the platform settings
	rlWorkers  = 3   // worker processes sharing it
	rlWarmup   = 5 * time.Second
	rlMeasured = 60 * time.Second
)

// The platform runs far behind: 30 days of history at 10 orders a page is
// about 2,000 pages, far more than a minute at the limit can fetch, so the
// quota is the only thing that holds it back.
const rlPlatforms = `
default:
  kind: sim
  start: -720h
  interval: 6h
  overlap: 1m
  settle: 5s
  timeout: 10s
  retries: 10
  retry_interval: 1s
  retry_backoff: 2
  max_retry_interval: 10s
  concurrency: 8
  page_size: 10
  max_pages: 100
platforms:
  rl-shop:
    endpoint: "{{SIM}}/shops/busy"
    credentials: {env: ORDERSYNC_E2E_BUSY_TOKEN}
    rate_limit: {rps: %v, burst: 1}
`

// TestRateLimitHeldAcrossWorkerProcesses runs three `ordersync worker`
// processes on one platform that is far behind, against a simulator whose
// per-shop token bucket allows rlLimit requests/s, and checks from the
// simulator's side that together they keep to the limit (its highest
// one-second count of requests), are almost never answered 429, and still
// use at least 90% of the quota.
func TestRateLimitHeldAcrossWorkerProcesses(t *testing.T) {
	parallel(t, timed)
	testRateLimit(t, embeddedStack)
}

// TestRateLimitHeldAcrossWorkerProcessesPostgres is the same on the
// production-shaped stack: the task queue has 4 partitions there, each
// polled apart, and the store (where the request slots are booked) is
// PostgreSQL.
func TestRateLimitHeldAcrossWorkerProcessesPostgres(t *testing.T) {
	parallel(t, timedPostgres)
	testRateLimit(t, postgresStack)
}

func testRateLimit(t *testing.T, st stack) {
	if testing.Short() {
		t.Skip("end-to-end: three worker processes for over a minute")
	}
	ordersyncBinary(t) // build before the clock starts
	srv := st.server(t)
	c := dialAt(t, srv.FrontendAddress(), st.namespace)

	cfg := sim.DefaultConfig()
	cfg.Seed = 11
	cfg.Shops = []sim.ShopConfig{{Name: "busy", Token: "busy-token"}}
	cfg.AdminToken = adminToken
	cfg.History = 30 * 24 * time.Hour
	cfg.HistoryOrders = 20000
	cfg.LiveRate = 0
	cfg.Late = 0
	cfg.RateLimit = sim.RateLimit{RPS: rlLimit, Burst: int(rlLimit)}
	s, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })

	yaml := strings.ReplaceAll(fmt.Sprintf(rlPlatforms, rlLimit), "{{SIM}}", simSrv.URL)
	file, err := config.Parse([]byte(yaml))
	require.NoError(t, err)
	platformsPath := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(platformsPath, []byte(yaml), 0o644))
	env := append(st.env(srv.FrontendAddress(), st.storeDSN(t), platformsPath), "ORDERSYNC_E2E_BUSY_TOKEN=busy-token")
	workers := make([]*workerProc, rlWorkers)
	for i := range workers {
		workers[i] = startWorkerProc(t, fmt.Sprintf("worker-%d", i+1), env, "--stop-timeout", "5s")
	}
	urls := make([]string, rlWorkers)
	for i, w := range workers {
		urls[i] = w.metricsURL(t) // every process is up and polling
	}

	_, err = starter.EnsureCursors(context.Background(), c, file.Platforms, time.Now())
	require.NoError(t, err)
	time.Sleep(rlWarmup)
	beforeStats := s.Stats()
	before, beforeAt := beforeStats.Shops["busy"], beforeStats.AsOf
	require.Positive(t, before.Pages, "no page fetched during the warm-up")
	time.Sleep(rlMeasured)
	stats := s.Stats()
	shop := stats.Shops["busy"]
	elapsed := stats.AsOf.Sub(beforeAt)
	achieved := float64(shop.Pages-before.Pages) / elapsed.Seconds()
	offered := float64(shop.Requests-before.Requests) / elapsed.Seconds()
	var workerPages, worker429 float64
	for _, u := range urls {
		body := scrapeMetrics(t, u)
		workerPages += max(0, metricValue(body, `ordersync_pages_total{platform="rl-shop"}`))
		worker429 += max(0, metricValue(body, `ordersync_rate_limited_total{platform="rl-shop"}`))
	}
	cur := statusOf(t, c, "rl-shop")
	report := fmt.Sprintf("%s stack: rate limit %.0f req/s, %d worker processes, measured %.1fs after a %s warm-up: "+
		"achieved %.2f pages/s (%.1f%% of the limit), offered %.2f req/s; peak %d req in one second; "+
		"whole run: %d requests, %d pages, %d answered 429 (%.2f%%); workers' metrics: %.0f pages, %.0f 429s; "+
		"watermark lag %.0fh, %d slices completed",
		st.name, rlLimit, rlWorkers, elapsed.Seconds(), rlWarmup, achieved, 100*achieved/rlLimit, offered,
		shop.PeakRequestsPerSecond, shop.Requests, shop.Pages, shop.RateLimited,
		100*float64(shop.RateLimited)/float64(max(1, shop.Requests)), workerPages, worker429,
		cur.LagSeconds/3600, cur.Counts.SlicesCompleted)
	t.Log(report)
	if out := os.Getenv("ORDERSYNC_RATELIMIT_REPORT"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(report+"\n"), 0o644))
	}

	// The slots are spaced 5% wider than 1/rps, which absorbs 50 ms of
	// jitter; on a loaded 2-core CI box one request now and then arrives
	// later than that, so one request over the limit in a one-second window
	// is tolerated here. The figures measured on a quiet machine (peak = the
	// limit) are in docs/ratelimit.md; the 429 bound below is what the
	// platform itself would punish.
	require.LessOrEqual(t, shop.PeakRequestsPerSecond, int(rlLimit)+1, "highest one-second request count above the limit")
	require.LessOrEqual(t, float64(shop.RateLimited), 0.02*float64(shop.Requests), "too many 429s")
	require.GreaterOrEqual(t, achieved, 0.9*rlLimit, "quota not used: the platform is far behind")
	require.InDelta(t, float64(shop.Pages), workerPages, float64(rlWorkers)*3, "workers' page counters disagree with the simulator")
}
