package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
)

// TestDeadLettersRetryThemselves: the outage of TestPlatformDownLongerThanRetries
// with the shortest automatic retry schedule (1m) and no operator: the
// dead-lettered windows are run again by the dead-letter workflow on the
// real server, the workflow empties, and verify finds nothing missing.
func TestDeadLettersRetryThemselves(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 37
	cfg.Shops = []sim.ShopConfig{{Name: "down", Token: "down-token"}}
	cfg.History = time.Minute
	cfg.HistoryOrders = 100
	cfg.LiveRate = 3
	cfg.MaxUpdates = 1
	cfg.UpdateSpread = 5 * time.Second
	cfg.Late = 500 * time.Millisecond
	cfg.RateLimit = sim.RateLimit{}
	s := startSystem(t, cfg, strings.Replace(outagePlatforms, "  breaker_failures: 0\n",
		"  breaker_failures: 0\n  dead_letter_retry: {schedule: [1m]}\n", 1))
	s.startCursors()
	const p = "down-shop"
	s.waitWatermark(p, time.Now().Add(-5*time.Second), time.Minute)

	require.NoError(t, s.sim.SetFaults(sim.Faults{Err5xx: 1}))
	outageStart := time.Now()
	time.Sleep(12 * time.Second)
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	quiet := s.sim.StopCreating()
	s.waitWatermark(p, quiet.Add(2*time.Second), time.Minute)

	code, out, errOut := s.runCLI("dlq", "list", "--platform", p, "-o", "json")
	require.Zero(t, code, errOut)
	var entries []api.DeadLetterEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	require.NotEmpty(t, entries, "the outage dead-lettered slices")
	for _, e := range entries {
		require.Equal(t, "TransientError", e.ErrorType, "%+v", e)
		if !e.Reprocessing {
			require.False(t, e.NextRetryAt.IsZero(), "scheduled: %+v", e)
			require.WithinDuration(t, e.LastFailedAt.Add(time.Minute), e.NextRetryAt, 5*time.Second, "%+v", e)
		}
	}
	code, table, errOut := s.runCLI("dlq", "list", "--platform", p)
	require.Zero(t, code, errOut)
	require.Contains(t, table, "NEXT RETRY")

	eventually(t, 3*time.Minute, "the dead-letter workflow to empty on its own", func() bool {
		code, out, _ := s.runCLI("dlq", "list", "--platform", p, "-o", "json")
		var left []api.DeadLetterEntry
		return code == 0 && json.Unmarshal([]byte(out), &left) == nil && len(left) == 0
	})
	emptied := time.Now()
	code, out, errOut = s.runCLI("verify", "--platform", p, "--sim-admin-token", adminToken, "-o", "json")
	var res struct {
		Report verify.Report `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), "%s %s", out, errOut)
	require.Zero(t, code, "nothing missing after the automatic retries: %+v", res.Report)
	t.Logf("outage of 12s: %d slices dead-lettered; the dead-letter workflow emptied itself %s after the outage began, no `dlq retry`; verify: 0 missing, 0 stale of %d",
		len(entries), emptied.Sub(outageStart).Round(time.Second), res.Report.Checked)
}
