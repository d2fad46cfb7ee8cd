package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

const intakePlatforms = `
default:
  interval: 10m
platforms:
  shopify-acme:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOPIFY_ACME_TOKEN}
  shopify-globex:
    kind: shopify
    endpoint: https://globex.myshopify.com
    credentials: {env: SHOPIFY_GLOBEX_TOKEN}
  woo-shop:
    kind: woocommerce
    endpoint: https://shop.example.com
    credentials: {env: WOO_SHOP_KEYS}
`

const (
	appSecret = "shpss_0123456789abcdef0123456789abcdef"
	wooSecret = "woo-webhook-secret-42"
)

// fakeRefetcher records the refetches asked for; while block is open each
// start waits for it, so the queue fills.
type fakeRefetcher struct {
	mu    sync.Mutex
	reqs  []orderops.RefetchRequest
	block chan struct{}
}

func (f *fakeRefetcher) StartRefetch(_ context.Context, req orderops.RefetchRequest) ([]orderops.Refetch, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return nil, nil
}

func (f *fakeRefetcher) all() []orderops.RefetchRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]orderops.RefetchRequest(nil), f.reqs...)
}

type intake struct {
	h   *webhooks.Handler
	srv *httptest.Server
	st  store.Store
	ref *fakeRefetcher
	reg *prometheus.Registry
}

