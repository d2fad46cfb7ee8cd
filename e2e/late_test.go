package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
)

// Two platforms read the same shop, whose orders become visible up to 8s
// after their update time, far more than the 1s overlap: late-plain has no
// re-sweep, late-resweep fetches every closed window again 10s after it
// closed (longer than the lateness).
const latePlatforms = `
default:
  kind: sim
  start: -1m
  interval: 4s
  overlap: 1s
  settle: 500ms
  timeout: 3s
  retries: 5
  retry_interval: 200ms
  retry_backoff: 1.5
  max_retry_interval: 1s
  concurrency: 4
  rate_limit: {rps: 200, burst: 50}
  page_size: 50
  max_pages: 20
platforms:
  late-plain:
    endpoint: "{{SIM}}/shops/late"
    credentials: {env: ORDERSYNC_E2E_LATE_TOKEN}
  late-resweep:
    endpoint: "{{SIM}}/shops/late"
    credentials: {env: ORDERSYNC_E2E_LATE_TOKEN}
    resweep_delay: 10s
`

const lateBy = 8 * time.Second

// TestLateArrivalsBeyondTheOverlap shows that lateness beyond the overlap
// loses orders, that `ordersync verify` detects the loss, and that the
// trailing re-sweep closes the gap and reports what it caught as late
// arrivals in `platform status`.
func TestLateArrivalsBeyondTheOverlap(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 23
	cfg.Shops = []sim.ShopConfig{{Name: "late", Token: "late-token"}}
	cfg.History = time.Minute
	cfg.HistoryOrders = 100
	cfg.LiveRate = 3
	cfg.MaxUpdates = 3
	cfg.UpdateSpread = 15 * time.Second
	cfg.Late = lateBy
	cfg.RateLimit = sim.RateLimit{} // two platforms share the shop; no 429s here
	s := startSystem(t, cfg, latePlatforms)
	s.startCursors()

	time.Sleep(40 * time.Second) // follow the present with late orders
	quiet := s.sim.StopCreating()
	// Check every order updated before the cutoff. Past it, the world no
	// longer changes, so what each platform lacks now it will never fetch.
	cutoff := quiet.Add(time.Second).Truncate(time.Second).Add(time.Second)
	for _, p := range []string{"late-plain", "late-resweep"} {
		s.waitWatermark(p, cutoff, 2*time.Minute)
	}
	eventually(t, time.Minute, "the re-sweeps of every window before the cutoff", func() bool {
		st := s.status("late-resweep")
		for _, r := range append(st.InFlight, st.Queued...) {
			if r.Resweep && r.Start.Before(cutoff) {
				return false
			}
		}
		return true
	})

	verifyAt := func(platform string) (int, verify.Report) {
		code, out, errOut := s.runCLI("verify", "--platform", platform, "--until", cutoff.Format(time.RFC3339),
			"--sim-admin-token", adminToken, "-o", "json")
		var res struct {
			Report verify.Report `json:"report"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), "%s %s", out, errOut)
		return code, res.Report
	}
	code, plain := verifyAt("late-plain")
	require.Equal(t, 1, code, "verify must fail when orders are lost")
	require.NotZero(t, len(plain.Missing)+len(plain.Stale), "lateness beyond the overlap must lose orders")
	code, swept := verifyAt("late-resweep")
	require.Zero(t, code, "the re-sweep must leave nothing missing: %+v", swept)
	require.Empty(t, swept.Missing)
	require.Empty(t, swept.Stale)
	require.Equal(t, plain.Checked, swept.Checked, "both read the same shop")

	code, out, errOut := s.runCLI("platform", "status", "late-plain", "late-resweep", "-o", "json")
	require.Zero(t, code, errOut)
	var rows []platformStatusRow
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 2)
	byName := map[string]platformStatusRow{rows[0].Platform: rows[0], rows[1].Platform: rows[1]}
	plainCounts, sweptCounts := byName["late-plain"].Cursor.Counts, byName["late-resweep"].Cursor.Counts
	require.Zero(t, plainCounts.Resweeps)
	require.Zero(t, plainCounts.LateArrivals)
	require.Positive(t, sweptCounts.Resweeps)
	require.Positive(t, sweptCounts.LateArrivals, "status must show the late arrivals the re-sweep caught")
	t.Logf("lateness %s, overlap 1s, %d orders checked up to %s", lateBy, plain.Checked, cutoff.Format(time.RFC3339))
	t.Logf("late-plain   (no re-sweep):      verify exit 1: %d missing, %d stale; late_arrivals %d",
		len(plain.Missing), len(plain.Stale), plainCounts.LateArrivals)
	t.Logf("late-resweep (resweep_delay 10s): verify exit 0: %d missing, %d stale; %d re-sweeps, late_arrivals %d",
		len(swept.Missing), len(swept.Stale), sweptCounts.Resweeps, sweptCounts.LateArrivals)
}

// platformStatusRow is one row of `ordersync platform status -o json`.
type platformStatusRow struct {
	Platform    string           `json:"platform"`
	Running     bool             `json:"running"`
	Cursor      api.CursorStatus `json:"cursor"`
	DeadLetters int              `json:"dead_letters"`
}
