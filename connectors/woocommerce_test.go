package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// wooFake plays GET /wp-json/wc/v3/orders: a JSON array per page and the
// X-WP-Total / X-WP-TotalPages headers.
type wooFake struct {
	t       *testing.T
	auth    string // basic or query
	mu      sync.Mutex
	orders  []json.RawMessage
	pages   []int
	between func(call int)
	fault   func(w http.ResponseWriter) bool
}

func newWooFake(t *testing.T, auth string) (*wooFake, *httptest.Server) {
	f := &wooFake{t: t, auth: auth}
	require.NoError(t, json.Unmarshal(fixture(t, "woocommerce/orders.json"), &f.orders))
	ts := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *wooFake) serve(w http.ResponseWriter, r *http.Request) {
	assert.Equal(f.t, "/wp-json/wc/v3/orders", r.URL.Path)
	q := r.URL.Query()
	user, pass, _ := r.BasicAuth()
	if f.auth == "query" {
		user, pass = q.Get("consumer_key"), q.Get("consumer_secret")
		q.Del("consumer_key")
		q.Del("consumer_secret")
	}
	if user != "ck_abc" || pass != "cs_def" {
		writeBody(w, http.StatusUnauthorized, fixture(f.t, "woocommerce/error_unauthorized.json"))
		return
	}
	if f.fault != nil && f.fault(w) {
		return
	}
	page, _ := strconv.Atoi(q.Get("page"))
	assert.Equal(f.t, url.Values{"modified_after": {"2026-03-01T09:59:59"}, "modified_before": {"2026-03-01T11:00:00"},
		"dates_are_gmt": {"true"}, "orderby": {"id"}, "order": {"asc"}, "per_page": {"2"}, "page": {q.Get("page")}}, q)
	f.mu.Lock()
	f.pages = append(f.pages, page)
	if f.between != nil {
		f.between(len(f.pages))
	}
	set := slices.Clone(f.orders)
	f.mu.Unlock()
	from := min((page-1)*2, len(set))
	body, _ := json.Marshal(set[from:min(from+2, len(set))])
	writeBody(w, http.StatusOK, body, "X-WP-Total", strconv.Itoa(len(set)), "X-WP-TotalPages", strconv.Itoa((len(set)+1)/2))
}

func newWooConn(t *testing.T, endpoint, auth string) connectors.Connector {
	t.Helper()
	c, err := connectors.New(config.Platform{Name: "woo", Kind: "woocommerce", Endpoint: endpoint, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, `{"consumer_key":"ck_abc","consumer_secret":"cs_def"}`),
		Options: map[string]any{"auth": auth}})
	require.NoError(t, err)
	return c
}

var wooFrom, wooTo = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

func wooIDs(orders []connectors.Order) []string {
	out := make([]string, len(orders))
	for i, o := range orders {
		out[i] = o.ID
	}
	return out
}

func TestWooCommercePaging(t *testing.T) {
	for _, auth := range []string{"basic", "query"} {
		t.Run(auth, func(t *testing.T) {
			f, ts := newWooFake(t, auth)
			orders := fetchWindow(t, newWooConn(t, ts.URL, auth), wooFrom, wooTo)
			require.Equal(t, []string{"727", "728", "731", "733", "740"}, wooIDs(orders))
			require.Equal(t, []int{1, 2, 3}, f.pages)
			o := orders[1]
			require.Equal(t, time.Date(2026, 3, 1, 10, 30, 15, 0, time.UTC), o.UpdatedAt)
			require.Equal(t, time.Date(2026, 2, 27, 12, 0, 0, 0, time.UTC), o.CreatedAt)
			require.Equal(t, "completed", o.Status)
			require.Equal(t, "1200.00", o.Total)
			require.Equal(t, "EUR", o.Currency)
			require.Equal(t, 1, o.LineCount)
			require.True(t, o.HasLines)
			require.Equal(t, []connectors.OrderLine{{ID: "412", SKU: "ESP-2", Title: "Espresso Machine – Barista", Quantity: 2,
				UnitPrice: "600.0", Currency: "EUR"}}, o.Lines, "price is a JSON number, kept as written")
			require.Equal(t, []connectors.OrderLine{
				{ID: "315", Title: "Woo Single #0", Quantity: 1, UnitPrice: "6", Currency: "USD"},
				{ID: "316", Title: "Woo Single #1", Quantity: 1, UnitPrice: "6", Currency: "USD"},
			}, orders[0].Lines)
			require.Equal(t, time.Date(2026, 3, 1, 10, 40, 0, 0, time.UTC), orders[2].UpdatedAt, "never modified: created")
			require.Contains(t, string(o.Raw), `"order_key":"wc_order_58d2d042d1d728"`)
		})
	}
	t.Run("an order leaving the window restarts it", func(t *testing.T) {
		f, ts := newWooFake(t, "basic")
		f.between = func(call int) {
			if call == 2 {
				f.orders = f.orders[1:] // 727 modified again: without the restart, 731 would be skipped
			}
		}
		orders := fetchWindow(t, newWooConn(t, ts.URL, "basic"), wooFrom, wooTo)
		require.Equal(t, []string{"727", "728", "733", "740", "728", "731", "733", "740"}, wooIDs(orders))
		require.Equal(t, []int{1, 2, 1, 2}, f.pages)
	})
}

func TestWooCommerceErrors(t *testing.T) {
	tests := []struct {
		name  string
		auth  string
		fault func(w http.ResponseWriter) bool
		check func(t *testing.T, err error)
	}{
		{"bad key", "wrong", nil, func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, http.StatusUnauthorized, pe.Status)
			require.Contains(t, pe.Msg, "authentication failed: woocommerce_rest_cannot_view: Sorry, you cannot list resources. (check the credentials in file:")
			require.NotContains(t, err.Error(), "cs_def")
		}},
		{"429", "basic", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusTooManyRequests, []byte(`{"code":"too_many_requests","message":"Slow down"}`), "Retry-After", "7")
			return true
		}, func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
			require.Equal(t, 7*time.Second, rl.RetryAfter)
		}},
		{"invalid parameter", "basic", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusBadRequest, []byte(`{"code":"rest_invalid_param","message":"Invalid parameter(s): per_page","data":{"status":400}}`))
			return true
		}, func(t *testing.T, err error) {
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, "HTTP 400: rest_invalid_param: Invalid parameter(s): per_page")
		}},
		{"not an array", "basic", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`{"orders":[]}`))
			return true
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.ErrorContains(t, err, "body is not a JSON array")
		}},
		{"bad date", "basic", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`[{"id":1,"date_modified_gmt":"yesterday","total":"1.00"}]`))
			return true
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, int64(1), me.Offset)
			require.ErrorContains(t, err, `order 0: id 1: date_modified_gmt "yesterday" is not a time`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ts := newWooFake(t, "basic")
			f.fault = tc.fault
			auth := tc.auth
			if auth == "wrong" {
				f.auth, auth = "query", "basic" // the server wants query parameters, gets none
			}
			_, err := newWooConn(t, ts.URL, auth).ListOrders(context.Background(), connectors.PageRequest{From: wooFrom, To: wooTo, Page: 1})
			tc.check(t, err)
		})
	}
}
