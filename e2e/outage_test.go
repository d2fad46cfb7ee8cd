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

// Three attempts a page, a second or so in all: an outage of 12s outlasts
// them many times over. The breaker is off so the cursor keeps going and
// the watermark moves past the failed slices (with it on, the cursor would
// pause itself instead; see TestRecordHistories).
const outagePlatforms = `
default:
  kind: sim
  start: -1m
  interval: 5s
  overlap: 1s
  settle: 500ms
  timeout: 2s
  retries: 2
  retry_interval: 100ms
  retry_backoff: 2
  max_retry_interval: 500ms
  concurrency: 2
  rate_limit: {rps: 200, burst: 50}
  page_size: 50
  breaker_failures: 0
platforms:
  down-shop:
    endpoint: "{{SIM}}/shops/down"
    credentials: {env: ORDERSYNC_E2E_DOWN_TOKEN}
`

// TestPlatformDownLongerThanRetries: while the platform answers only 503,
// slices exhaust their retries and land in the dead-letter workflow, visible
// in `dlq list`; the watermark moves on; verify reports the orders of those
// windows missing. Once the platform is back, `dlq retry --all` fetches
// them and verify finds nothing missing.
func TestPlatformDownLongerThanRetries(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 31
	cfg.Shops = []sim.ShopConfig{{Name: "down", Token: "down-token"}}
	cfg.History = time.Minute
	cfg.HistoryOrders = 100
	cfg.LiveRate = 3
	cfg.MaxUpdates = 1
	cfg.UpdateSpread = 5 * time.Second
	cfg.Late = 500 * time.Millisecond
	cfg.RateLimit = sim.RateLimit{}
	s := startSystem(t, cfg, outagePlatforms)
	s.startCursors()
	const p = "down-shop"
	s.waitWatermark(p, time.Now().Add(-5*time.Second), time.Minute)

	require.NoError(t, s.sim.SetFaults(sim.Faults{Err5xx: 1}))
	outageStart := time.Now()
	time.Sleep(12 * time.Second)
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	outageEnd := time.Now()
	quiet := s.sim.StopCreating()
	st := s.waitWatermark(p, quiet.Add(2*time.Second), time.Minute)
	require.True(t, st.Watermark.After(outageEnd), "the watermark moves past dead-lettered slices")
	require.Positive(t, st.Counts.SlicesFailed)

	code, out, errOut := s.runCLI("dlq", "list", "--platform", p, "-o", "json")
	require.Zero(t, code, errOut)
	var entries []api.DeadLetterEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	require.NotEmpty(t, entries, "the failed slices are visible")
	for _, e := range entries {
		require.Contains(t, e.Error, "503", "the entry says why: %+v", e)
		require.Equal(t, 3, e.Attempts, "retries: 2 means three attempts")
		require.True(t, e.End.After(outageStart.Add(-15*time.Second)) && e.Start.Before(outageEnd), "entry %s lies in the outage", e.SliceID)
	}

	verifyNow := func() (int, verify.Report) {
		code, out, errOut := s.runCLI("verify", "--platform", p, "--sim-admin-token", adminToken, "-o", "json")
		var res struct {
			Report verify.Report `json:"report"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), "%s %s", out, errOut)
		return code, res.Report
	}
	code, before := verifyNow()
	require.Equal(t, 1, code, "verify reports the dead-lettered windows' orders as missing")
	require.NotZero(t, len(before.Missing)+len(before.Stale))

	code, _, errOut = s.runCLI("dlq", "retry", "--platform", p, "--all")
	require.Zero(t, code, errOut)
	eventually(t, time.Minute, "the dead-letter workflow to empty", func() bool {
		code, out, _ := s.runCLI("dlq", "list", "--platform", p, "-o", "json")
		var left []api.DeadLetterEntry
		return code == 0 && json.Unmarshal([]byte(out), &left) == nil && len(left) == 0
	})
	code, after := verifyNow()
	require.Zero(t, code, "after the retry nothing is missing: %+v", after)
	require.Equal(t, before.Checked, after.Checked)
	t.Logf("outage of %s: %d slices dead-lettered (3 attempts each), verify before retry: %d missing, %d stale of %d; after `dlq retry --all`: 0 missing, 0 stale",
		outageEnd.Sub(outageStart).Round(time.Second), len(entries), len(before.Missing), len(before.Stale), before.Checked)
}
