package connectors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
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

// gqlShop plays the GraphQL Admin API as documented: POST
// /admin/api/{version}/graphql.json with the token in
// X-Shopify-Access-Token; the orders query filtered by updated_at in whole
// seconds and sorted by UPDATED_AT, paged by cursor; each order's first
// lines nested, the rest by order(id) { lineItems(after:) }; and
// extensions.cost on every answer.
type gqlShop struct {
	t        *testing.T
	orders   []gqlOrder
	linePage int // the most lines a nested page holds, whatever first asks (0: as asked)
	// fault, when it returns true, has answered the request itself.
	fault func(w http.ResponseWriter, r gqlRequest) bool

	mu       sync.Mutex
	requests []gqlRequest
}

type gqlOrder struct {
	id        int64
	updated   time.Time
	lines     int
	cancelled bool
}

// gqlRequest is a GraphQL request body.
type gqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

const gqlToken = "shpat_graphql"

func newGQLShop(t *testing.T, orders ...gqlOrder) *gqlShop {
	s := &gqlShop{t: t, orders: orders}
	sort.Slice(s.orders, func(i, j int) bool {
		if !s.orders[i].updated.Equal(s.orders[j].updated) {
			return s.orders[i].updated.Before(s.orders[j].updated)
		}
		return s.orders[i].id < s.orders[j].id
	})
	return s
}

// start serves the shop; the connector's endpoint is its URL.
func (s *gqlShop) start() *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	s.t.Cleanup(ts.Close)
	return ts
}

func (s *gqlShop) sent() []gqlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gqlRequest(nil), s.requests...)
}

func (s *gqlShop) serve(w http.ResponseWriter, r *http.Request) {
	t := s.t
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, "/admin/api/"+connectors.DefaultShopifyAPIVersion+"/graphql.json", r.URL.Path)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	if r.Header.Get("X-Shopify-Access-Token") != gqlToken {
		writeBody(w, http.StatusUnauthorized, []byte(`{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`))
		return
	}
	var req gqlRequest
	if !assert.NoError(t, json.NewDecoder(r.Body).Decode(&req)) {
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if s.fault != nil && s.fault(w, req) {
		return
	}
	switch req.OperationName {
	case "OrdersUpdatedInWindow":
		assert.True(t, strings.HasPrefix(req.Query, "query OrdersUpdatedInWindow("), "the operation is the query's")
		writeJSONBody(t, w, s.ordersPage(req.Variables))
	case "OrderLineItems":
		assert.True(t, strings.HasPrefix(req.Query, "query OrderLineItems("))
		writeJSONBody(t, w, s.linesPage(req.Variables))
	default:
		writeJSONBody(t, w, map[string]any{"errors": []any{map[string]any{"message": "unknown operation " + req.OperationName}}})
	}
}

func writeJSONBody(t *testing.T, w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	writeBody(w, http.StatusOK, b)
}

var gqlWindow = regexp.MustCompile(`^updated_at:>='([^']+)' AND updated_at:<'([^']+)'$`)

func (s *gqlShop) ordersPage(v map[string]any) map[string]any {
	t := s.t
	m := gqlWindow.FindStringSubmatch(v["query"].(string))
	require.NotNil(t, m, "the search is a quoted updated_at range: %q", v["query"])
	lo, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)
	hi, err := time.Parse(time.RFC3339, m[2])
	require.NoError(t, err)
	require.Equal(t, lo, lo.Truncate(time.Second), "bounds in whole seconds")
	first, lines := intVar(t, v, "first"), intVar(t, v, "lines")
	start := 0
	if after, _ := v["after"].(string); after != "" {
		n, ok := strings.CutPrefix(after, "o:")
		require.True(t, ok, "a cursor this shop issued: %q", after)
		start, err = strconv.Atoi(n)
		require.NoError(t, err)
		start++
	}
	var in []gqlOrder // the window's orders, in UPDATED_AT order
	for _, o := range s.orders {
		if sec := o.updated.Truncate(time.Second); !sec.Before(lo) && sec.Before(hi) {
			in = append(in, o)
		}
	}
	nodes := []any{}
	actual := 2
	end := min(start+first, len(in))
	for _, o := range in[start:end] {
		node, n := s.node(o, lines)
		nodes = append(nodes, node)
		actual += 5 + 3*n
	}
	pageInfo := map[string]any{"hasNextPage": end < len(in), "endCursor": nil}
	if end > start {
		pageInfo["endCursor"] = "o:" + strconv.Itoa(end-1)
	}
	return map[string]any{
		"data":       map[string]any{"orders": map[string]any{"nodes": nodes, "pageInfo": pageInfo}},
		"extensions": gqlCost(connectors.ShopifyOrdersQueryCost(first, connectors.ShopifyOrderCost(connectors.ShopifyOrderFieldGroups, lines, 0)), actual),
	}
}

