package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

var gqlFrom, gqlTo = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

func TestShopifyGraphQLPagesThroughAWindowWithEveryLine(t *testing.T) {
	at := func(m, s int) time.Time {
		return gqlFrom.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	shop := newGQLShop(t,
		gqlOrder{id: 1001, updated: at(1, 0), lines: 1},
		gqlOrder{id: 1002, updated: at(2, 0), lines: 7}, // two nested pages more than the first
		gqlOrder{id: 1003, updated: at(2, 0), lines: 0, cancelled: true},
		gqlOrder{id: 1004, updated: at(30, 0), lines: 3},
		gqlOrder{id: 1005, updated: at(59, 59), lines: 2},
		gqlOrder{id: 999, updated: gqlFrom.Add(-time.Second), lines: 1}, // outside
		gqlOrder{id: 1006, updated: gqlTo, lines: 1},                    // outside
	)
	shop.linePage = 3 // Shopify may serve fewer than first; the connector follows hasNextPage
	ts := shop.start()
	meter := &meterLog{}
	c := newGQLConn(t, ts.URL, 2, map[string]any{"line_items_page_size": 2})

	var pages []connectors.Page
	req := connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1, Meter: meter}
	for ; ; req.Page++ {
		p, err := c.ListOrders(context.Background(), req)
		require.NoError(t, err)
		pages = append(pages, p)
		if p.NextToken == "" {
			break
		}
		require.True(t, strings.HasPrefix(p.NextToken, "gql:"), p.NextToken)
		req.Token = p.NextToken
	}
	require.Len(t, pages, 3)
	var orders []connectors.Order
	for _, p := range pages {
		orders = append(orders, p.Orders...)
	}
	var ids []string
	for _, o := range orders {
		ids = append(ids, o.ID)
		require.True(t, o.HasLines)
		require.Len(t, o.Lines, o.LineCount)
		for i, l := range o.Lines {
			require.Equal(t, wantLine(mustInt(t, o.ID), i), l, "order %s line %d", o.ID, i)
		}
		require.Contains(t, string(o.Raw), `"id":"gid://shopify/Order/`+o.ID+`"`, "Raw is the order node")
	}
	require.Equal(t, []string{"1001", "1002", "1003", "1004", "1005"}, ids, "the window's orders by update time, ids as REST has them")
	require.Equal(t, 7, orders[1].LineCount, "every line, before the page is returned")
	require.Equal(t, "paid", orders[0].Status)
	require.Equal(t, "cancelled", orders[2].Status)
	require.Equal(t, "1.50", orders[0].Total)
	require.Equal(t, "EUR", orders[0].Currency)
	require.Equal(t, at(1, 0), orders[0].UpdatedAt)

	sent := shop.sent()
	var ops []string
	for _, r := range sent {
		ops = append(ops, r.OperationName)
	}
	require.Equal(t, []string{"OrdersUpdatedInWindow", "OrderLineItems", "OrderLineItems", "OrdersUpdatedInWindow", "OrderLineItems", "OrdersUpdatedInWindow"}, ops,
		"order 1002's lines 3..5 and 6..7 are fetched within page 1, order 1004's third line within page 2")
	first := sent[0].Variables
	require.Equal(t, map[string]any{"first": 2.0, "after": nil, "lines": 2.0,
		"query": "updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:00Z'"}, first)
	require.Equal(t, map[string]any{"id": "gid://shopify/Order/1002", "first": 50.0, "after": "l:1002:2"}, sent[1].Variables)
	require.Equal(t, "l:1002:5", sent[2].Variables["after"])
	require.Equal(t, "o:1", sent[3].Variables["after"])
	require.Equal(t, "o:3", sent[5].Variables["after"])
	require.Equal(t, first["query"], sent[3].Variables["query"], "every page repeats the window")
	require.Equal(t, "gql:2:o:1", pages[0].NextToken, "the token counts the orders listed")

	// Every query booked its requested cost first and settled it after.
	require.Equal(t, []string{"236 of 2000/100", "503 of 2000/100", "503 of 2000/100", "236 of 2000/100", "503 of 2000/100", "236 of 2000/100"}, meter.booked)
	require.Equal(t, "-215, deficit 100", meter.settled[0], "page 1 cost 2 + 8 + 11 of 236 (two full orders of two lines): 215 refunded; Shopify's bucket is 100 short")
	require.Len(t, meter.settled, 6)
}

func mustInt(t *testing.T, s string) int64 {
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "numeric id %q", s)
		n = 10*n + int64(c-'0')
	}
	return n
}

