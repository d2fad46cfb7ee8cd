package connectors_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

const shopifyCursor = "eyJsYXN0X2lkIjo0NTA3ODk0NjksImxhc3RfdmFsdWUiOiIyMDI2LTAzLTAxIDEwOjA1OjEyIiwiZGlyZWN0aW9uIjoibmV4dCJ9"

// shopifyServer plays GET /admin/api/{version}/orders.json as documented:
// filters on the first request, only page_info and limit afterwards, the
// next page in a Link header.
func shopifyServer(t *testing.T, version string, fault func(w http.ResponseWriter) bool) *httptest.Server {
	ts := httptest.NewServer(nil)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/admin/api/"+version+"/orders.json", r.URL.Path)
		if r.Header.Get("X-Shopify-Access-Token") != "shpat_abc" {
			writeBody(w, http.StatusUnauthorized, fixture(t, "shopify/error_unauthorized.json"))
			return
		}
		if fault != nil && fault(w) {
			return
		}
		q := r.URL.Query()
		link := func(rel, cursor string) string {
			return "<" + ts.URL + r.URL.Path + "?limit=2&page_info=" + cursor + ">; rel=\"" + rel + "\""
		}
		switch q.Get("page_info") {
		case "":
			assert.Equal(t, url.Values{"limit": {"2"}, "status": {"any"},
				"updated_at_min": {"2026-03-01T10:00:00Z"}, "updated_at_max": {"2026-03-01T10:59:59Z"}}, q)
			writeBody(w, http.StatusOK, fixture(t, "shopify/orders_page1.json"), "Link", link("next", shopifyCursor),
				"X-Shopify-Shop-Api-Call-Limit", "1/40")
		case shopifyCursor:
			assert.Equal(t, url.Values{"limit": {"2"}, "page_info": {shopifyCursor}}, q, "only limit may go with page_info")
			writeBody(w, http.StatusOK, fixture(t, "shopify/orders_page2.json"), "Link", link("previous", "cHJldg"))
		default:
			writeBody(w, http.StatusBadRequest, []byte(`{"errors":{"page_info":["Invalid value."]}}`))
		}
	})
	t.Cleanup(ts.Close)
	return ts
}

// newShopifyConn is a platform on the REST Admin API (options.api: rest).
func newShopifyConn(t *testing.T, endpoint, token string, options map[string]any) connectors.Connector {
	t.Helper()
	opts := map[string]any{"api": "rest"}
	maps.Copy(opts, options)
	c, err := connectors.New(config.Platform{Name: "shopify-acme", Kind: "shopify", Endpoint: endpoint, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, token), Options: opts})
	require.NoError(t, err)
	return c
}

var shopifyFrom, shopifyTo = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

func TestShopifyPagesThroughAWindow(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		options       map[string]any
	}{
		{"default API version", connectors.DefaultShopifyAPIVersion, nil},
		{"pinned API version", "2026-07", map[string]any{"api_version": "2026-07"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := shopifyServer(t, tc.version, nil)
			orders := fetchWindow(t, newShopifyConn(t, ts.URL, "shpat_abc", tc.options), shopifyFrom, shopifyTo)
			require.Len(t, orders, 3)
			o := orders[0]
			require.Equal(t, "450789469", o.ID, "numeric ids keep their digits")
			require.Equal(t, time.Date(2026, 3, 1, 10, 5, 12, 0, time.UTC), o.UpdatedAt)
			require.Equal(t, time.UTC, o.CreatedAt.Location())
			require.Equal(t, "598.94", o.Total)
			require.Equal(t, "USD", o.Currency)
			require.Equal(t, "partially_refunded", o.Status)
			require.Equal(t, 3, o.LineCount)
			require.True(t, o.HasLines)
			require.Equal(t, []connectors.OrderLine{
				{ID: "466157049", SKU: "IPOD2008GREEN", Title: "IPod Nano - 8gb", Quantity: 1, UnitPrice: "199.00", Currency: "USD"},
				{ID: "518995019", SKU: "IPOD2008RED", Title: "IPod Nano - 8gb", Quantity: 1, UnitPrice: "199.00", Currency: "USD"},
				{ID: "703073504", SKU: "IPOD2008BLACK", Title: "IPod Nano - 8gb", Quantity: 1, UnitPrice: "199.00", Currency: "USD"},
			}, o.Lines, "numeric line ids keep their digits; price in the order's currency")
			require.Equal(t, []connectors.OrderLine{{ID: "1071823196", Title: "Gift card", Quantity: 1, UnitPrice: "10.00", Currency: "EUR"}},
				orders[1].Lines, "a null sku is no SKU")
			require.True(t, orders[2].HasLines, "line_items: [] is an order without lines, not one whose lines are unknown")
			require.Empty(t, orders[2].Lines)
			require.Contains(t, string(o.Raw), `"name": "#1001"`)
			require.Equal(t, "cancelled", orders[1].Status)
			require.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), orders[2].UpdatedAt)
			require.Equal(t, "0.00", orders[2].Total)
		})
	}
}

