package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/webhooks"
)

// receiver records the deliveries it verified; while failing it answers 500.
type receiver struct {
	mu      sync.Mutex
	ids     map[string]int
	topics  map[string]int
	forged  int
	failing atomic.Bool
}

func (rc *receiver) handler(secret string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if !webhooks.Verify(secret, body, r.Header.Get(webhooks.ShopifySignatureHeader)) {
			rc.forged++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if rc.failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var o struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(body, &o) != nil || o.ID == 0 || r.Header.Get(webhooks.ShopifyShopHeader) != "acme.myshopify.com" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.ids[r.Header.Get(webhooks.ShopifyWebhookIDHeader)]++
		rc.topics[r.Header.Get(webhooks.ShopifyTopicHeader)]++
		w.WriteHeader(http.StatusOK)
	}
}

// TestShopifyWebhooksDeliverRetryAndDelete: subscriptions made through
// webhookSubscriptionCreate get signed deliveries of new and updated
// orders, with duplicates (same webhook id) and forged ones beside them;
// a receiver that keeps failing has its subscriptions deleted after
// DeleteAfter failed deliveries in a row, which Sync notices and repairs.
func TestShopifyWebhooksDeliverRetryAndDelete(t *testing.T) {
	const secret = "shpss_sim_webhooks"
	cfg := sim.DefaultConfig()
	cfg.Shops = []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}
	cfg.HistoryOrders, cfg.History = 10, time.Hour
	cfg.LiveRate, cfg.MaxUpdates, cfg.UpdateSpread, cfg.Late = 20, 2, time.Second, 0
	cfg.Webhooks = sim.WebhookConfig{Secret: secret, Duplicate: 0.3, Forge: 0.2, Retries: 1, RetryInterval: 10 * time.Millisecond, DeleteAfter: 3, Tick: 20 * time.Millisecond}
	s, err := sim.New(cfg)
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { s.StopWebhooks(); _ = srv.Close() })

	rc := &receiver{ids: map[string]int{}, topics: map[string]int{}}
	hook := httptest.NewServer(rc.handler(secret))
	t.Cleanup(hook.Close)

	ctx := context.Background()
	admin := &webhooks.ShopifyAdmin{Endpoint: srv.ShopURL("acme"), APIVersion: "2026-10", Token: "acme-token"}
	rep, err := webhooks.Sync(ctx, admin, hook.URL+"/webhooks/shopify/shopify-acme", false)
	require.NoError(t, err)
	require.Len(t, rep.Created, 3)
	rep, err = webhooks.Sync(ctx, admin, hook.URL+"/webhooks/shopify/shopify-acme", false)
	require.NoError(t, err)
	require.Len(t, rep.Present, 3, "a second sync finds them")
	require.Empty(t, rep.Created)
	_, err = admin.Create(ctx, "ORDERS_CREATE", "http://example.com/hook")
	require.ErrorContains(t, err, "Address protocol http:// is not supported")
	_, err = admin.Create(ctx, "ORDERS_CREATE", hook.URL+"/webhooks/shopify/shopify-acme")
	require.ErrorContains(t, err, "already been taken")

	require.Eventually(t, func() bool {
		st := s.WebhookStats()
		return st.Delivered >= 40 && st.Forged > 0 && st.Duplicated > 0
	}, 20*time.Second, 20*time.Millisecond)
	rc.mu.Lock()
	dups := 0
	for _, n := range rc.ids {
		if n > 1 {
			dups++
		}
	}
	require.Positive(t, rc.topics["orders/create"])
	require.Positive(t, rc.topics["orders/updated"])
	require.Positive(t, rc.forged, "forged deliveries came, and failed the signature check")
	require.Positive(t, dups, "duplicates carry the same webhook id")
	rc.mu.Unlock()
	require.Zero(t, s.WebhookStats().ForgedAccepted)

	rc.failing.Store(true)
	require.Eventually(t, func() bool {
		subs, err := admin.List(ctx)
		return err == nil && len(subs) == 0
	}, 20*time.Second, 20*time.Millisecond, "deleted after 3 failed deliveries")
	require.Positive(t, s.WebhookStats().Deleted)
	rc.failing.Store(false)
	rep, err = webhooks.Sync(ctx, admin, hook.URL+"/webhooks/shopify/shopify-acme", false)
	require.NoError(t, err)
	require.Len(t, rep.Created, 3, "sync recreates what Shopify deleted")
}
