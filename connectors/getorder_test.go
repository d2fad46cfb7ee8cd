package connectors_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// TestSimGetOrder: the simulator's get-one-order call returns the newest
// visible version, as the list shows it, with its lines and a canonical
// form; an id the shop does not know (or a path trick) is ErrOrderNotFound;
// the shop's rate limit answers the call like a page.
func TestSimGetOrder(t *testing.T) {
	clk := newFakeClock()
	cfg := simConfig(4, clk)
	cfg.RateLimit = sim.RateLimit{RPS: 1, Burst: 4}
	s, ts := startSim(t, cfg)
	c := newSimConn(t, ts.URL+"/shops/acme", "acme-token", 50, 5*time.Second)
	truth, err := s.TruthWithLines("acme", time.Time{})
	require.NoError(t, err)
	want := truth.Orders[17]

	o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: want.ID})
	require.NoError(t, err)
	require.Equal(t, want.ID, o.ID)
	require.True(t, want.UpdatedAt.Equal(o.UpdatedAt))
	require.Equal(t, want.Total, o.Total)
	require.Equal(t, want.Status, o.Status)
	require.True(t, o.HasLines)
	require.Len(t, o.Lines, len(want.Lines))
	require.NotNil(t, o.Canonical, "the wrapper fills in the canonical order, as for a page")

	for _, id := range []string{"1000099999", "../orders", ".."} {
		_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: id})
		require.True(t, errors.Is(err, connectors.ErrOrderNotFound), "%s: %v", id, err)
	}
	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: want.ID})
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl, "the 5th call on a clock that stands still, at 1/s with a burst of 4")
	require.Positive(t, rl.RetryAfter)
	require.EqualValues(t, 1, s.Stats().Shops["acme"].RateLimited)
}

func TestEbayGetOrder(t *testing.T) {
	var orders []json.RawMessage
	require.NoError(t, json.Unmarshal(fixture(t, "ebay/orders.json"), &orders))
	mux := http.NewServeMux()
	mux.Handle("POST /identity/v1/oauth2/token", &tokenServer{t: t, expiresIn: 7200})
	var paths []string
	mux.HandleFunc("GET /sell/fulfillment/v1/order/{id}", func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.EscapedPath())
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
			writeBody(w, http.StatusUnauthorized, fixture(t, "ebay/error_invalid_token.json"))
			return
		}
		for _, o := range orders {
			var head struct{ OrderID string }
			require.NoError(t, json.Unmarshal(o, &head))
			if head.OrderID == r.PathValue("id") {
				writeBody(w, http.StatusOK, o)
				return
			}
		}
		writeBody(w, http.StatusNotFound, []byte(`{"errors":[{"errorId":32100,"domain":"API_FULFILLMENT","category":"REQUEST","message":"Invalid order ID: `+r.PathValue("id")+`"}]}`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c := newEbayConn(t, ts)

	o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "01-10001-10001"})
	require.NoError(t, err)
	require.Equal(t, "01-10001-10001", o.ID)
	require.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), o.UpdatedAt)
	require.True(t, o.HasLines)
	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "01-99999-99999"})
	require.True(t, errors.Is(err, connectors.ErrOrderNotFound), "%v", err)
	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "a/b?c"})
	require.True(t, errors.Is(err, connectors.ErrOrderNotFound), "%v", err)
	require.Equal(t, "/sell/fulfillment/v1/order/a%2Fb%3Fc", paths[len(paths)-1], "the id stays one path segment")
}

func TestWooCommerceGetOrder(t *testing.T) {
	var orders []json.RawMessage
	require.NoError(t, json.Unmarshal(fixture(t, "woocommerce/orders.json"), &orders))
	for _, auth := range []string{"basic", "query"} {
		t.Run(auth, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				user, pass, _ := r.BasicAuth()
				if auth == "query" {
					user, pass = r.URL.Query().Get("consumer_key"), r.URL.Query().Get("consumer_secret")
				}
				if user != "ck_abc" || pass != "cs_def" {
					writeBody(w, http.StatusUnauthorized, fixture(t, "woocommerce/error_unauthorized.json"))
					return
				}
				id, ok := strings.CutPrefix(r.URL.Path, "/wp-json/wc/v3/orders/")
				for _, o := range orders {
					var head struct{ ID json.Number }
					require.NoError(t, json.Unmarshal(o, &head))
					if ok && head.ID.String() == id {
						writeBody(w, http.StatusOK, o)
						return
					}
				}
				writeBody(w, http.StatusNotFound, []byte(`{"code":"woocommerce_rest_shop_order_invalid_id","message":"Invalid ID.","data":{"status":404}}`))
			}))
			t.Cleanup(ts.Close)
			c := newWooConn(t, ts.URL, auth)
			o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "728"})
			require.NoError(t, err)
			require.Equal(t, "728", o.ID)
			require.Equal(t, "completed", o.Status)
			require.Equal(t, "1200.00", o.Total)
			_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "999"})
			require.True(t, errors.Is(err, connectors.ErrOrderNotFound), "%v", err)
		})
	}
}