func TestShopifySearchWindowRoundsOutwards(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     string
	}{
		{"whole seconds", gqlFrom, gqlTo, "updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:00Z'"},
		{"fractions widen the window", gqlFrom.Add(500 * time.Millisecond), gqlTo.Add(-800 * time.Millisecond),
			"updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:00Z'"},
		{"a fraction past the second", gqlFrom, gqlTo.Add(time.Microsecond),
			"updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:01Z'"},
		{"in UTC", gqlFrom.In(time.FixedZone("EST", -5*3600)), gqlTo.In(time.FixedZone("CET", 3600)),
			"updated_at:>='2026-03-01T10:00:00Z' AND updated_at:<'2026-03-01T11:00:00Z'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, connectors.ShopifySearchWindow(tc.from, tc.to))
		})
	}
}

func TestShopifyGraphQLDocumentedPage(t *testing.T) {
	shop := newGQLShop(t)
	shop.fault = func(w http.ResponseWriter, _ gqlRequest) bool {
		writeBody(w, http.StatusOK, fixture(t, "shopify/graphql_orders_page.json"))
		return true
	}
	p, err := newGQLConn(t, shop.start().URL, 2, nil).ListOrders(context.Background(), connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1})
	require.NoError(t, err)
	require.Len(t, p.Orders, 2)
	o := p.Orders[0]
	require.Equal(t, "450789469", o.ID, "the REST connector's id of the same order")
	require.Equal(t, "partially_refunded", o.Status, "REST's financial_status spelling")
	require.Equal(t, "598.94", o.Total)
	require.Equal(t, []connectors.OrderLine{
		{ID: "466157049", SKU: "IPOD2008GREEN", Title: "IPod Nano - 8gb - green", Quantity: 1, UnitPrice: "199.00", Currency: "USD"},
		{ID: "518995019", Title: "IPod Nano - 8gb - red", Quantity: 2, UnitPrice: "199.00", Currency: "USD"},
	}, o.Lines)
	var node map[string]any
	require.NoError(t, json.Unmarshal(o.Raw, &node))
	require.Equal(t, "#1001", node["name"])
	require.Equal(t, "cancelled", p.Orders[1].Status)
	require.Equal(t, "0.0", p.Orders[1].Total, "the amount as Shopify wrote it")
	require.True(t, p.Orders[1].HasLines, "no lines is a complete set too")
	require.Empty(t, p.Orders[1].Lines)
	require.Equal(t, "gql:2:eyJsYXN0X2lkIjo0NTA3ODk0NzAsImxhc3RfdmFsdWUiOiIyMDI2LTAzLTAxIDEwOjIwOjAwIn0=", p.NextToken)
}

func TestShopifyGraphQLThrottledIsARateLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     []byte
		wantWait time.Duration
	}{
		// 852 points wanted, 352 there, 100 a second: 5 s.
		{"documented THROTTLED", fixture(t, "shopify/graphql_throttled.json"), 5 * time.Second},
		{"older form without a code", []byte(`{"errors":[{"message":"Throttled"}],"extensions":{"cost":{"requestedQueryCost":202,"actualQueryCost":null,` +
			`"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":118,"restoreRate":50.0}}}}`), 1700 * time.Millisecond},
		{"no cost: the booked cost at the standard bucket's rate", []byte(`{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`), 4800 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shop := newGQLShop(t)
			shop.fault = func(w http.ResponseWriter, _ gqlRequest) bool {
				writeBody(w, http.StatusOK, tc.body) // HTTP 200, as Shopify answers
				return true
			}
			meter := &meterLog{}
			_, err := newGQLConn(t, shop.start().URL, 2, map[string]any{"line_items_page_size": 2}).ListOrders(context.Background(),
				connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1, Meter: meter})
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
			require.Equal(t, tc.wantWait, rl.RetryAfter)
			require.ErrorContains(t, err, "rate limited: THROTTLED")
			var te *connectors.TransientError
			require.False(t, connectors.IsPermanent(err))
			require.NotErrorAs(t, err, &te, "a wait, not a failed attempt")
			require.Equal(t, []string{"236 of 2000/100"}, meter.booked)
			if strings.Contains(tc.name, "no cost") {
				require.Empty(t, meter.settled)
				return
			}
			require.Len(t, meter.settled, 1)
			require.True(t, strings.HasPrefix(meter.settled[0], "-236, deficit "), "nothing was spent; every worker follows Shopify's deficit: %s", meter.settled[0])
		})
	}
}

