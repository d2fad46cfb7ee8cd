package connectors_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// ebayFake plays the Fulfillment API's getOrders and eBay's OAuth token
// endpoint. Its result set can change between requests, as a live seller's does.
type ebayFake struct {
	t       *testing.T
	tokens  *tokenServer
	mu      sync.Mutex
	orders  []json.RawMessage // the result set, in eBay's order
	calls   [][2]int          // offset, limit of each getOrders call
	between func(call int)    // runs before answering call n (1-based)
	fault   func(w http.ResponseWriter) bool
}

func newEbayFake(t *testing.T) (*ebayFake, *httptest.Server) {
	f := &ebayFake{t: t}
	require.NoError(t, json.Unmarshal(fixture(t, "ebay/orders.json"), &f.orders))
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("amzn1.application-oa2-client.abc:s3cr3t-client"))
	f.tokens = &tokenServer{t: t, expiresIn: 7200, check: func(t *testing.T, r *http.Request) {
		assert.Equal(t, basic, r.Header.Get("Authorization"), "client credentials as HTTP Basic")
		assert.Equal(t, "refresh_token", r.PostForm.Get("grant_type"))
		assert.Equal(t, "Atzr|refresh-me", r.PostForm.Get("refresh_token"))
		assert.Equal(t, "https://api.ebay.com/oauth/api_scope/sell.fulfillment.readonly", r.PostForm.Get("scope"))
		assert.Empty(t, r.PostForm.Get("client_secret"), "the secret is not in the form")
	}}
	mux := http.NewServeMux()
	mux.Handle("POST /identity/v1/oauth2/token", f.tokens)
	mux.HandleFunc("GET /sell/fulfillment/v1/order", f.getOrders)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *ebayFake) getOrders(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
		writeBody(w, http.StatusUnauthorized, fixture(f.t, "ebay/error_invalid_token.json"))
		return
	}
	if f.fault != nil && f.fault(w) {
		return
	}
	q := r.URL.Query()
	assert.Equal(f.t, "lastmodifieddate:[2026-03-01T10:00:00.000Z..2026-03-01T10:59:59.999Z]", q.Get("filter"))
	assert.Contains(f.t, r.URL.RawQuery, "lastmodifieddate%3A%5B2026", "brackets are percent-encoded")
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > 200 {
		writeBody(w, http.StatusBadRequest, []byte(`{"errors":[{"errorId":30700,"message":"Invalid limit"}]}`))
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, [2]int{offset, limit})
	if f.between != nil {
		f.between(len(f.calls))
	}
	set := slices.Clone(f.orders)
	f.mu.Unlock()
	page := set[min(offset, len(set)):min(offset+limit, len(set))]
	env := map[string]any{"href": r.URL.String(), "total": len(set), "limit": limit, "offset": offset, "orders": page}
	if offset+limit < len(set) {
		env["next"] = "https://api.ebay.com/sell/fulfillment/v1/order?offset=" + strconv.Itoa(offset+limit)
	}
	body, _ := json.Marshal(env)
	writeBody(w, http.StatusOK, body)
}

// take removes the order at index i, as a modification past the window does.
func (f *ebayFake) take(i int) { f.orders = slices.Delete(f.orders, i, i+1) }

func newEbayConn(t *testing.T, ts *httptest.Server) connectors.Connector {
	t.Helper()
	c, err := connectors.New(config.Platform{Name: "ebay-us", Kind: "ebay", Endpoint: ts.URL + "/", PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, oauthSecret)})
	require.NoError(t, err)
	return c
}

var ebayFrom, ebayTo = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

func ids(orders []connectors.Order) []string {
	out := make([]string, len(orders))
	for i, o := range orders {
		out[i] = strings.TrimPrefix(o.ID, "01-1000")[:1]
	}
	return out
}