func newIntake(t *testing.T, queue int, ref *fakeRefetcher) *intake {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg, ok := store.RegistryOf(st)
	require.True(t, ok)
	f, err := config.Parse([]byte(intakePlatforms))
	require.NoError(t, err)
	for _, p := range f.Platforms {
		e, err := accounts.PlatformEntry(p, accounts.Active)
		require.NoError(t, err)
		_, err = reg.Put(ctx, e, 0)
		require.NoError(t, err)
	}
	preg := prometheus.NewRegistry()
	m := metrics.NewWebhooks(preg)
	h, err := webhooks.New(webhooks.Options{Registry: reg, Log: st, Refetch: ref, Metrics: m, QueueSize: queue, Starters: 1, MaxBody: 64 << 10,
		Secrets: webhooks.StaticSecrets{"shopify-acme": appSecret, "shopify-globex": appSecret, "woo-shop": wooSecret}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(webhooks.Prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	return &intake{h: h, srv: srv, st: st, ref: ref, reg: preg}
}

func (in *intake) events(kind, platform, outcome string) float64 {
	mfs, err := in.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "ordersync_webhook_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["platform"] == platform && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// shopifyEvent is a signed orders/updated event of shop for order id.
func shopifyEvent(secret, shop, id, delivery string) (string, http.Header) {
	body := `{"id":` + id + `,"admin_graphql_api_id":"gid://shopify/Order/` + id + `","updated_at":"2026-11-26T10:00:00Z"}`
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(webhooks.ShopifyTopicHeader, "orders/updated")
	h.Set(webhooks.ShopifyShopHeader, shop)
	h.Set(webhooks.ShopifyWebhookIDHeader, delivery)
	h.Set(webhooks.ShopifyEventIDHeader, "ev-"+delivery)
	h.Set(webhooks.ShopifySignatureHeader, webhooks.Sign(secret, []byte(body)))
	return body, h
}

func (in *intake) post(t *testing.T, path, body string, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, in.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (in *intake) waitRefetches(t *testing.T, n int) []orderops.RefetchRequest {
	t.Helper()
	require.Eventually(t, func() bool { return len(in.ref.all()) >= n }, 5*time.Second, 10*time.Millisecond)
	return in.ref.all()
}

// TestIntakeVerifiesShopifySignatures: a signed event of the account's
// shop is accepted and refetched (with the again flag); a forged
// signature, a missing one, a body changed after signing, another shop's
// event (signed with the same app secret) sent to this account, and an
// unknown account are refused with their status and counted, and start
// nothing.
func TestIntakeVerifiesShopifySignatures(t *testing.T) {
	in := newIntake(t, 100, &fakeRefetcher{})
	body, h := shopifyEvent(appSecret, "acme.myshopify.com", "5123456789", "d-1")
	require.Equal(t, http.StatusOK, in.post(t, "/webhooks/shopify/shopify-acme", body, h))
	reqs := in.waitRefetches(t, 1)
	require.Equal(t, orderops.RefetchRequest{Platform: "shopify-acme", IDs: []string{"5123456789"}, Priority: 2, Again: true}, reqs[0])
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookAccepted))

	body, h = shopifyEvent("not-the-secret", "acme.myshopify.com", "5123456789", "d-2")
	require.Equal(t, http.StatusUnauthorized, in.post(t, "/webhooks/shopify/shopify-acme", body, h))
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookForged))

	body, h = shopifyEvent(appSecret, "acme.myshopify.com", "5123456789", "d-3")
	h.Del(webhooks.ShopifySignatureHeader)
	require.Equal(t, http.StatusUnauthorized, in.post(t, "/webhooks/shopify/shopify-acme", body, h))
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookUnsigned))

	body, h = shopifyEvent(appSecret, "acme.myshopify.com", "5123456789", "d-4")
	changed := strings.Replace(body, "5123456789,", "5123456780,", 1)
	require.Equal(t, http.StatusUnauthorized, in.post(t, "/webhooks/shopify/shopify-acme", changed, h), "body changed after signing")
	require.Equal(t, 2.0, in.events("shopify", "shopify-acme", metrics.WebhookForged))

	body, h = shopifyEvent(appSecret, "globex.myshopify.com", "777", "d-5")
	require.Equal(t, http.StatusUnauthorized, in.post(t, "/webhooks/shopify/shopify-acme", body, h), "another shop's event, well signed")
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookWrongShop))
	require.Equal(t, http.StatusOK, in.post(t, "/webhooks/shopify/shopify-globex", body, h), "at its own account it is fine")

	body, h = shopifyEvent(appSecret, "acme.myshopify.com", "1", "d-6")
	require.Equal(t, http.StatusNotFound, in.post(t, "/webhooks/shopify/shopify-nobody", body, h))
	require.Equal(t, http.StatusNotFound, in.post(t, "/webhooks/woocommerce/shopify-acme", body, h), "the kind is part of the route")
	require.Equal(t, http.StatusNotFound, in.post(t, "/webhooks/ebay/shopify-acme", body, h))
	require.Equal(t, 1.0, in.events("shopify", "", metrics.WebhookUnknownAccount), "unknown accounts carry no platform label")
	require.Equal(t, 1.0, in.events("woocommerce", "", metrics.WebhookUnknownAccount))
	require.Equal(t, 1.0, in.events("", "", metrics.WebhookUnknownAccount), "nor an unknown kind a kind label")
	req, err := http.NewRequest(http.MethodGet, in.srv.URL+"/webhooks/shopify/made-up-name", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, 1.0, in.events("shopify", "", metrics.WebhookBadRequest), "a name not looked up is no label")

	reqs = in.waitRefetches(t, 2)
	require.Len(t, reqs, 2, "only the two good events asked for refetches")
	require.Equal(t, "shopify-globex", reqs[1].Platform)
}

