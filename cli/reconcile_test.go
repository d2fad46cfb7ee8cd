package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/store"
)

// TestReconcileReportCommand: the report shows the store's checks newest
// first (one platform with --platform), says which platforms are
// reconciled and why not, escapes platform text, and exits 1 when a shown
// check is open.
func TestReconcileReportCommand(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	save := func(r store.ReconcileResult) { require.NoError(t, st.SaveReconcileResult(ctx, r)) }
	save(store.ReconcileResult{Platform: "shop-a", From: at, To: at.Add(24 * time.Hour), Check: api.ReconcileFirst, PlatformCount: 12,
		Precision: "exact", StoreCount: 9, Outcome: api.ReconcileClosed, Reprocessed: true, RecountPlatform: 12, RecountStore: 12, CheckedAt: at.Add(25 * time.Hour)})
	save(store.ReconcileResult{Platform: "woo-b", From: at, To: at.Add(24 * time.Hour), Check: api.ReconcileFirst, PlatformCount: 5,
		Precision: "exact", StoreCount: 5, Outcome: api.ReconcileMatch, CheckedAt: at.Add(26 * time.Hour)})
	require.NoError(t, st.Close())
	file := writePlatforms(t, `
default: {start: -24h}
platforms:
  shop-a:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
    reconcile_window: 1h
  amz-c:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {file: /dev/null}
    options: {marketplace_ids: [A1PA6795UKMFR9]}
  woo-b:
    kind: woocommerce
    endpoint: https://b.example.com
    credentials: {env: ORDERSYNC_TEST_B_TOKEN}
    reconcile: false
`)

	code, out, errOut := runCommand(t, nil, "reconcile", "report", "-f", file)
	require.Zero(t, code, errOut)
	require.Regexp(t, `woo-b .*match[\s\S]*shop-a .*12 / 12 +closed`, out, "newest first")
	require.Regexp(t, `amz-c +amazon +no: unsupported: amazon has no order count call`, out)
	require.Regexp(t, `shop-a +shopify +yes, windows of 1h0m0s, recheck 72h0m0s`, out)
	require.Regexp(t, `woo-b +woocommerce +no: off \(reconcile: false\)`, out)

	code, out, errOut = runCommand(t, nil, "reconcile", "report", "--platform", "shop-a", "-o", "json", "-f", file)
	require.Zero(t, code, errOut)
	var rep reconcileReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Results, 1)
	require.Equal(t, 9, rep.Results[0].StoreCount)
	require.Len(t, rep.Platforms, 1)

	st, err = store.Open(ctx, dsn)
	require.NoError(t, err)
	save(store.ReconcileResult{Platform: "shop-a", From: at.Add(24 * time.Hour), To: at.Add(48 * time.Hour), Check: api.ReconcileFirst, PlatformCount: 3,
		Precision: "exact", StoreCount: 2, Outcome: api.ReconcileOpen, Reprocessed: true, RecountPlatform: 3, RecountStore: 2, CheckedAt: at.Add(50 * time.Hour)})
	require.NoError(t, st.Close())
	code, out, _ = runCommand(t, nil, "reconcile", "report", "-f", file)
	require.Equal(t, ExitFailure, code, out)
	require.Regexp(t, `shop-a .*3 / 2 +open`, out)

	code, _, errOut = runCommand(t, nil, "reconcile", "report", "--limit", "0", "-f", file)
	require.Equal(t, ExitUsage, code, errOut)
}

// checkClient records the check signals sent to reconcile workflows; a
// workflow it does not know is not found.
type checkClient struct {
	client.Client
	running map[string]bool
	sent    []api.Range
}

func (c *checkClient) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	if !c.running[id] || name != api.SignalReconcileCheck {
		return serviceerror.NewNotFound("workflow not found")
	}
	c.sent = append(c.sent, arg.(api.Range))
	return nil
}

func (c *checkClient) Close() {}

// TestReconcileRunCommand: `reconcile run` asks the platform's Reconcile
// workflow to check exactly the window; an open or over-long window, a
// kind without a count and a reconciliation that does not run are refused.
func TestReconcileRunCommand(t *testing.T) {
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	file := writePlatforms(t, `
default: {start: -24h}
platforms:
  shop-a:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
  shop-off:
    kind: shopify
    endpoint: https://off.myshopify.com
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
    reconcile: false
  amz-c:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {file: /dev/null}
    options: {marketplace_ids: [A1PA6795UKMFR9]}
`)
	c := &checkClient{running: map[string]bool{api.ReconcileWorkflowID("shop-a"): true}}
	code, out, errOut := runCommand(t, c, "reconcile", "run", "-p", "shop-a", "--from", "2026-11-20T00:00:00Z", "--to", "2026-11-21T00:00:00Z", "-f", file)
	require.Zero(t, code, errOut)
	require.Contains(t, out, "shop-a: check of 2026-11-20T00:00:00Z .. 2026-11-21T00:00:00Z asked")
	require.Equal(t, []api.Range{{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}}, c.sent)

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-p", "shop-a", "--from", "-1h", "--to", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ExitUsage, "has not passed yet"},
		{[]string{"-p", "shop-a", "--from", "-30d", "--to", "-1d"}, ExitUsage, "at most 168h0m0s"},
		{[]string{"-p", "shop-a", "--from", "-1d"}, ExitUsage, "--platform, --from and --to are required"},
		{[]string{"-p", "amz-c", "--from", "-2d", "--to", "-1d"}, ExitFailure, "amz-c (kind amazon) is not reconciled"},
		{[]string{"-p", "shop-off", "--from", "-2d", "--to", "-1d"}, ExitFailure, "reconcile/shop-off is not running"},
	} {
		code, _, errOut := runCommand(t, c, append(append([]string{"reconcile", "run"}, tc.args...), "-f", file)...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	require.Len(t, c.sent, 1, "nothing else was sent")
}