func TestShopifyGraphQLFollowsTheReportedBucket(t *testing.T) {
	shop := newGQLShop(t, gqlOrder{id: 1, updated: gqlFrom, lines: 1})
	shop.fault = func(w http.ResponseWriter, r gqlRequest) bool {
		page := shop.ordersPage(r.Variables)
		page["extensions"] = map[string]any{"cost": map[string]any{"requestedQueryCost": 24, "actualQueryCost": 10,
			"throttleStatus": map[string]any{"maximumAvailable": 1000.0, "currentlyAvailable": 400.0, "restoreRate": 50.0}}}
		writeJSONBody(t, w, page)
		return true
	}
	meter := &meterLog{}
	c := newGQLConn(t, shop.start().URL, 2, map[string]any{"line_items_page_size": 2, "restore_rate": 200, "max_cost_available": 4000})
	req := connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1, Meter: meter}
	for range 2 {
		_, err := c.ListOrders(context.Background(), req)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"236 of 4000/200", "236 of 1000/50"}, meter.booked, "a smaller bucket and rate than configured are followed")
	require.Equal(t, "-226, deficit 600", meter.settled[0])

	meter.err = context.DeadlineExceeded
	before := len(shop.sent())
	_, err := c.ListOrders(context.Background(), req)
	var te *connectors.TransientError
	require.NotErrorAs(t, err, &te, "no room within the attempt is the meter's wait, not a failed attempt")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the meter's own error, for the activity to turn into a slot wait")
	require.ErrorContains(t, err, "OrdersUpdatedInWindow query")
	require.Len(t, shop.sent(), before, "nothing sent without a booking")
}

func TestShopifyGraphQLPaginationLimit(t *testing.T) {
	var orders []gqlOrder
	for i := range 30 {
		orders = append(orders, gqlOrder{id: int64(i + 1), updated: gqlFrom})
	}
	shop := newGQLShop(t, orders...)
	c := newGQLConn(t, shop.start().URL, 50, map[string]any{"order_fields": []any{}, "line_items_page_size": 1}) // 23 points an order: pages of 43
	req := connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 400, Token: "gql:24990:o:4"}
	p, err := c.ListOrders(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, 10.0, shop.sent()[0].Variables["first"], "the last page ends at the limit")
	require.Equal(t, "gql:25000:o:14", p.NextToken)

	req.Token, req.Page = p.NextToken, 401
	_, err = c.ListOrders(context.Background(), req)
	require.True(t, connectors.IsPermanent(err))
	require.ErrorContains(t, err, "holds more than 25000 orders, as many as Shopify pages through in one query, and is too short to split")
	require.Len(t, shop.sent(), 1, "nothing asked past the limit")
}

func TestShopifyGraphQLTokens(t *testing.T) {
	shop := newGQLShop(t, gqlOrder{id: 1, updated: gqlFrom})
	c := newGQLConn(t, shop.start().URL, 2, nil)
	req := connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 2, Token: "eyJsYXN0X2lkIjo0NTA3ODk0NjksImRpcmVjdGlvbiI6Im5leHQifQ"}
	p, err := c.ListOrders(context.Background(), req)
	require.NoError(t, err, "a REST page_info (the platform just moved to GraphQL) starts the window over")
	require.Len(t, p.Orders, 1)
	require.Nil(t, shop.sent()[0].Variables["after"])

	for _, bad := range []string{"gql:x:o:1", "gql:5", "gql:5:", "gql:-1:o:1"} {
		req.Token = bad
		_, err = c.ListOrders(context.Background(), req)
		require.True(t, connectors.IsPermanent(err), bad)
		require.ErrorContains(t, err, "not one this connector issued")
	}
}

