package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/webhooks"
)

// wooStore plays WooCommerce's REST API v3 webhooks endpoints: list,
// create, update, Basic auth with one consumer key.
type wooStore struct {
	mu    sync.Mutex
	hooks []map[string]any
	calls []string
}

func (s *wooStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path)
	if k, sec, ok := r.BasicAuth(); !ok || k != "ck_test" || sec != "cs_test" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"woocommerce_rest_cannot_view","message":"Sorry, you cannot list resources.","data":{"status":401}}`))
		return
	}
	id, isOne := strings.CutPrefix(r.URL.Path, "/wp-json/wc/v3/webhooks/")
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/wp-json/wc/v3/webhooks":
		_ = json.NewEncoder(w).Encode(s.hooks)
	case r.Method == http.MethodPost && r.URL.Path == "/wp-json/wc/v3/webhooks":
		body["id"] = float64(len(s.hooks) + 1)
		s.hooks = append(s.hooks, body)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == http.MethodPut && isOne:
		n, _ := strconv.Atoi(id)
		if n < 1 || n > len(s.hooks) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		for k, v := range body {
			s.hooks[n-1][k] = v
		}
		_ = json.NewEncoder(w).Encode(s.hooks[n-1])
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestSyncWoo: the two order webhooks are created with the secret, found
// on the next sync, and one WooCommerce disabled after failed deliveries
// is activated again; wrong keys are an error naming WooCommerce's answer.
func TestSyncWoo(t *testing.T) {
	shop := &wooStore{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	a := &webhooks.WooAdmin{Endpoint: srv.URL, ConsumerKey: "ck_test", ConsumerSecret: "cs_test"}
	const url = "https://ordersync.example.com/webhooks/woocommerce/woo-shop"

	rep, err := webhooks.SyncWoo(ctx, a, url, "hook-secret", true)
	require.NoError(t, err)
	require.Equal(t, []string{"order.created", "order.updated"}, rep.Missing, "dry run")
	require.Empty(t, shop.hooks)

	rep, err = webhooks.SyncWoo(ctx, a, url, "hook-secret", false)
	require.NoError(t, err)
	require.Len(t, rep.Created, 2)
	require.Equal(t, "hook-secret", shop.hooks[0]["secret"])
	require.Equal(t, "active", shop.hooks[1]["status"])
	require.Equal(t, "order.updated", shop.hooks[1]["topic"])

	rep, err = webhooks.SyncWoo(ctx, a, url, "hook-secret", false)
	require.NoError(t, err)
	require.Len(t, rep.Present, 2)
	require.Empty(t, rep.Created)

	shop.hooks[1]["status"] = "disabled"
	rep, err = webhooks.SyncWoo(ctx, a, url, "hook-secret", false)
	require.NoError(t, err)
	require.Equal(t, []webhooks.Subscription{{ID: "2", Topic: "order.updated", URI: url}}, rep.Created, "activated again")
	require.Equal(t, "active", shop.hooks[1]["status"])
	require.Len(t, shop.hooks, 2, "not a second webhook")

	_, err = webhooks.SyncWoo(ctx, &webhooks.WooAdmin{Endpoint: srv.URL, ConsumerKey: "ck_test", ConsumerSecret: "wrong"}, url, "s", false)
	require.ErrorContains(t, err, "woocommerce list webhooks: HTTP 401")
}