// TestIntakeVerifiesWooCommerceSignatures: WooCommerce's signature header
// with the webhook's secret; an unsigned ping is answered 200 and asks
// for nothing.
func TestIntakeVerifiesWooCommerceSignatures(t *testing.T) {
	in := newIntake(t, 100, &fakeRefetcher{})
	body := `{"id":727,"status":"processing","date_modified_gmt":"2026-11-26T10:00:00"}`
	h := http.Header{}
	h.Set(webhooks.WooTopicHeader, "order.updated")
	h.Set(webhooks.WooDeliveryIDHeader, "1f0a3c")
	h.Set(webhooks.WooSignatureHeader, webhooks.Sign(wooSecret, []byte(body)))
	require.Equal(t, http.StatusOK, in.post(t, "/webhooks/woocommerce/woo-shop", body, h))
	reqs := in.waitRefetches(t, 1)
	require.Equal(t, []string{"727"}, reqs[0].IDs)

	h.Set(webhooks.WooSignatureHeader, webhooks.Sign(appSecret, []byte(body)))
	h.Set(webhooks.WooDeliveryIDHeader, "1f0a3d")
	require.Equal(t, http.StatusUnauthorized, in.post(t, "/webhooks/woocommerce/woo-shop", body, h))
	require.Equal(t, 1.0, in.events("woocommerce", "woo-shop", metrics.WebhookForged))

	ping := http.Header{}
	ping.Set("Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusOK, in.post(t, "/webhooks/woocommerce/woo-shop", "webhook_id=12", ping))
	require.Equal(t, 1.0, in.events("woocommerce", "woo-shop", metrics.WebhookIgnored))
	require.Len(t, in.ref.all(), 1)
}

// TestIntakeDeduplicatesAndCoalesces: a redelivery (same delivery id) is
// answered 200 and starts nothing; events for an order already queued
// fold into its one refetch.
func TestIntakeDeduplicatesAndCoalesces(t *testing.T) {
	ref := &fakeRefetcher{block: make(chan struct{})}
	in := newIntake(t, 100, ref)
	post := func(id, delivery string) int {
		body, h := shopifyEvent(appSecret, "acme.myshopify.com", id, delivery)
		return in.post(t, "/webhooks/shopify/shopify-acme", body, h)
	}
	require.Equal(t, http.StatusOK, post("1", "a")) // the starter takes it and blocks
	require.Eventually(t, func() bool { return in.queued() == 0 }, 5*time.Second, 10*time.Millisecond)
	for _, d := range []string{"b", "c", "d"} {
		require.Equal(t, http.StatusOK, post("2", d))
	}
	require.Equal(t, http.StatusOK, post("2", "b"), "a redelivery")
	close(ref.block)
	reqs := in.waitRefetches(t, 2)
	time.Sleep(100 * time.Millisecond)
	require.Len(t, in.ref.all(), 2, "order 1 once, order 2 once: %v", reqs)
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookDuplicate))
	require.Equal(t, 2.0, in.events("shopify", "shopify-acme", metrics.WebhookCoalesced))
	a, ok, err := in.st.WebhookActivity(context.Background(), "shopify-acme")
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 4, a.Events, "first deliveries only")
}

// TestIntakeQueueFullAnswers503AndForgetsTheDelivery: with the queue full
// an event is answered 503 (the platform retries) and its delivery id
// forgotten, so the retry, once there is room, is taken.
func TestIntakeQueueFullAnswers503AndForgetsTheDelivery(t *testing.T) {
	ref := &fakeRefetcher{block: make(chan struct{})}
	in := newIntake(t, 1, ref)
	post := func(id, delivery string) int {
		body, h := shopifyEvent(appSecret, "acme.myshopify.com", id, delivery)
		return in.post(t, "/webhooks/shopify/shopify-acme", body, h)
	}
	require.Equal(t, http.StatusOK, post("1", "a")) // taken by the blocked starter
	require.Eventually(t, func() bool { return in.queued() == 0 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, post("2", "b")) // fills the queue of one
	require.Equal(t, http.StatusServiceUnavailable, post("3", "c"))
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookQueueFull))
	close(ref.block)
	in.waitRefetches(t, 2)
	require.Equal(t, http.StatusOK, post("3", "c"), "the retry is new, not a duplicate")
	reqs := in.waitRefetches(t, 3)
	require.Equal(t, []string{"3"}, reqs[2].IDs)
}

// TestIntakeRefusesOversizedBodies: a body over MaxBody is 413, counted.
func TestIntakeRefusesOversizedBodies(t *testing.T) {
	in := newIntake(t, 10, &fakeRefetcher{})
	big := `{"id":1,"note":"` + strings.Repeat("x", 65<<10) + `"}`
	h := http.Header{}
	h.Set(webhooks.ShopifySignatureHeader, webhooks.Sign(appSecret, []byte(big)))
	h.Set(webhooks.ShopifyShopHeader, "acme.myshopify.com")
	require.Equal(t, http.StatusRequestEntityTooLarge, in.post(t, "/webhooks/shopify/shopify-acme", big, h))
	require.Equal(t, 1.0, in.events("shopify", "shopify-acme", metrics.WebhookTooLarge))
}

// queued is the queue gauge: orders queued, their refetch not started.
func (in *intake) queued() float64 {
	mfs, _ := in.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "ordersync_webhook_queue_orders" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