func TestShopifyRESTStartsOverOnAGraphQLToken(t *testing.T) {
	// The platform moved back from GraphQL while a slice ran: its window
	// starts over with the first page's filters (the server checks them).
	ts := shopifyServer(t, connectors.DefaultShopifyAPIVersion, nil)
	p, err := newShopifyConn(t, ts.URL, "shpat_abc", nil).ListOrders(context.Background(),
		connectors.PageRequest{From: shopifyFrom, To: shopifyTo, Page: 3, Token: "gql:100:eyJsYXN0X2lkIjoxfQ=="})
	require.NoError(t, err)
	require.Len(t, p.Orders, 2)
	require.Equal(t, shopifyCursor, p.NextToken)
}

func TestShopifyErrors(t *testing.T) {
	tests := []struct {
		name  string
		token string
		fault func(w http.ResponseWriter) bool
		check func(t *testing.T, err error)
	}{
		{"429 with Retry-After", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusTooManyRequests, fixture(t, "shopify/error_throttled.json"), "Retry-After", "2.0")
			return true
		}, func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
			require.Equal(t, 2*time.Second, rl.RetryAfter)
		}},
		{"bad token is permanent and clear", "shpat_wrong", nil, func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, http.StatusUnauthorized, pe.Status)
			require.Contains(t, pe.Msg, "authentication failed: [API] Invalid API key or access token (unrecognized login or wrong password) (check the credentials in file:")
			require.NotContains(t, err.Error(), "shpat_wrong")
		}},
		{"frozen shop is permanent", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusPaymentRequired, []byte(`{"errors":"Unavailable Shop"}`))
			return true
		}, func(t *testing.T, err error) {
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, "HTTP 402: Unavailable Shop")
		}},
		{"5xx is transient", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusBadGateway, []byte(`<html>bad gateway</html>`))
			return true
		}, func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
		}},
		{"bad order", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`{"orders":[{"id":1,"updated_at":"2026-03-01T10:00:00Z","total_price":"1.00"},{"id":2,"updated_at":"soon","total_price":"1"}]}`))
			return true
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, int64(77), me.Offset, "where order 1 starts")
			require.ErrorContains(t, err, `order 1: id 2: updated_at "soon"`)
		}},
		{"float total", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`{"orders":[{"id":1,"updated_at":"2026-03-01T10:00:00Z","total_price":1.5}]}`))
			return true
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.ErrorContains(t, err, "order 0: total_price is a number, want a string")
		}},
		{"truncated body", "shpat_abc", func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`{"orders":[{"id":1,`))
			return true
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, int64(19), me.Offset)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := shopifyServer(t, connectors.DefaultShopifyAPIVersion, tc.fault)
			_, err := newShopifyConn(t, ts.URL, tc.token, nil).ListOrders(context.Background(),
				connectors.PageRequest{From: shopifyFrom, To: shopifyTo, Page: 1})
			tc.check(t, err)
		})
	}
	_, err := connectors.New(config.Platform{Name: "s", Kind: "shopify", Endpoint: "https://a.myshopify.com",
		Credentials: secretFile(t, "x"), Options: map[string]any{"api": "rest", "api_version": "latest"}})
	require.ErrorContains(t, err, `field "options.api_version": "latest" is not a Shopify API version`)
}