func TestHTTPKindGetOrder(t *testing.T) {
	order := func(id string) map[string]any {
		return map[string]any{"order_no": json.Number(id), "state": "open",
			"meta":  map[string]any{"modified": json.Number("1772359200000")},
			"money": map[string]any{"amount": json.Number("12.50"), "ccy": "EUR"}}
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k-1" {
			writeBody(w, http.StatusUnauthorized, []byte(`{"message":"bad key"}`))
			return
		}
		switch r.URL.EscapedPath() {
		case "/api/v2/orders/1001/detail":
			b, _ := json.Marshal(map[string]any{"data": map[string]any{"order": order("1001")}})
			writeBody(w, http.StatusOK, b)
		case "/api/v2/orders/1002/detail":
			writeBody(w, http.StatusOK, []byte(`{"data":{"order":null}}`))
		case "/api/v2/orders/1003/detail":
			writeBody(w, http.StatusGone, []byte(`{"message":"archived"}`))
		default:
			writeBody(w, http.StatusNotFound, []byte(`{"message":"no such order"}`))
		}
	}))
	t.Cleanup(ts.Close)
	conn := func(get map[string]any) connectors.Connector {
		opts := map[string]any{"path": "/api/v2/orders", "window": map[string]any{"from_param": "from", "to_param": "to"},
			"pagination": map[string]any{"style": "none"}, "records_path": "orders",
			"fields": map[string]any{"id": "order_no", "updated_at": "meta.modified", "status": "state", "currency": "money.ccy",
				"total": "money.amount", "time_format": "unix_ms"}}
		if get != nil {
			opts["get"] = get
		}
		c, err := connectors.New(config.Platform{Name: "api", Kind: "http", Endpoint: ts.URL, Timeout: config.Duration(5 * time.Second),
			Credentials: secretFile(t, "k-1"), Options: opts})
		require.NoError(t, err)
		return c
	}
	c := conn(map[string]any{"path": "/api/v2/orders/{id}/detail", "record_path": "data.order", "not_found_status": []any{404, 410}})
	o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "1001"})
	require.NoError(t, err)
	require.Equal(t, "1001", o.ID)
	require.Equal(t, "12.50", o.Total)
	require.Equal(t, time.UnixMilli(1772359200000).UTC(), o.UpdatedAt)
	for _, id := range []string{"1002", "1003", "1004", "x/../../1001"} {
		_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: id})
		require.True(t, errors.Is(err, connectors.ErrOrderNotFound), "%s: %v", id, err)
	}

	_, err = connectors.GetOrder(context.Background(), conn(nil), connectors.OrderRequest{ID: "1001"})
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.Contains(t, err.Error(), "options.get.path")
}

// TestHTTPKindGetOptionsAreChecked: a get path without {id}, with a
// query, or a not-found status that means something else is refused at
// load, naming the field.
func TestHTTPKindGetOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		get   map[string]any
		field string
	}{
		{map[string]any{"path": "/orders"}, "get.path"},
		{map[string]any{"path": "/orders/{id}?x=1"}, "get.path"},
		{map[string]any{"path": "/orders/{id}/{id}"}, "get.path"},
		{map[string]any{"record_path": "data"}, "get.path"},
		{map[string]any{"path": "/orders/{id}", "not_found_status": []any{429}}, "get.not_found_status"},
		{map[string]any{"path": "/orders/{id}", "record_path": "a..b"}, "get.record_path"},
	} {
		p := config.Platform{Name: "api", Kind: "http", Endpoint: "https://api.example.com", Credentials: config.CredentialRef{Env: "X"},
			Options: map[string]any{"path": "/orders", "window": map[string]any{"from_param": "from", "to_param": "to"},
				"pagination": map[string]any{"style": "none"}, "records_path": ".", "fields": map[string]any{"id": "id", "updated_at": "u"},
				"get": tc.get}}
		_, err := config.KindOptions[connectors.HTTPOptions](p)
		require.Error(t, err, "%v", tc.get)
		require.Contains(t, err.Error(), tc.field, "%v", tc.get)
	}
}
