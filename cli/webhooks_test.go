package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

// TestWebhooksSyncAndStatus: sync creates the three Shopify subscriptions
// through the Admin GraphQL API, a second sync finds them, status shows
// them and no event yet (not live), and after Shopify deleted them (8
// failed deliveries, played by the simulator) sync creates them again.
func TestWebhooksSyncAndStatus(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Shops = []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}
	cfg.HistoryOrders, cfg.LiveRate = 5, 0
	cfg.Webhooks = sim.WebhookConfig{Secret: "shpss_cli_test"}
	s, err := sim.New(cfg)
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { s.StopWebhooks(); _ = srv.Close() })

	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", "")
	t.Setenv("SHOPIFY_ACME_TOKEN", "acme-token")
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	f, err := config.Parse([]byte(`
platforms:
  shopify-acme:
    kind: shopify
    endpoint: "` + srv.ShopURL("acme") + `"
    allow_plaintext: true
    credentials: {env: SHOPIFY_ACME_TOKEN}
  sim-b:
    kind: sim
    endpoint: "` + srv.ShopURL("acme") + `"
    credentials: {env: SHOPIFY_ACME_TOKEN}
`))
	require.NoError(t, err)
	reg, _ := store.RegistryOf(st)
	for _, p := range f.Platforms {
		e, err := accounts.PlatformEntry(p, accounts.Active)
		require.NoError(t, err)
		_, err = reg.Put(ctx, e, 0)
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())

	const base = "http://127.0.0.1:8790"
	code, out, stderr := runCommand(t, nil, "webhooks", "sync", "--url", base, "-o", "json")
	require.Zero(t, code, stderr)
	var rows []webhookSyncRow
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	require.Len(t, rows, 1, "only the Shopify platform")
	require.Len(t, rows[0].Report.Created, 3)
	require.Equal(t, base+"/webhooks/shopify/shopify-acme", rows[0].Report.URI)

	code, out, stderr = runCommand(t, nil, "webhooks", "sync", "--url", base)
	require.Zero(t, code, stderr)
	require.Regexp(t, `shopify-acme\s+3\s+0\s`, out)

	code, out, stderr = runCommand(t, nil, "webhooks", "status", "-o", "json")
	require.Zero(t, code, stderr)
	var status []webhookStatusRow
	require.NoError(t, json.Unmarshal([]byte(out), &status), out)
	require.Equal(t, []webhookStatusRow{{Platform: "shopify-acme", Kind: "shopify", Subscriptions: 3}}, status)

	// An event accepted a minute ago: live.
	st, err = store.Open(ctx, dsn)
	require.NoError(t, err)
	_, err = st.RecordWebhookDelivery(ctx, "shopify-acme", "d-1", time.Now().Add(-time.Minute), time.Hour)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	code, out, stderr = runCommand(t, nil, "webhooks", "status")
	require.Zero(t, code, stderr)
	require.Regexp(t, `shopify-acme\s+shopify\s+3/3\s+\S+ \(1m\d*s ago\)\s+1\s+yes`, out)

	require.Equal(t, 3, s.DeleteWebhookSubscriptions("acme"))
	code, out, stderr = runCommand(t, nil, "webhooks", "status", "--platform", "shopify-acme")
	require.Zero(t, code, stderr)
	require.Regexp(t, `0/3\s+.*\s+no`, out, "subscriptions gone: not live")
	code, out, stderr = runCommand(t, nil, "webhooks", "sync", "--url", base)
	require.Zero(t, code, stderr)
	require.Regexp(t, `shopify-acme\s+0\s+3\s`, out, "recreated")

	code, _, stderr = runCommand(t, nil, "webhooks", "sync")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--url")
	code, _, stderr = runCommand(t, nil, "webhooks", "status", "--platform", "sim-b")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "of kind sim")
}

// TestServeRoutesWebhooksAndMetrics: serve's mux takes webhooks at
// /webhooks/<kind>/<platform> without the bearer token and without an
// onboarding file (refusing a forged event 401 and an unknown account
// 404), counts them at GET /metrics behind the token, and leaves every
// other path to the API.
func TestServeRoutesWebhooksAndMetrics(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", "")
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg, _ := store.RegistryOf(st)
	f, err := config.Parse([]byte(`
platforms:
  shopify-acme:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOPIFY_ACME_TOKEN}
`))
	require.NoError(t, err)
	e, err := accounts.PlatformEntry(f.Platforms[0], accounts.Active)
	require.NoError(t, err)
	_, err = reg.Put(ctx, e, 0)
	require.NoError(t, err)

	app := &App{Logger: slog.New(slog.DiscardHandler)}
	app.Process.StoreDSN = dsn
	wh, mh, done, err := app.webhookIntake(ctx, &orderops.Service{Store: st, Registry: reg})
	require.NoError(t, err)
	t.Cleanup(done)
	const token = "serve-test-token-0123456789"
	apiH := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(serveRoutes(apiH, nil, wh, mh, token))
	t.Cleanup(srv.Close)

	post := func(path string) int {
		body := `{"id":1}`
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Shopify-Hmac-Sha256", webhooks.Sign("forged", []byte(body)))
		req.Header.Set("X-Shopify-Shop-Domain", "acme.myshopify.com")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// No secret is stored (no keys): the event cannot be verified, 500,
	// and the platform retries.
	require.Equal(t, http.StatusInternalServerError, post("/webhooks/shopify/shopify-acme"))
	require.Equal(t, http.StatusNotFound, post("/webhooks/shopify/shopify-nobody"))
	require.Equal(t, http.StatusTeapot, post("/v1/platforms"), "the API keeps every other path")

	get := func(auth string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get("wrong-token-wrong-token")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := get(token)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `ordersync_webhook_events_total{kind="shopify",outcome="error",platform="shopify-acme"} 1`)
	require.Contains(t, body, `ordersync_webhook_events_total{kind="shopify",outcome="unknown_account",platform=""} 1`)
}

// TestWooAdminReadsTheConnectorsKeys: the WooCommerce webhook client
// authenticates with the platform's own JSON keys and auth option; a
// credential that is not such an object is an error naming the reference.
func TestWooAdminReadsTheConnectorsKeys(t *testing.T) {
	t.Setenv("WOO_KEYS", `{"consumer_key":"ck_1","consumer_secret":"cs_1"}`)
	t.Setenv("WOO_BAD", `ck_1:cs_1`)
	f, err := config.Parse([]byte(`
platforms:
  woo-a:
    kind: woocommerce
    endpoint: https://shop.example.com
    credentials: {env: WOO_KEYS}
    options: {auth: query}
  woo-b:
    kind: woocommerce
    endpoint: https://shop.example.com
    credentials: {env: WOO_BAD}
`))
	require.NoError(t, err)
	byName := map[string]config.Platform{}
	for _, p := range f.Platforms {
		byName[p.Name] = p
	}
	a, err := wooAdmin(byName["woo-a"])
	require.NoError(t, err)
	require.Equal(t, "ck_1", a.ConsumerKey)
	require.Equal(t, "cs_1", a.ConsumerSecret)
	require.True(t, a.InQuery)
	require.Equal(t, "https://shop.example.com", a.Endpoint)
	_, err = wooAdmin(byName["woo-b"])
	require.ErrorContains(t, err, "platform woo-b: credentials env:WOO_BAD: the secret must be a JSON object")
	require.NotContains(t, err.Error(), "cs_1")
}
