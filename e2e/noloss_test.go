package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/sim"
)

const noLossPlatforms = `
default:
  kind: sim
  start: -3m
  interval: 10s
  overlap: 5s
  settle: 2s
  timeout: 3s
  retries: 8
  retry_interval: 200ms
  retry_backoff: 1.5
  max_retry_interval: 2s
  concurrency: 4
  rate_limit: {rps: 200, burst: 50}
  page_size: 20
  max_pages: 5
platforms:
  e2e-alpha:
    endpoint: "{{SIM}}/shops/alpha"
    credentials: {env: ORDERSYNC_E2E_ALPHA_TOKEN}
  e2e-beta:
    endpoint: "{{SIM}}/shops/beta"
    credentials: {env: ORDERSYNC_E2E_BETA_TOKEN}
    task_queue: orders-shared
`

// TestNoLossEndToEnd runs the whole system against a live simulator with
// late visibility and some faults, lets it follow the present for a while,
// stops the simulator's changes and checks that the store holds the newest
// visible version of every order (invariants 1 and 2).
func TestNoLossEndToEnd(t *testing.T) {
	parallel(t, light)
	testNoLoss(t, embeddedStack)
}

// TestNoLossEndToEndPostgres is the same run on the production-shaped
// stack: Temporal on PostgreSQL with 4 task-queue partitions, a PostgreSQL
// store and three `ordersync worker` processes.
func TestNoLossEndToEndPostgres(t *testing.T) {
	parallel(t, heavyPostgres)
	testNoLoss(t, postgresStack)
}

func testNoLoss(t *testing.T, st stack) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 7
	cfg.Shops = []sim.ShopConfig{{Name: "alpha", Token: "alpha-token"}, {Name: "beta", Token: "beta-token"}}
	cfg.History = 3 * time.Minute
	cfg.HistoryOrders = 400
	cfg.LiveRate = 4
	cfg.MaxUpdates = 3
	cfg.UpdateSpread = 20 * time.Second
	cfg.Late = 3 * time.Second
	cfg.Faults = sim.Faults{Err5xx: 0.05, Malformed: 0.02, EmptyPageWithToken: 0.02}
	s := startSystemOn(t, st, cfg, noLossPlatforms)
	s.startCursors()

	// Catch up with the backlog, then follow the present for a while.
	s.waitWatermark("e2e-alpha", time.Now().Add(-15*time.Second), 3*time.Minute)
	time.Sleep(15 * time.Second)
	quiet := s.sim.StopCreating()
	// Once the watermark passes the moment after which nothing changes (plus
	// the overlap, which re-fetches backwards), everything visible is covered.
	for _, p := range []string{"e2e-alpha", "e2e-beta"} {
		cur := s.waitWatermark(p, quiet.Add(10*time.Second), 2*time.Minute)
		require.Zero(t, cur.Counts.SlicesFailed, "%s: no slice should fail with retries: %s", p, cur.LastError)
		require.Positive(t, cur.Counts.Pages)
	}
	for p, shop := range map[string]string{"e2e-alpha": "alpha", "e2e-beta": "beta"} {
		r := s.verify(p, shop)
		require.Greater(t, r.Checked, 400, "%s: the simulator made orders", p)
		require.Empty(t, r.Missing, "%s: missing orders", p)
		require.Empty(t, r.Stale, "%s: stale orders", p)
		require.Empty(t, r.Extra, "%s: extra orders", p)
		require.Empty(t, r.LinesDiffer, "%s: orders whose stored lines are not the platform's", p)
		t.Logf("%s: %d orders checked, 0 missing, 0 stale, 0 lines differ", p, r.Checked)
	}
	require.Equal(t, st.partitions, partitionsPolled(t, s.client, "orders-sim"), "task-queue partitions in use")
}