func TestEbayPaging(t *testing.T) {
	tests := []struct {
		name    string
		between func(f *ebayFake, call int)
		ids     []string
		calls   [][2]int
	}{
		{"every page to the end, each overlapping the last by one", nil,
			[]string{"1", "2", "3", "4", "5"}, [][2]int{{0, 2}, {1, 3}, {3, 3}}},
		{"an order modified away before the boundary restarts the window", func(f *ebayFake, call int) {
			if call == 2 {
				f.take(0) // order 1 got a newer lastModifiedDate: without the anchor, order 2 would be skipped
			}
		}, []string{"1", "2", "3", "4", "5", "2", "3", "4", "5"}, [][2]int{{0, 2}, {1, 3}, {0, 2}, {1, 3}, {3, 3}}},
		{"an order appearing late before the boundary restarts too", func(f *ebayFake, call int) {
			if call == 3 {
				f.orders = append([]json.RawMessage{f.orders[4]}, f.orders[:4]...) // 5 shows up late, sorted first
			}
		}, []string{"1", "2", "3", "4", "3", "4", "5", "1", "2", "3", "4"}, [][2]int{{0, 2}, {1, 3}, {3, 3}, {0, 2}, {1, 3}, {3, 3}}},
		{"an order modified away after the boundary needs no restart", func(f *ebayFake, call int) {
			if call == 2 {
				f.take(3)
			}
		}, []string{"1", "2", "3", "5"}, [][2]int{{0, 2}, {1, 3}, {3, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ts := newEbayFake(t)
			if tc.between != nil {
				f.between = func(call int) { tc.between(f, call) }
			}
			orders := fetchWindow(t, newEbayConn(t, ts), ebayFrom, ebayTo)
			require.Equal(t, tc.ids, ids(orders))
			require.Equal(t, tc.calls, f.calls)
			require.Equal(t, int32(1), f.tokens.calls.Load())
		})
	}
	_, ts := newEbayFake(t)
	orders := fetchWindow(t, newEbayConn(t, ts), ebayFrom, ebayTo)
	o := orders[1]
	require.Equal(t, "01-10002-10002", o.ID)
	require.Equal(t, time.Date(2026, 3, 1, 10, 15, 30, 250e6, time.UTC), o.UpdatedAt)
	require.Equal(t, time.Date(2026, 3, 1, 8, 10, 0, 0, time.UTC), o.CreatedAt)
	require.Equal(t, "250.00", o.Total)
	require.Equal(t, "USD", o.Currency)
	require.Equal(t, "IN_PROGRESS", o.Status)
	require.Equal(t, 2, o.LineCount)
	require.True(t, o.HasLines)
	require.Equal(t, []connectors.OrderLine{
		{ID: "10000", SKU: "SKU-0", Title: "Item 0", Quantity: 1, UnitPrice: "100.00", Currency: "USD"},
		{ID: "10001", Title: "Item 1", Quantity: 3, UnitPrice: "50.00", Currency: "USD"},
	}, o.Lines, "unit price: lineItemCost over quantity")
	require.Equal(t, "CANCELED", orders[2].Status)
	require.Equal(t, "5.5", orders[4].Total)
	require.Contains(t, string(o.Raw), `"legacyOrderId":"10002-10002-0"`)
}

func TestEbayErrors(t *testing.T) {
	ctx := context.Background()
	req := connectors.PageRequest{From: ebayFrom, To: ebayTo, Page: 2}
	t.Run("429", func(t *testing.T) {
		f, ts := newEbayFake(t)
		f.fault = func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusTooManyRequests, fixture(t, "ebay/error_too_many_requests.json"), "Retry-After", "30")
			return true
		}
		_, err := newEbayConn(t, ts).ListOrders(ctx, req)
		var rl *connectors.RateLimitError
		require.ErrorAs(t, err, &rl)
		require.Equal(t, 30*time.Second, rl.RetryAfter)
	})
	t.Run("refused token: one refresh, then permanent", func(t *testing.T) {
		f, ts := newEbayFake(t)
		c := newEbayConn(t, ts)
		_, err := c.ListOrders(ctx, req)
		require.NoError(t, err)
		f.fault = func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusUnauthorized, fixture(t, "ebay/error_invalid_token.json"))
			return true
		}
		_, err = c.ListOrders(ctx, req)
		var pe *connectors.PermanentError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, http.StatusUnauthorized, pe.Status)
		require.Contains(t, pe.Msg, "authentication failed: Invalid access token (check the credentials in file:")
		require.Equal(t, int32(2), f.tokens.calls.Load())
	})
	t.Run("refresh token rejected", func(t *testing.T) {
		f, ts := newEbayFake(t)
		f.tokens.setReject(fixture(t, "ebay/oauth_invalid_grant.json"))
		_, err := newEbayConn(t, ts).ListOrders(ctx, req)
		require.True(t, connectors.IsPermanent(err))
		require.ErrorContains(t, err, "token refresh rejected: the provided authorization refresh token is invalid")
		require.NotContains(t, err.Error(), "Atzr|refresh-me")
	})
	t.Run("expired token is refreshed", func(t *testing.T) {
		t.Parallel()
		f, ts := newEbayFake(t)
		f.tokens.expiresIn = 1
		c := newEbayConn(t, ts)
		_, err := c.ListOrders(ctx, req)
		require.NoError(t, err)
		time.Sleep(time.Second)
		_, err = c.ListOrders(ctx, req)
		require.NoError(t, err)
		require.Equal(t, int32(2), f.tokens.calls.Load())
	})
	t.Run("malformed order", func(t *testing.T) {
		f, ts := newEbayFake(t)
		f.fault = func(w http.ResponseWriter) bool {
			writeBody(w, http.StatusOK, []byte(`{"total":1,"orders":[{"orderId":"x","lastModifiedDate":"2026-03-01T10:00:00Z","pricingSummary":{"total":{"value":"1,5"}}}]}`))
			return true
		}
		_, err := newEbayConn(t, ts).ListOrders(ctx, req)
		var me *connectors.MalformedError
		require.ErrorAs(t, err, &me)
		require.Equal(t, 2, me.Page)
		require.Equal(t, int64(21), me.Offset)
		require.ErrorContains(t, err, `pricingSummary.total.value "1,5" is not a decimal number`)
	})
	t.Run("foreign token", func(t *testing.T) {
		_, ts := newEbayFake(t)
		_, err := newEbayConn(t, ts).ListOrders(ctx, connectors.PageRequest{From: ebayFrom, To: ebayTo, Token: "next-please"})
		require.True(t, connectors.IsPermanent(err))
	})
}
