package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const countQuery = `query OrdersCountInWindow($query: String!) {
  ordersCount(query: $query, limit: null) { count precision }
}`

func shopifyCount(t *testing.T, base, query string, vars map[string]any) (int, string, gqlAnswer) {
	t.Helper()
	code, body := gql(t, base, "acme", "acme-token", "OrdersCountInWindow", query, vars)
	require.Equal(t, http.StatusOK, code, string(body))
	var a struct {
		Data struct {
			OrdersCount struct {
				Count     int    `json:"count"`
				Precision string `json:"precision"`
			} `json:"ordersCount"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &a), string(body))
	return a.Data.OrdersCount.Count, a.Data.OrdersCount.Precision, decodeAnswer(t, body)
}

// TestShopifyOrdersCountCountsTheWindow: ordersCount with the orders
// query's updated_at filter counts exactly the orders the list shows in
// the window, costs one point, stops at its default limit of 10,000
// (AT_LEAST, here a literal limit) and is refused before API 2024-07.
func TestShopifyOrdersCountCountsTheWindow(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(11, clk))
	clk.Add(time.Hour)
	from, to := clk.Now().Add(-20*time.Hour), clk.Now().Add(-2*time.Hour)
	want := listAll(t, ts.URL, "acme", "acme-token", from, to, 50)
	require.Greater(t, len(want), 10)

	n, precision, a := shopifyCount(t, ts.URL, countQuery, map[string]any{"query": window(from, to)})
	require.Empty(t, a.Errors)
	require.Equal(t, len(want), n)
	require.Equal(t, "EXACT", precision)
	require.Equal(t, 1, a.Extensions.Cost.RequestedQueryCost)

	limited := `query OrdersCountInWindow($query: String!) { ordersCount(query: $query, limit: 5) { count precision } }`
	n, precision, _ = shopifyCount(t, ts.URL, limited, map[string]any{"query": window(from, to)})
	require.Equal(t, 5, n)
	require.Equal(t, "AT_LEAST", precision)

	code, body := gql(t, ts.URL, "acme", "acme-token", "OrdersCountInWindow",
		`query OrdersCountInWindow($query: String!) { ordersCount(query: $query) { count total } }`, map[string]any{"query": window(from, to)})
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "Field 'total' doesn't exist on type 'Count'")
}

// TestHideFromListHidesFromTheListNotFromTheCount: the next orders the
// shop creates are missing from the list endpoint and the orders query
// for a while, but counted by ordersCount, found by their own get and in
// the ground truth; after the while they are listed again.
func TestHideFromListHidesFromTheListNotFromTheCount(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(12, clk)
	cfg.LiveRate, cfg.Late, cfg.MaxUpdates = 1, 0, 0
	s, ts := startTest(t, cfg)
	require.NoError(t, s.HideFromList("acme", 3, time.Minute))
	from := clk.Now()
	clk.Add(20 * time.Second)
	to := clk.Now()
	listed := listAll(t, ts.URL, "acme", "acme-token", from, to, 50)
	n, _, _ := shopifyCount(t, ts.URL, countQuery, map[string]any{"query": window(from, to)})
	require.Greater(t, n, 3, "orders were created")
	require.Equal(t, n-3, len(listed), "three orders hidden from the list")
	code, body := gql(t, ts.URL, "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery,
		map[string]any{"first": 50, "after": nil, "query": window(from, to), "lines": 2})
	require.Equal(t, http.StatusOK, code)
	require.Len(t, decodeAnswer(t, body).Data.Orders.Nodes, n-3, "and from the orders query")
	truth, err := s.Truth("acme", to)
	require.NoError(t, err)
	inWindow := 0
	for _, o := range truth.Orders {
		if !o.UpdatedAt.Before(from) && o.UpdatedAt.Before(to) {
			inWindow++
		}
	}
	require.Equal(t, n, inWindow, "the ground truth knows them")

	clk.Add(time.Minute)
	require.Len(t, listAll(t, ts.URL, "acme", "acme-token", from, to, 50), n, "listed again after the minute")
	require.Error(t, s.HideFromList("nope", 1, time.Minute))
	require.Error(t, s.HideFromList("acme", 0, time.Minute))
}
