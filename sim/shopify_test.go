package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// The header-only queries of ordersync before full orders: 2 + first x
	// (order 3 + lineItems 2 + 3 per line) points.
	ordersQuery = `query OrdersUpdatedInWindow($first: Int!, $after: String, $query: String!, $lines: Int!) {
  orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes {
      id name createdAt updatedAt cancelledAt displayFinancialStatus displayFulfillmentStatus currencyCode
      totalPriceSet { shopMoney { amount currencyCode } }
      lineItems(first: $lines) { nodes { ...OrderLine } pageInfo { hasNextPage endCursor } }
    }
    pageInfo { hasNextPage endCursor }
  }
}` + lineFragment
	linesQuery = `query OrderLineItems($id: ID!, $first: Int!, $after: String) {
  order(id: $id) { lineItems(first: $first, after: $after) { nodes { ...OrderLine } pageInfo { hasNextPage endCursor } } }
}` + lineFragment
	lineFragment = `
fragment OrderLine on LineItem { id sku name title quantity originalUnitPriceSet { shopMoney { amount currencyCode } } }`
)

// gql posts a GraphQL request to a shop's Shopify surface.
func gql(t *testing.T, base, shop, token, op, query string, vars map[string]any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"query": query, "operationName": op, "variables": vars})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/shops/"+shop+"/admin/api/2026-10/graphql.json", bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Shopify-Access-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// gqlAnswer is what the tests read of an answer.
type gqlAnswer struct {
	Data struct {
		Orders struct {
			Nodes    []shopifyNode   `json:"nodes"`
			PageInfo shopifyPageInfo `json:"pageInfo"`
		} `json:"orders"`
		Order *struct {
			LineItems shopifyLineConn `json:"lineItems"`
		} `json:"order"`
	} `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	Extensions struct {
		Cost *shopifyCost `json:"cost"`
	} `json:"extensions"`
}

func decodeAnswer(t *testing.T, body []byte) gqlAnswer {
	t.Helper()
	var a gqlAnswer
	require.NoError(t, json.Unmarshal(body, &a), string(body))
	return a
}

func window(from, to time.Time) string {
	return "updated_at:>='" + from.UTC().Format(time.RFC3339) + "' AND updated_at:<'" + to.UTC().Format(time.RFC3339) + "'"
}

// TestShopifySurfaceListsTheListEndpointsOrders pages a window through the
// Shopify surface, every order's lines through follow-ups, and compares
// with the list endpoint and the ground truth.
func TestShopifySurfaceListsTheListEndpointsOrders(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(7, clk))
	clk.Add(time.Hour)
	from, to := clk.Now().Add(-30*time.Hour), clk.Now()
	want := listAll(t, ts.URL, "acme", "acme-token", from, to, 50)
	require.NotEmpty(t, want)

	var got []shopifyNode
	after := any(nil)
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000)
		code, body := gql(t, ts.URL, "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery,
			map[string]any{"first": 7, "after": after, "query": window(from, to), "lines": 2})
		require.Equal(t, http.StatusOK, code, string(body))
		a := decodeAnswer(t, body)
		require.Empty(t, a.Errors)
		require.NotNil(t, a.Extensions.Cost)
		require.Equal(t, 2+7*(5+3*2), a.Extensions.Cost.RequestedQueryCost, "Shopify's rule: 2 + first x (order 3 + lineItems 2 + 3 per line)")
		got = append(got, a.Data.Orders.Nodes...)
		if !a.Data.Orders.PageInfo.HasNextPage {
			break
		}
		after = *a.Data.Orders.PageInfo.EndCursor
	}
	require.Len(t, got, len(want), "the same orders as the list endpoint")
	withMoreLines := 0
	for i, n := range got {
		w := want[i]
		require.Equal(t, shopifyOrderGID+w.ID, n.ID, "in the same (updated_at, id) order")
		upd, err := time.Parse(time.RFC3339Nano, w.UpdatedAt)
		require.NoError(t, err)
		require.Equal(t, upd.Truncate(time.Second).Format(time.RFC3339), n.UpdatedAt, "whole seconds, as Shopify keeps them")
		require.Equal(t, w.Total, n.TotalPriceSet.ShopMoney.Amount)
		financial, cancelled := ShopifyFinancialStatus(w.Status)
		require.Equal(t, financial, n.DisplayFinancialStatus)
		require.Equal(t, cancelled, n.CancelledAt != nil)

		lines := n.LineItems.Nodes
		require.LessOrEqual(t, len(lines), 2)
		for next := n.LineItems.PageInfo; next.HasNextPage; {
			withMoreLines++
			code, body := gql(t, ts.URL, "acme", "acme-token", "OrderLineItems", linesQuery,
				map[string]any{"id": n.ID, "first": 100, "after": *next.EndCursor})
			require.Equal(t, http.StatusOK, code)
			a := decodeAnswer(t, body)
			require.NotNil(t, a.Data.Order, string(body))
			require.LessOrEqual(t, len(a.Data.Order.LineItems.Nodes), 3, "the simulator's small nested page")
			lines = append(lines, a.Data.Order.LineItems.Nodes...)
			next = a.Data.Order.LineItems.PageInfo
		}
		truth, err := s.LineItems("acme", w.ID)
		require.NoError(t, err)
		require.Len(t, lines, len(w.LineItems))
		require.Len(t, truth, len(lines))
		for j, l := range lines {
			require.Equal(t, shopifyLineGID+truth[j].ID, l.ID)
			require.Equal(t, w.LineItems[j].SKU, l.SKU)
			require.Equal(t, w.LineItems[j].Title, l.Name)
			require.Equal(t, w.LineItems[j].Qty, l.Quantity)
			require.Equal(t, w.LineItems[j].Price, l.OriginalUnitPriceSet.ShopMoney.Amount)
		}
	}
	require.Positive(t, withMoreLines, "some orders need follow-ups")
	st := s.Stats().Shops["acme"]
	require.Equal(t, int64(len(got)), st.OrdersServed-int64(len(want)), "orders served by both surfaces")
}

func TestShopifySearchComparesWholeSeconds(t *testing.T) {
	at := func(s string) int64 { tm, _ := time.Parse(time.RFC3339Nano, s); return tm.UnixMicro() }
	for _, tc := range []struct {
		q      string
		lo, hi int64
		err    string
	}{
		{q: "updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:00Z'", lo: at("2026-03-01T10:00:00Z"), hi: at("2026-03-01T11:00:00Z")},
		// updatedAt 10:00:00 is not >= 10:00:00.5: a client must round outwards.
		{q: `updated_at:>="2026-03-01T10:00:00.5Z" AND updated_at:<"2026-03-01T10:59:59.2Z"`, lo: at("2026-03-01T10:00:01Z"), hi: at("2026-03-01T11:00:00Z")},
		{q: "updated_at:>'2026-03-01T10:00:00Z' and updated_at:<='2026-03-01T11:00:00Z'", err: "got \"updated_at:>'2026-03-01T10:00:00Z' and"},
		{q: "updated_at:>'2026-03-01T10:00:00Z' AND updated_at:<='2026-03-01T11:00:00Z'", lo: at("2026-03-01T10:00:01Z"), hi: at("2026-03-01T11:00:01Z")},
		{q: "updated_at:>=2026-03-01T10:00:00Z", err: "quoted dates"},
		{q: "status:any", err: "only updated_at ranges"},
		{q: "updated_at:>='soon'", err: `"soon" is not an ISO 8601 time`},
	} {
		t.Run(tc.q, func(t *testing.T) {
			lo, hi, err := parseShopifySearch(tc.q)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.lo, lo)
			require.Equal(t, tc.hi, hi)
		})
	}
}

func TestShopifyCostBucket(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(3, clk)
	cfg.ShopifyCost = CostLimit{RestoreRate: 10, MaxAvailable: 1000}
	s, ts := startTest(t, cfg)
	vars := map[string]any{"first": 50, "query": window(epoch, farAway), "lines": 4}
	query := func() gqlAnswer {
		code, body := gql(t, ts.URL, "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, vars)
		require.Equal(t, http.StatusOK, code, "THROTTLED is HTTP 200, as on Shopify")
		return decodeAnswer(t, body)
	}
	a := query()
	require.Empty(t, a.Errors)
	c := a.Extensions.Cost
	require.Equal(t, 852, c.RequestedQueryCost)
	require.NotNil(t, c.ActualQueryCost)
	require.Less(t, *c.ActualQueryCost, 852, "refunded down to what the page holds")
	require.Equal(t, float64(1000-*c.ActualQueryCost), c.ThrottleStatus.CurrentlyAvailable)
	require.Equal(t, 10.0, c.ThrottleStatus.RestoreRate)

	a = query()
	require.Len(t, a.Errors, 1)
	require.Equal(t, "THROTTLED", a.Errors[0].Extensions["code"])
	require.Equal(t, "Throttled", a.Errors[0].Message)
	require.Nil(t, a.Extensions.Cost.ActualQueryCost)
	require.Equal(t, 852, a.Extensions.Cost.RequestedQueryCost)
	require.Equal(t, int64(1), s.Stats().Shops["acme"].Throttled)

	clk.Add(time.Duration(float64(852-a.Extensions.Cost.ThrottleStatus.CurrentlyAvailable)/10*float64(time.Second)) + time.Second)
	require.Empty(t, query().Errors, "the bucket restored enough")
}

func TestShopifySurfaceRefuses(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(5, clk))
	ok := map[string]any{"first": 10, "query": window(epoch, farAway), "lines": 2}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for key, val := range ok {
			m[key] = val
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name, shop, token, op, query string
		vars                         map[string]any
		status                       int
		want                         string
	}{
		{"wrong token", "acme", "globex-token", "OrdersUpdatedInWindow", ordersQuery, ok, 401, "Invalid API key or access token"},
		{"unknown shop", "nope", "acme-token", "OrdersUpdatedInWindow", ordersQuery, ok, 404, "Not Found"},
		{"another operation", "acme", "acme-token", "Products", "query Products { products(first: 1) { nodes { id } } }", ok, 200, "UNSUPPORTED"},
		{"a name that is not the query's", "acme", "acme-token", "OrdersUpdatedInWindow", linesQuery, ok, 200, `No operation named \"OrdersUpdatedInWindow\"`},
		{"a field Order does not have", "acme", "acme-token", "OrdersUpdatedInWindow", strings.Replace(ordersQuery, "currencyCode\n", "currencyCode colour\n", 1), ok, 200,
			`"message":"Field 'colour' doesn't exist on type 'Order'","extensions":{"code":"undefinedField"}`},
		{"a connection without first", "acme", "acme-token", "OrdersUpdatedInWindow", strings.Replace(ordersQuery, "currencyCode\n", "currencyCode shippingLines { nodes { id } }\n", 1), ok, 200,
			"you must provide one of first or last"},
		{"first over 250", "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, with("first", 251), 200, "$first must be an integer between 1 and 250"},
		{"an unquoted date", "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, with("query", "updated_at:>=2026-01-01"), 200, "quoted dates"},
		{"over the single-query cost", "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, with("first", 250), 200, `Query cost is 2752, which exceeds the single query max cost limit (1000).`},
		{"a forged cursor", "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, with("after", "bm9wZQ"), 200, "Invalid cursor"},
		{"a bad order id", "acme", "acme-token", "OrderLineItems", linesQuery, map[string]any{"id": "gid://shopify/Product/1", "first": 5}, 200, "invalid value"},
		{"an order that does not exist", "acme", "acme-token", "OrderLineItems", linesQuery, map[string]any{"id": "gid://shopify/Order/1999999999", "first": 5}, 200, `"order":null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := gql(t, ts.URL, tc.shop, tc.token, tc.op, tc.query, tc.vars)
			require.Equal(t, tc.status, code, string(body))
			require.True(t, strings.Contains(string(body), tc.want), string(body))
		})
	}
}

// TestShopifyCostBucketPerShop: a shop with a bucket of its own (the
// standard 1,000 points) states it, beside a shop on the run's bucket.
func TestShopifyCostBucketPerShop(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(3, clk)
	cfg.ShopifyCost = CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	std := ShopifyStandardBucket
	cfg.Shops[1].ShopifyCost = &std
	_, ts := startTest(t, cfg)
	vars := map[string]any{"first": 10, "query": window(epoch, farAway), "lines": 2}
	for shop, want := range map[string]CostLimit{"acme": cfg.ShopifyCost, "globex": ShopifyStandardBucket} {
		code, body := gql(t, ts.URL, shop, shop+"-token", "OrdersUpdatedInWindow", ordersQuery, vars)
		require.Equal(t, http.StatusOK, code)
		a := decodeAnswer(t, body)
		require.Empty(t, a.Errors)
		st := a.Extensions.Cost.ThrottleStatus
		require.Equal(t, want.MaxAvailable, st.MaximumAvailable, shop)
		require.Equal(t, want.RestoreRate, st.RestoreRate, shop)
	}
	require.Nil(t, cfg.Shops[0].ShopifyCost, "the caller's config is not changed")
}