func TestShopifyGraphQLErrors(t *testing.T) {
	gid := func(id string) string { return `"gid://shopify/Order/` + id + `"` }
	okOrder := `{"id":` + gid("1") + `,"updatedAt":"2026-03-01T10:00:00Z","totalPriceSet":{"shopMoney":{"amount":"1.00","currencyCode":"EUR"}},` +
		`"lineItems":{"nodes":[],"pageInfo":{"hasNextPage":false,"endCursor":null}}}`
	page := func(nodes ...string) []byte {
		return []byte(`{"data":{"orders":{"nodes":[` + strings.Join(nodes, ",") + `],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}`)
	}
	with := func(old, new string) string { return strings.Replace(okOrder, old, new, 1) }
	malformed := func(wantOffset int64, want string) func(t *testing.T, err error) {
		return func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, 1, me.Page)
			if wantOffset >= 0 {
				require.Equal(t, wantOffset, me.Offset)
			}
			require.ErrorContains(t, err, want)
		}
	}
	start := int64(len(`{"data":{"orders":{"nodes":[`)) + int64(len(okOrder)) + 1 // the second order
	tests := []struct {
		name   string
		status int
		body   []byte
		token  string
		check  func(t *testing.T, err error)
	}{
		{"an id that is not an Order GID", 200, page(okOrder, with(gid("1"), `"gid://shopify/Product/7"`)), "",
			malformed(start, `order 1: id "gid://shopify/Product/7" is not a global id like gid://shopify/Order/123`)},
		{"an id that is a bare number", 200, page(okOrder, with(gid("1"), `"450789469"`)), "",
			malformed(start, `order 1: id "450789469" is not a global id like gid://shopify/Order/123`)},
		{"a bad updatedAt", 200, page(okOrder, with("2026-03-01T10:00:00Z", "yesterday")), "",
			malformed(start, `order 1: id 1: updatedAt "yesterday" is not an ISO 8601 time`)},
		{"an amount as a JSON number", 200, page(okOrder, with(`"1.00"`, `1.5`)), "",
			malformed(-1, "order 1: totalPriceSet.shopMoney.amount is a number, want a string")},
		{"no lineItems", 200, page(strings.Replace(okOrder, `,"lineItems":{"nodes":[],"pageInfo":{"hasNextPage":false,"endCursor":null}}`, "", 1)), "",
			malformed(-1, "order 0: id 1: lineItems is missing")},
		{"a line with a bad id", 200, page(with(`"nodes":[]`, `"nodes":[{"id":"gid://shopify/LineItem/x","quantity":1}]`)), "",
			malformed(-1, `order 0: id 1: line 0: id "gid://shopify/LineItem/x" is not a global id like gid://shopify/LineItem/123`)},
		{"a quantity as a string", 200, page(with(`"nodes":[]`, `"nodes":[{"id":"gid://shopify/LineItem/5","quantity":"2"}]`)), "",
			malformed(-1, "order 0: lineItems.nodes.quantity is a string, want an integer")},
		{"more lines but no cursor", 200, page(with(`"hasNextPage":false`, `"hasNextPage":true`)), "",
			malformed(-1, "order 0: id 1: lineItems.pageInfo has a next page but no endCursor")},
		{"more orders but no cursor", 200, []byte(strings.Replace(string(page(okOrder)), `"hasNextPage":false,"endCursor":null}}}}`, `"hasNextPage":true,"endCursor":null}}}}`, 1)), "",
			malformed(-1, `orders.pageInfo has a next page but endCursor "" does not move on`)},
		{"a truncated body", 200, page(okOrder)[:40], "", malformed(40, "unexpected end of JSON input")},
		{"no data", 200, []byte(`{"data":null}`), "", malformed(-1, `field "data.orders.nodes" is missing`)},
		{"MAX_COST_EXCEEDED is permanent", 200, fixture(t, "shopify/graphql_max_cost.json"), "", func(t *testing.T, err error) {
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, "MAX_COST_EXCEEDED: Query cost is 4252")
			require.ErrorContains(t, err, "(lower page_size or options.line_items_page_size)")
		}},
		{"ACCESS_DENIED names the scopes", 200, []byte(`{"errors":[{"message":"Access denied for orders field.","extensions":{"code":"ACCESS_DENIED"}}]}`), "", func(t *testing.T, err error) {
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, "ACCESS_DENIED: Access denied for orders field. (the app needs the read_orders scope, and read_all_orders for orders older than 60 days; credentials in file:")
		}},
		{"INTERNAL_SERVER_ERROR is transient", 200, []byte(`{"errors":[{"message":"Internal error. Looks like something went wrong on our end.","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`), "", func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
		}},
		{"a query Shopify rejects is permanent", 200, []byte(`{"errors":[{"message":"Field 'displayFulfilmentStatus' doesn't exist on type 'Order'","locations":[{"line":9,"column":7}]}]}`), "", func(t *testing.T, err error) {
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, "GraphQL Field 'displayFulfilmentStatus' doesn't exist")
		}},
		{"401 names the credential, never the token", 401, []byte(`{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`), "", func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, http.StatusUnauthorized, pe.Status)
			require.ErrorContains(t, err, "authentication failed: [API] Invalid API key or access token")
			require.NotContains(t, err.Error(), gqlToken)
		}},
		{"429 honours Retry-After", 429, []byte(`{"errors":"Too many requests"}`), "", func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
		}},
		{"5xx is transient", 502, []byte(`<html>bad gateway</html>`), "", func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shop := newGQLShop(t)
			shop.fault = func(w http.ResponseWriter, _ gqlRequest) bool {
				writeBody(w, tc.status, tc.body, "Retry-After", "2.0")
				return true
			}
			_, err := newGQLConn(t, shop.start().URL, 2, nil).ListOrders(context.Background(),
				connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1, Token: tc.token})
			tc.check(t, err)
		})
	}
}

