package connectors_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// TestShopifyCountAgainstTheSimulator: ordersCount counts exactly the
// orders the connector's pages list for the same window (whole-second
// and sub-second bounds), exactly; the orders the list hides for a while
// (the fault reconciliation is for) are counted although not listed.
func TestShopifyCountAgainstTheSimulator(t *testing.T) {
	clk := newFakeClock()
	s, conn := startShopifySim(t, clk, 50, 2, func(c *sim.Config) { c.LiveRate, c.Late = 0.1, 0 })
	now := clk.Now()
	for _, w := range [][2]time.Time{
		{now.Add(-25 * time.Hour), now},
		{now.Add(-6*time.Hour - 500*time.Millisecond), now.Add(-2*time.Hour + 123456789)},
		{now.Add(-3 * time.Hour), now.Add(-3*time.Hour + 10*time.Minute)},
	} {
		listed := fetchWindow(t, conn, w[0], w[1])
		n, err := connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: w[0], To: w[1]})
		require.NoError(t, err)
		require.Equal(t, connectors.Count{N: len(listed), Precision: connectors.CountExact}, n, "window %v", w)
	}

	require.NoError(t, s.HideFromList("acme", 2, time.Hour))
	from := clk.Now()
	clk.AdvanceTo(from.Add(10 * time.Minute))
	listed := fetchWindow(t, conn, from, clk.Now())
	n, err := connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: from, To: clk.Now()})
	require.NoError(t, err)
	require.GreaterOrEqual(t, n.N, 2)
	require.Equal(t, len(listed)+2, n.N, "the hidden orders are counted, not listed")

	_, err = connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: from, To: from})
	require.True(t, connectors.IsPermanent(err), "an empty window: %v", err)
}

// TestShopifyCountOnAnOldAPIVersionIsPermanent: before 2024-07 Shopify has
// no ordersCount; the answer is a permanent error naming the field.
func TestShopifyCountOnAnOldAPIVersionIsPermanent(t *testing.T) {
	clk := newFakeClock()
	s, err := sim.New(simConfig(11, clk))
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	conn := newShopifyConn(t, srv.ShopURL("acme"), "acme-token", map[string]any{"api": connectors.ShopifyGraphQL, "api_version": "2024-04"})
	_, err = connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: clk.Now().Add(-time.Hour), To: clk.Now()})
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.Contains(t, err.Error(), "ordersCount")
}

// TestCountUnsupportedKinds: kinds without a count call say so
// (ErrCountUnsupported) through the redacting wrapper, and
// CountSupported agrees without building a connector.
func TestCountUnsupportedKinds(t *testing.T) {
	rest := newShopifyConn(t, "https://acme.myshopify.com", "shpat_rest", map[string]any{"api": "rest"})
	_, err := connectors.CountOrders(context.Background(), rest, connectors.CountRequest{From: wooFrom, To: wooTo})
	require.ErrorIs(t, err, connectors.ErrCountUnsupported)
	simConn := newSimConn(t, "http://127.0.0.1:1/shops/acme", "acme-token", 10, time.Second)
	_, err = connectors.CountOrders(context.Background(), simConn, connectors.CountRequest{From: wooFrom, To: wooTo})
	require.ErrorIs(t, err, connectors.ErrCountUnsupported)

	for _, tc := range []struct {
		p    config.Platform
		want bool
	}{
		{config.Platform{Kind: "shopify"}, true},
		{config.Platform{Kind: "shopify", Options: map[string]any{"api": "rest"}}, false},
		{config.Platform{Kind: "woocommerce"}, true},
		{config.Platform{Kind: "ebay"}, true},
		{config.Platform{Kind: "amazon"}, false},
		{config.Platform{Kind: "http"}, false},
		{config.Platform{Kind: "sim"}, false},
	} {
		require.Equal(t, tc.want, connectors.CountSupported(tc.p), "%s %v", tc.p.Kind, tc.p.Options)
	}
}

// TestWooCommerceCount: X-WP-Total of the list call with the pages' own
// bounds and per_page=1; a missing total is malformed, a refused key
// permanent, and the key never appears in the error.
func TestWooCommerceCount(t *testing.T) {
	var answer func(w http.ResponseWriter)
	var got url.Values
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/wp-json/wc/v3/orders", r.URL.Path)
		got = r.URL.Query()
		if user, pass, _ := r.BasicAuth(); user != "ck_abc" || pass != "cs_def" {
			writeBody(w, http.StatusUnauthorized, []byte(`{"code":"woocommerce_rest_cannot_view","message":"Sorry, you cannot list resources (ck_abc).","data":{"status":401}}`))
			return
		}
		answer(w)
	}))
	t.Cleanup(ts.Close)
	conn := newWooConn(t, ts.URL, "basic")

	answer = func(w http.ResponseWriter) {
		writeBody(w, http.StatusOK, []byte(`[{"id":1}]`), "X-WP-Total", "42", "X-WP-TotalPages", "42")
	}
	n, err := connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: wooFrom, To: wooTo})
	require.NoError(t, err)
	require.Equal(t, connectors.Count{N: 42, Precision: connectors.CountExact}, n)
	require.Equal(t, url.Values{"modified_after": {"2026-03-01T09:59:59"}, "modified_before": {"2026-03-01T11:00:00"},
		"dates_are_gmt": {"true"}, "per_page": {"1"}, "_fields": {"id"}}, got, "the pages' own bounds")

	answer = func(w http.ResponseWriter) { writeBody(w, http.StatusOK, []byte(`[]`), "X-WP-Total", "many") }
	_, err = connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: wooFrom, To: wooTo})
	var mal *connectors.MalformedError
	require.ErrorAs(t, err, &mal)
	require.Contains(t, err.Error(), `"many"`)

	bad := newWooConnWithSecret(t, ts.URL, `{"consumer_key":"ck_wrong_key","consumer_secret":"cs_wrong_secret"}`)
	_, err = connectors.CountOrders(context.Background(), bad, connectors.CountRequest{From: wooFrom, To: wooTo})
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.NotContains(t, err.Error(), "cs_wrong_secret")
}

func newWooConnWithSecret(t *testing.T, endpoint, secret string) connectors.Connector {
	t.Helper()
	c, err := connectors.New(config.Platform{Name: "woo", Kind: "woocommerce", Endpoint: endpoint, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, secret)})
	require.NoError(t, err)
	return c
}

// TestEbayCount: getOrders' total with the pages' own filter and limit=1,
// one request; a total that is no count is malformed.
func TestEbayCount(t *testing.T) {
	f, ts := newEbayFake(t)
	conn := newEbayConn(t, ts)
	n, err := connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: ebayFrom, To: ebayTo})
	require.NoError(t, err)
	require.Equal(t, connectors.Count{N: len(f.orders), Precision: connectors.CountExact}, n)
	require.Equal(t, [][2]int{{0, 1}}, f.calls, "one getOrders call, limit 1")

	f.fault = func(w http.ResponseWriter) bool {
		writeBody(w, http.StatusOK, []byte(`{"total":"lots","orders":[]}`))
		return true
	}
	_, err = connectors.CountOrders(context.Background(), conn, connectors.CountRequest{From: ebayFrom, To: ebayTo})
	var mal *connectors.MalformedError
	require.True(t, errors.As(err, &mal), "%v", err)
	require.False(t, strings.Contains(err.Error(), "refresh-me"))
}
