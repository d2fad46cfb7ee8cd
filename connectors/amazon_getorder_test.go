package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// TestAmazon2026GetOrderAgainstTheSimulator: getOrder answers the order as
// searchOrders lists it, with the same includedData (BUYER and RECIPIENT
// only when the account opted in); an unknown id is 404, ErrOrderNotFound.
func TestAmazon2026GetOrderAgainstTheSimulator(t *testing.T) {
	clk := newFakeClock()
	_, ts := startSim(t, simConfig(1, clk))
	for _, tc := range []struct {
		name     string
		options  map[string]any
		personal bool
	}{
		{"no opt-in", nil, false},
		{"buyer and recipient", map[string]any{"include_buyer": true, "include_recipient": true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newAmazonSimConn(t, ts, "acme", tc.options)
			page, err := c.ListOrders(context.Background(), connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now().Add(-3 * time.Minute), Page: 1})
			require.NoError(t, err)
			require.NotEmpty(t, page.Orders)
			want := page.Orders[0]
			got, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: want.ID})
			require.NoError(t, err)
			require.JSONEq(t, string(want.Raw), string(got.Raw), "getOrder's order is searchOrders'")
			require.Equal(t, want.Lines, got.Lines)
			require.Equal(t, tc.personal, strings.Contains(string(got.Raw), `"buyer"`))
			require.Equal(t, tc.personal, strings.Contains(string(got.Raw), `"recipient"`))
			require.Equal(t, tc.personal, got.Canonical.ShippingAddress != nil)
			require.Contains(t, string(got.Raw), `"proceeds"`)

			_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "1009999999"})
			require.ErrorIs(t, err, connectors.ErrOrderNotFound)
			_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "../orders"})
			require.True(t, connectors.IsPermanent(err))
		})
	}
}

// TestAmazon2026GetOrderThrottled: getOrder shares the seller's bucket;
// a 429 is a RateLimitError, not a missing order.
func TestAmazon2026GetOrderThrottled(t *testing.T) {
	clk := newFakeClock()
	cfg := simConfig(1, clk)
	cfg.RateLimit = sim.RateLimit{RPS: 0.0056, Burst: 1} // Amazon's searchOrders plan, the smaller one
	_, ts := startSim(t, cfg)
	c := newAmazonSimConn(t, ts, "acme", nil)
	_, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "1000000001"})
	require.NoError(t, err)
	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "1000000001"})
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.NotErrorIs(t, err, connectors.ErrOrderNotFound)
}

// TestAmazonV0GetOrder: v0 getOrder and getOrderItems (paged by NextToken)
// from the model's examples; the items become the lines and Raw's
// OrderItems; 404 is ErrOrderNotFound.
func TestAmazonV0GetOrder(t *testing.T) {
	example, err := os.ReadFile("testdata/canonical/amazon-v0.raw.json")
	require.NoError(t, err)
	var order map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(example, &order))
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal(order["OrderItems"], &items))
	delete(order, "OrderItems")
	payload, _ := json.Marshal(order)
	tokens := &tokenServer{t: t, expiresIn: 3600}
	mux := http.NewServeMux()
	mux.Handle("POST /auth/o2/token", tokens)
	mux.HandleFunc("GET /orders/v0/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "902-3159896-1390916" {
			writeBody(w, http.StatusNotFound, []byte(`{"errors":[{"code":"NotFound","message":"The resource specified does not exist."}]}`))
			return
		}
		writeBody(w, http.StatusOK, append(append([]byte(`{"payload":`), payload...), '}'))
	})
	mux.HandleFunc("GET /orders/v0/orders/{id}/orderItems", func(w http.ResponseWriter, r *http.Request) {
		first, _ := json.Marshal(map[string]any{"payload": map[string]any{"AmazonOrderId": r.PathValue("id"), "OrderItems": items[:1], "NextToken": "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4"}})
		rest, _ := json.Marshal(map[string]any{"payload": map[string]any{"AmazonOrderId": r.PathValue("id"), "OrderItems": items[1:]}})
		if r.URL.Query().Get("NextToken") == "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4" {
			writeBody(w, http.StatusOK, rest)
			return
		}
		writeBody(w, http.StatusOK, first)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, err := connectors.New(config.Platform{Name: "amazon-v0", Kind: "amazon", Endpoint: ts.URL, PageSize: 2, Timeout: config.Duration(5 * time.Second),
		Options:     map[string]any{"api_version": "v0", "marketplace_ids": []any{"ATVPDKIKX0DER"}, "token_url": ts.URL + "/auth/o2/token"},
		Credentials: secretFile(t, `{"client_id":"amzn1.application-oa2-client.x","client_secret":"s","refresh_token":"r"}`)})
	require.NoError(t, err)
	o, err := connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "902-3159896-1390916"})
	require.NoError(t, err)
	require.True(t, o.HasLines)
	require.Len(t, o.Lines, 2, "both pages of items")
	require.Equal(t, connectors.OrderLine{ID: "68828574383266", SKU: "CBA_OTF_1", Title: "Example item name", Quantity: 1, UnitPrice: "25.99", Currency: "JPY"}, o.Lines[0])
	require.JSONEq(t, string(example), string(o.Raw), "the order with its items under OrderItems")
	require.Equal(t, "v0", o.Canonical.Source)

	_, err = connectors.GetOrder(context.Background(), c, connectors.OrderRequest{ID: "111-1111111-1111111"})
	require.ErrorIs(t, err, connectors.ErrOrderNotFound)
}