func TestShopifyGraphQLFollowUpFailures(t *testing.T) {
	base := newGQLShop(t, gqlOrder{id: 7, updated: gqlFrom, lines: 3})
	tests := []struct {
		name  string
		lines func(w http.ResponseWriter, r gqlRequest)
		check func(t *testing.T, err error)
	}{
		{"the order vanished", func(w http.ResponseWriter, _ gqlRequest) {
			writeBody(w, http.StatusOK, []byte(`{"data":{"order":null}}`))
		}, func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
			require.ErrorContains(t, err, "order 7 vanished while its lines were listed")
		}},
		{"a malformed line names the order and where", func(w http.ResponseWriter, _ gqlRequest) {
			writeBody(w, http.StatusOK, []byte(`{"data":{"order":{"lineItems":{"nodes":[{"id":"gid://shopify/LineItem/9","quantity":1,`+
				`"originalUnitPriceSet":{"shopMoney":{"amount":"ten","currencyCode":"EUR"}}}],"pageInfo":{"hasNextPage":false}}}}}`))
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, int64(len(`{"data":{"order":{"lineItems":{"nodes":[`)), me.Offset)
			require.ErrorContains(t, err, `order 0 (id 7): lines: follow-up 1, line 0: id 9: originalUnitPriceSet amount "ten" is not a decimal number`)
		}},
		{"a cursor that does not move", func(w http.ResponseWriter, r gqlRequest) {
			writeBody(w, http.StatusOK, []byte(`{"data":{"order":{"lineItems":{"nodes":[],"pageInfo":{"hasNextPage":true,"endCursor":"`+r.Variables["after"].(string)+`"}}}}}`))
		}, func(t *testing.T, err error) {
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.ErrorContains(t, err, "lineItems.pageInfo has a next page but endCursor")
		}},
		{"throttled in the middle", func(w http.ResponseWriter, _ gqlRequest) {
			writeBody(w, http.StatusOK, fixture(t, "shopify/graphql_throttled.json"))
		}, func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl, "the page waits and is listed again whole")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shop := newGQLShop(t, base.orders...)
			shop.fault = func(w http.ResponseWriter, r gqlRequest) bool {
				if r.OperationName != "OrderLineItems" {
					return false
				}
				tc.lines(w, r)
				return true
			}
			p, err := newGQLConn(t, shop.start().URL, 2, map[string]any{"line_items_page_size": 1}).ListOrders(context.Background(),
				connectors.PageRequest{From: gqlFrom, To: gqlTo, Page: 1})
			require.Empty(t, p.Orders, "no order with part of its lines")
			tc.check(t, err)
		})
	}
}

func TestShopifyGraphQLDefaultsFromConfig(t *testing.T) {
	f, err := config.Parse([]byte("platforms:\n  s:\n    kind: shopify\n    endpoint: http://127.0.0.1:1\n    credentials: {env: S}\n"))
	require.NoError(t, err)
	p, _ := f.Get("s")
	require.Equal(t, 50, p.PageSize)
	// A default page is lowered to what the single-query maximum holds.
	cost := connectors.ShopifyOrderCost(connectors.ShopifyOrderFieldGroups, connectors.DefaultShopifyLineItemsPageSize, 0)
	fit := connectors.ShopifyPageFit(cost, connectors.ShopifyMaxQueryCost)
	require.Equal(t, 7, fit, "a full order of 4 lines requests %d points", cost)
	require.LessOrEqual(t, connectors.ShopifyOrdersQueryCost(fit, cost), connectors.ShopifyMaxQueryCost)
	require.Greater(t, connectors.ShopifyOrdersQueryCost(fit+1, cost), connectors.ShopifyMaxQueryCost)
	require.LessOrEqual(t, connectors.ShopifyLinesQueryCost(50), connectors.ShopifyMaxQueryCost)
}
