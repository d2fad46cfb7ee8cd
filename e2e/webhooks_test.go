package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

// webhooksPlatforms: one Shopify account polled every hour, so during the
// first phase only webhooks bring changes (the slice grid's next point is
// rarely inside the test; when it is, the orders before the watermark are
// not counted as the fast path's).
const webhooksPlatforms = `
default:
  kind: shopify
  start: -2m
  interval: 1h
  overlap: 3s
  settle: 1s
  timeout: 5s
  retries: 5
  retry_interval: 200ms
  concurrency: 4
  rate_limit: {rps: 50, burst: 20}
  page_size: 50
platforms:
  e2e-wh:
    endpoint: "{{SIM}}/shops/wh"
    credentials: {env: ORDERSYNC_E2E_WH_TOKEN}
    options: {restore_rate: 2000, max_cost_available: 20000, bulk_backfill: false}
`

const webhooksSecret = "shpss_e2e_0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// TestWebhooksFastPath: the simulator's Shopify shop sends signed webhooks
// (with duplicates, delays, drops and forged ones) to the intake of
// `serve`, subscribed by `ordersync webhooks sync`. While polling waits
// for its hour-long slice, orders reach the store through webhook ->
// refetch, each at the version the platform shows, with the watermark
// still before it; forged and unsigned events are refused and counted,
// none accepted; duplicates do nothing. Then polling at 5 s catches what
// the dropped events missed: 0 missing, 0 stale.
func TestWebhooksFastPath(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 31
	cfg.Shops = []sim.ShopConfig{{Name: "wh", Token: "wh-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 40
	cfg.LiveRate = 1
	cfg.MaxUpdates = 2
	cfg.UpdateSpread = 15 * time.Second
	cfg.Late = 0
	cfg.RateLimit = sim.RateLimit{}
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	cfg.Webhooks = sim.WebhookConfig{Secret: webhooksSecret, Duplicate: 0.2, Drop: 0.15, Forge: 0.2, DelayRate: 0.2, Delay: time.Second,
		RetryInterval: 100 * time.Millisecond, Tick: 50 * time.Millisecond}
	s := startSystem(t, cfg, webhooksPlatforms)
	t.Cleanup(s.sim.StopWebhooks)
	code, _, stderr := s.runCLI("platform", "apply")
	require.Zero(t, code, stderr)

	// serve's intake, as cli.webhookIntake builds it (the secret given
	// directly instead of through the credential store).
	ctx := context.Background()
	reg, ok := store.RegistryOf(s.store)
	require.True(t, ok)
	preg := prometheus.NewRegistry()
	intake, err := webhooks.New(webhooks.Options{Registry: reg, Log: s.store, Secrets: webhooks.StaticSecrets{"e2e-wh": webhooksSecret},
		Refetch: &orderops.Service{Store: s.store, Registry: reg, Temporal: s.client}, Metrics: metrics.NewWebhooks(preg)})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(webhooks.Prefix, intake)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = intake.Close(cctx)
	})

	code, out, stderr := s.runCLI("webhooks", "sync", "--url", srv.URL)
	require.Zero(t, code, "%s%s", out, stderr)
	require.Regexp(t, `e2e-wh\s+0\s+3\s`, out)
	subscribed := time.Now()

	// An unsigned event and one signed with another secret: refused.
	body := `{"id":1000000001}`
	for _, sig := range []string{"", webhooks.Sign("not-the-secret", []byte(body))} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/shopify/e2e-wh", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(webhooks.ShopifyShopHeader, "wh.myshopify.com")
		req.Header.Set(webhooks.ShopifyWebhookIDHeader, "manual")
		if sig != "" {
			req.Header.Set(webhooks.ShopifySignatureHeader, sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}

	// Phase 1: webhooks only. Orders changed since the subscription reach
	// the store at the platform's version while the watermark is before
	// that version (no poll brought them).
	admin := &sim.AdminClient{BaseURL: s.simSrv.URL, Token: adminToken}
	var viaWebhook int
	var lags []time.Duration // platform update -> stored, of those orders
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) && viaWebhook < 15 {
		time.Sleep(time.Second)
		cur := s.status("e2e-wh")
		if len(cur.InFlight) > 0 {
			continue // a slice is storing orders: not the fast path's
		}
		wm := cur.Watermark
		truth, err := admin.Truth(ctx, "wh")
		require.NoError(t, err)
		stored, err := s.store.OrderVersions(ctx, "e2e-wh")
		require.NoError(t, err)
		viaWebhook, lags = 0, lags[:0]
		for _, o := range truth.Orders {
			u := o.UpdatedAt.Truncate(time.Second)
			if !o.UpdatedAt.After(subscribed) || !wm.Before(u) || !stored[o.ID].Equal(u) {
				continue
			}
			viaWebhook++
			changes, err := s.store.OrderChanges(ctx, "e2e-wh", o.ID)
			require.NoError(t, err)
			for _, c := range changes {
				if c.UpdatedAt.Equal(u) {
					lags = append(lags, c.CommittedAt.Sub(o.UpdatedAt))
				}
			}
		}
	}
	ws := s.sim.WebhookStats()
	slices.Sort(lags)
	var p50, worst time.Duration
	if len(lags) > 0 {
		p50, worst = lags[len(lags)/2], lags[len(lags)-1]
	}
	t.Logf("phase 1: %d orders changed after the subscription stored at their version by webhook -> refetch, the watermark before them "+
		"(platform update -> stored: median %s, max %s over %d versions; delays up to 1s injected); sim: %+v",
		viaWebhook, p50.Round(time.Millisecond), worst.Round(time.Millisecond), len(lags), ws)
	require.GreaterOrEqual(t, viaWebhook, 8, "orders came through the fast path before any poll")

	code, out, stderr = s.runCLI("webhooks", "status", "--platform", "e2e-wh")
	require.Zero(t, code, stderr)
	require.Regexp(t, `e2e-wh\s+shopify\s+3/3\s+.*\s+yes`, out, "live")

	// Phase 2: polling at 5 s; creation stops; everything the dropped
	// events missed is caught by polling.
	code, _, stderr = s.runCLI("platform", "edit", "e2e-wh", "--set", "interval=5s")
	require.Zero(t, code, stderr)
	quiet := s.sim.StopCreating()
	time.Sleep(time.Until(quiet))
	st := s.waitWatermark("e2e-wh", quiet.Add(time.Second), 45*time.Second)
	r := s.verifyAsOf("e2e-wh", "wh", st.Watermark, sim.AmazonItemID, time.Second)
	require.Greater(t, r.Checked, 40)
	require.Empty(t, r.Missing, "missing")
	require.Empty(t, r.Stale, "stale")

	ws = s.sim.WebhookStats()
	require.Positive(t, ws.Dropped, "some events were never sent: polling caught them")
	require.Positive(t, ws.Duplicated)
	require.Positive(t, ws.Forged)
	require.Zero(t, ws.ForgedAccepted, "no forged event accepted")
	count := func(outcome string) float64 {
		mfs, err := preg.Gather()
		require.NoError(t, err)
		n := 0.0
		for _, mf := range mfs {
			if mf.GetName() != "ordersync_webhook_events_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == outcome {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return float64(s.sim.WebhookStats().Forged)+1 == count(metrics.WebhookForged) }, 10*time.Second, 50*time.Millisecond,
		"every forged event refused and counted: sim %d (+1 by hand), intake %.0f", s.sim.WebhookStats().Forged, count(metrics.WebhookForged))
	require.Equal(t, 1.0, count(metrics.WebhookUnsigned))
	require.Positive(t, count(metrics.WebhookDuplicate))
	t.Logf("%d orders checked: 0 missing, 0 stale; sim sent %d events (%d delivered, %d dropped, %d duplicated, %d delayed, %d forged, %d retried); "+
		"intake: %.0f accepted, %.0f coalesced, %.0f duplicate, %.0f forged, %.0f unsigned",
		r.Checked, ws.Events, ws.Delivered, ws.Dropped, ws.Duplicated, ws.Delayed, ws.Forged, ws.Retried,
		count(metrics.WebhookAccepted), count(metrics.WebhookCoalesced), count(metrics.WebhookDuplicate), count(metrics.WebhookForged), count(metrics.WebhookUnsigned))
}
