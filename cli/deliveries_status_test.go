package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// TestDeliveriesStatusPendingIsNormal: changes pending while orders flow
// exit 0 (they exited 1: "12 pending"); a destination that needs someone
// (not running, set-aside changes, breaker open, changes overdue) exits 1,
// and --drained keeps the "all delivered" wait for scripts.
func TestDeliveriesStatusPendingIsNormal(t *testing.T) {
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	file := writePlatforms(t, verifyDestinationPlatforms)
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	_, err = st.UpsertOrders(ctx, []connectors.Order{orderVersion("a", "1", 1), orderVersion("a", "2", 1)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	status := func(mut func(*api.DeliveryStatus)) *deliveryClient {
		s := &api.DeliveryStatus{Destination: "only-a", Kind: "webhook"}
		if mut != nil {
			mut(s)
		}
		return &deliveryClient{status: s}
	}
	for _, tc := range []struct {
		name   string
		c      *deliveryClient
		args   []string
		code   int
		stderr string
	}{
		{"two pending, just committed", status(nil), nil, 0, ""},
		{"drained waits for them", status(nil), []string{"--drained"}, ExitFailure, "only-a: 2 change(s) pending (--drained)"},
		{"overdue is stuck", status(nil), []string{"--stuck-after", "1ns"}, ExitFailure, "only-a: 2 pending change(s) committed more than 1ns ago"},
		{"paused on purpose is not stuck", status(func(s *api.DeliveryStatus) { s.State.Paused = true; s.Waiting = "paused" }),
			[]string{"--stuck-after", "1ns"}, 0, ""},
		{"breaker open", status(func(s *api.DeliveryStatus) { s.State.BreakerOpen = true; s.State.LastError = "HTTP 503" }),
			nil, ExitFailure, "only-a: its breaker is open: the destination keeps failing: HTTP 503"},
		{"set aside", status(func(s *api.DeliveryStatus) { s.State.Poison = []api.PoisonChange{{Seq: 1}} }),
			nil, ExitFailure, "only-a: 1 change(s) set aside"},
		{"not running", &deliveryClient{}, nil, ExitFailure, "only-a: its Delivery workflow is not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCommand(t, tc.c, append([]string{"deliveries", "status", "only-a", "-f", file}, tc.args...)...)
			require.Equal(t, tc.code, code, "%s%s", out, stderr)
			require.Regexp(t, `(?m)^only-a\s+\S.*\s2\s+\d+\s*`, out, "the table is printed either way")
			if tc.stderr != "" {
				require.Contains(t, stderr, tc.stderr)
			}
		})
	}
}
