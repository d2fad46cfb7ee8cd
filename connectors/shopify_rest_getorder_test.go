package connectors_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// TestShopifyRESTGetOrder: GET orders/<id>.json answers the documented
// order resource; 404 is ErrOrderNotFound, 429 a RateLimitError.
func TestShopifyRESTGetOrder(t *testing.T) {
	example, err := os.ReadFile("testdata/canonical/shopify-rest.raw.json")
	require.NoError(t, err)
	var paths []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		require.Equal(t, "shpat_rest", r.Header.Get("X-Shopify-Access-Token"))
		switch r.URL.Path {
		case "/admin/api/" + connectors.DefaultShopifyAPIVersion + "/orders/450789469.json":
			writeBody(w, http.StatusOK, append(append([]byte(`{"order":`), example...), '}'))
		case "/admin/api/" + connectors.DefaultShopifyAPIVersion + "/orders/1.json":
			w.Header().Set("Retry-After", "2.0")
			writeBody(w, http.StatusTooManyRequests, []byte(`{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}`))
		default:
			writeBody(w, http.StatusNotFound, []byte(`{"errors":"Not Found"}`))
		}
	}))
	t.Cleanup(ts.Close)
	c := newShopifyConn(t, ts.URL, "shpat_rest", map[string]any{"api": "rest"})
	o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "450789469"})
	require.NoError(t, err)
	require.Equal(t, "450789469", o.ID)
	require.Equal(t, "partially_refunded", o.Status)
	require.Len(t, o.Lines, 3)
	require.Equal(t, "rest", o.Canonical.Source)
	require.Equal(t, "Bob Norman", o.Canonical.ShippingAddress.Name)

	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "gid://shopify/Order/42"})
	require.ErrorIs(t, err, connectors.ErrOrderNotFound)
	require.Equal(t, "/admin/api/"+connectors.DefaultShopifyAPIVersion+"/orders/42.json", paths[len(paths)-1], "a global id is sent as its number")

	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "1"})
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 2*time.Second, rl.RetryAfter)
	require.NotErrorIs(t, err, connectors.ErrOrderNotFound)
}