// node renders an order with its first lines; it returns how many.
func (s *gqlShop) node(o gqlOrder, first int) (map[string]any, int) {
	lines, info := s.lineNodes(o, 0, first)
	node := map[string]any{
		"id": fmt.Sprintf("gid://shopify/Order/%d", o.id), "name": fmt.Sprintf("#%d", o.id),
		"createdAt": o.updated.Add(-time.Hour).UTC().Format(time.RFC3339), "updatedAt": o.updated.UTC().Truncate(time.Second).Format(time.RFC3339),
		"cancelledAt": nil, "displayFinancialStatus": "PAID", "displayFulfillmentStatus": "UNFULFILLED", "currencyCode": "EUR",
		"totalPriceSet": map[string]any{"shopMoney": map[string]any{"amount": fmt.Sprintf("%d.50", o.id%1000), "currencyCode": "EUR"}},
		"lineItems":     map[string]any{"nodes": lines, "pageInfo": info},
	}
	if o.cancelled {
		node["cancelledAt"] = node["updatedAt"]
		node["displayFinancialStatus"] = "VOIDED"
	}
	return node, len(lines)
}

// lineNodes renders lines [from, from+first) of o, capped at linePage.
func (s *gqlShop) lineNodes(o gqlOrder, from, first int) ([]any, map[string]any) {
	if s.linePage > 0 {
		first = min(first, s.linePage)
	}
	end := min(from+first, o.lines)
	nodes := []any{}
	for i := from; i < end; i++ {
		l := wantLine(o.id, i)
		nodes = append(nodes, map[string]any{"id": "gid://shopify/LineItem/" + l.ID, "sku": l.SKU, "name": l.Title, "title": "Product",
			"quantity": l.Quantity, "originalUnitPriceSet": map[string]any{"shopMoney": map[string]any{"amount": l.UnitPrice, "currencyCode": l.Currency}}})
	}
	info := map[string]any{"hasNextPage": end < o.lines, "endCursor": nil}
	if end > from {
		info["endCursor"] = fmt.Sprintf("l:%d:%d", o.id, end)
	}
	return nodes, info
}

// wantLine is line i of order id as the shop renders it and the connector
// must return it.
func wantLine(id int64, i int) connectors.OrderLine {
	return connectors.OrderLine{ID: strconv.FormatInt(id*1000+int64(i), 10), SKU: fmt.Sprintf("SKU-%d", i), Title: fmt.Sprintf("Item %d", i),
		Quantity: int64(i + 1), UnitPrice: fmt.Sprintf("%d.25", 10+i), Currency: "EUR"}
}

func (s *gqlShop) linesPage(v map[string]any) map[string]any {
	t := s.t
	gid, _ := v["id"].(string)
	id, err := strconv.ParseInt(strings.TrimPrefix(gid, "gid://shopify/Order/"), 10, 64)
	require.NoError(t, err, "an Order global id: %q", gid)
	first := intVar(t, v, "first")
	var from int
	after, _ := v["after"].(string)
	_, err = fmt.Sscanf(after, "l:%d:%d", new(int64), &from)
	require.NoError(t, err, "a line cursor this shop issued: %q", after)
	for _, o := range s.orders {
		if o.id == id {
			nodes, info := s.lineNodes(o, from, first)
			return map[string]any{
				"data":       map[string]any{"order": map[string]any{"lineItems": map[string]any{"nodes": nodes, "pageInfo": info}}},
				"extensions": gqlCost(connectors.ShopifyLinesQueryCost(first), 3+3*len(nodes)),
			}
		}
	}
	return map[string]any{"data": map[string]any{"order": nil}, "extensions": gqlCost(connectors.ShopifyLinesQueryCost(first), 1)}
}

// gqlCost is extensions.cost of a query that left the standard bucket 100
// points short of full.
func gqlCost(requested, actual int) map[string]any {
	return map[string]any{"cost": map[string]any{"requestedQueryCost": requested, "actualQueryCost": actual,
		"throttleStatus": map[string]any{"maximumAvailable": 2000.0, "currentlyAvailable": 1900.0, "restoreRate": 100.0}}}
}

func intVar(t *testing.T, v map[string]any, name string) int {
	f, ok := v[name].(float64)
	require.True(t, ok, "variable %s is a number: %v", name, v[name])
	return int(f)
}

// newGQLConn is a shopify platform on the GraphQL Admin API, the default.
func newGQLConn(t *testing.T, endpoint string, pageSize int, options map[string]any) connectors.Connector {
	t.Helper()
	c, err := connectors.New(config.Platform{Name: "shopify-gql", Kind: "shopify", Endpoint: endpoint, PageSize: pageSize,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, gqlToken), Options: options})
	require.NoError(t, err)
	return c
}

// meterLog is a Meter that records bookings and settlements.
type meterLog struct {
	mu      sync.Mutex
	booked  []string
	settled []string
	err     error
}

func (m *meterLog) Book(_ context.Context, b connectors.CostBudget, cost float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.booked = append(m.booked, fmt.Sprintf("%v of %v/%v", cost, b.Capacity, b.Rate))
	if b.UnstatedCapacity != 1000 || b.UnstatedRate != 50 {
		m.booked = append(m.booked, fmt.Sprintf("unstated bound %v/%v, not the standard bucket", b.UnstatedCapacity, b.UnstatedRate))
	}
	return m.err
}

func (m *meterLog) Settle(_ context.Context, b connectors.CostBudget, delta, deficit float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settled = append(m.settled, fmt.Sprintf("%+v, deficit %v", delta, deficit))
	return nil
}
