package connectors_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// linesKind describes, for one kind, a one-order page whose line items are
// given as raw JSON, and one line item in the kind's own shape.
type linesKind struct {
	fixture string                               // the kindFixtures entry whose server and settings to use
	options func(tokenURL string) map[string]any // nil: the fixture's
	ids     bool                                 // the API gives lines ids (else: positions)
	// page is a page with one order; items is the raw JSON of its line
	// items, "" to leave the field out.
	page func(items string) string
	// item is one line item: id ("" for none), quantity and unit price.
	item func(id string, qty int, price string) string
}

// withField appends `,"name":items` before the closing brace of an order.
func withField(order, name, items string) string {
	if items == "" {
		return order
	}
	return strings.TrimSuffix(order, "}") + fmt.Sprintf(`,%q:%s}`, name, items)
}

// member is `"name":value,` or nothing when value is "".
func member(name, value string) string {
	if value == "" {
		return ""
	}
	return fmt.Sprintf("%q:%s,", name, value)
}

// times is price x qty for a plain two-decimal price; anything else as is.
func times(price string, qty int) string {
	units, cents, ok := strings.Cut(price, ".")
	u, err1 := strconv.Atoi(units)
	c, err2 := strconv.Atoi(cents)
	if !ok || err1 != nil || err2 != nil || len(cents) != 2 {
		return price
	}
	total := (u*100 + c) * qty
	return fmt.Sprintf("%d.%02d", total/100, total%100)
}

var linesKinds = []linesKind{
	{fixture: "sim",
		page: func(items string) string {
			return pageJSON("", withField(`{"id":"S-1","updated_at":"2026-03-01T10:30:00Z","currency":"EUR","total":"1.00"}`, "line_items", items))
		},
		item: func(_ string, qty int, price string) string {
			return fmt.Sprintf(`{"sku":"A","title":"T","qty":%d,"price":%q}`, qty, price)
		}},
	{fixture: "shopify", ids: true,
		page: func(items string) string {
			return `{"orders":[` + withField(`{"id":1001,"updated_at":"2026-03-01T10:30:00Z","currency":"EUR","total_price":"1.00"}`, "line_items", items) + `]}`
		},
		item: func(id string, qty int, price string) string {
			return fmt.Sprintf(`{%s"sku":"A","title":"T","quantity":%d,"price":%q}`, member("id", id), qty, price)
		}},
	{fixture: "amazon", ids: true,
		page: func(items string) string {
			return `{"orders":[` + withField(`{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z"}`, "orderItems", items) + `]}`
		},
		item: func(id string, qty int, price string) string {
			return fmt.Sprintf(`{%s"quantityOrdered":%d,"product":{"sellerSku":"A","title":"T","price":{"unitPrice":{"amount":%q,"currencyCode":"EUR"}}}}`,
				member("orderItemId", strconv.Quote(id)), qty, price)
		}},
	{fixture: "ebay", ids: true,
		page: func(items string) string {
			return `{"orders":[` + withField(`{"orderId":"E-1","lastModifiedDate":"2026-03-01T10:30:00.000Z","pricingSummary":{"total":{"value":"1.00","currency":"EUR"}}}`, "lineItems", items) + `]}`
		},
		item: func(id string, qty int, price string) string {
			return fmt.Sprintf(`{%s"sku":"A","title":"T","quantity":%d,"lineItemCost":{"value":%q,"currency":"EUR"}}`,
				member("lineItemId", strconv.Quote(id)), qty, times(price, qty))
		}},
	{fixture: "woocommerce basic auth", ids: true,
		page: func(items string) string {
			return `[` + withField(`{"id":5,"date_modified_gmt":"2026-03-01T10:30:00","currency":"EUR","total":"1.00"}`, "line_items", items) + `]`
		},
		item: func(id string, qty int, price string) string {
			return fmt.Sprintf(`{%s"name":"T","sku":"A","quantity":%d,"price":%s}`, member("id", id), qty, price) // price: a JSON number
		}},
	{fixture: "http header auth", ids: true,
		options: func(string) map[string]any {
			o := httpKindOptions("link")
			o["fields"] = map[string]any{"id": "id", "updated_at": "updated_at", "currency": "currency"}
			o["lines"] = map[string]any{"path": "items", "id": "line_id", "sku": "sku", "title": "name", "quantity": "qty", "unit_price": "price"}
			return o
		},
		page: func(items string) string {
			return `{"orders":[` + withField(`{"id":"H-1","updated_at":"2026-03-01T10:30:00Z","currency":"EUR"}`, "items", items) + `]}`
		},
		item: func(id string, qty int, price string) string {
			return fmt.Sprintf(`{%s"sku":"A","name":"T","qty":%d,"price":%q}`, member("line_id", strconv.Quote(id)), qty, price)
		}},
}

// TestEveryKindFillsLines: every kind whose API lists lines turns them
// into Order.Lines with HasLines, tells "no lines" ([]) from "lines not
// listed" (absent or null: the store keeps what it has), and refuses a
// line no platform means as a malformed page.
func TestEveryKindFillsLines(t *testing.T) {
	byName := map[string]kindFixture{}
	for _, f := range kindFixtures {
		byName[f.name] = f
	}
	for _, k := range linesKinds {
		f, ok := byName[k.fixture]
		require.True(t, ok, k.fixture)
		if k.options != nil {
			f.options = k.options
		}
		two := "[" + k.item("11", 2, "2.50") + "," + k.item("12", 1, "0.99") + "]"
		wantTwo := []connectors.OrderLine{
			{ID: "11", SKU: "A", Title: "T", Quantity: 2, UnitPrice: "2.50", Currency: "EUR"},
			{ID: "12", SKU: "A", Title: "T", Quantity: 1, UnitPrice: "0.99", Currency: "EUR"},
		}
		if !k.ids {
			wantTwo[0].ID, wantTwo[1].ID = "1", "2"
		}
		tests := []linesCase{
			{name: "listed without lines", items: ""},
			{name: "lines null", items: "null"},
			{name: "no lines", items: "[]", hasLines: true},
			{name: "two lines", items: two, hasLines: true, lines: wantTwo},
			{name: "negative quantity", items: "[" + k.item("11", -1, "2.50") + "]", err: "-1 is negative"},
			{name: "unit price not a decimal", items: "[" + k.item("11", 1, "1.5e2") + "]", err: `"1.5e2" is not a decimal number`},
		}
		if k.ids {
			tests = append(tests,
				linesCase{name: "repeated line id", items: "[" + k.item("11", 1, "1.00") + "," + k.item("11", 2, "1.00") + "]", err: "11 appears twice"},
				linesCase{name: "line without id", items: "[" + k.item("", 1, "1.00") + "]", err: "missing"})
		}
		for _, tc := range tests {
			t.Run(k.fixture+"/"+tc.name, func(t *testing.T) {
				g := f
				g.page = k.page(tc.items)
				ts := httptest.NewServer(serveKind(g))
				defer ts.Close()
				p, err := kindPlatform(t, g, ts.URL, ts.URL).ListOrders(context.Background(), kindWindow)
				if tc.err != "" {
					var me *connectors.MalformedError
					require.ErrorAs(t, err, &me)
					require.ErrorContains(t, err, "order 0: ")
					require.ErrorContains(t, err, tc.err)
					return
				}
				require.NoError(t, err)
				require.Len(t, p.Orders, 1)
				o := p.Orders[0]
				require.Equal(t, tc.hasLines, o.HasLines)
				require.Equal(t, tc.lines, emptyAsNil(o.Lines))
				if tc.hasLines {
					require.Equal(t, len(tc.lines), o.LineCount)
				}
			})
		}
	}
}

type linesCase struct {
	name, items string
	hasLines    bool
	lines       []connectors.OrderLine
	err         string // a malformed page, naming this
}

func emptyAsNil(lines []connectors.OrderLine) []connectors.OrderLine {
	if len(lines) == 0 {
		return nil
	}
	return lines
}

// TestHTTPKindLinesOfTheWrongShape: what options.lines finds must be an
// array of objects with a whole quantity; anything else is a malformed page
// that says what it found.
func TestHTTPKindLinesOfTheWrongShape(t *testing.T) {
	var k linesKind
	for _, lk := range linesKinds {
		if lk.fixture == "http header auth" {
			k = lk
		}
	}
	var f kindFixture
	for _, kf := range kindFixtures {
		if kf.name == k.fixture {
			f = kf
		}
	}
	f.options = k.options
	for _, tc := range []struct{ items, err string }{
		{`"two lines"`, `lines at "items" is a string, not an array`},
		{`{"line_id":"1"}`, `lines at "items" is an object, not an array`},
		{`[1]`, `items[0]: is a number, not an object`},
		{`[{"line_id":{"a":1},"qty":1}]`, `items[0]: id at "line_id" is an object, want a string or number`},
		{`[{"line_id":"1"}]`, `items[0]: line 1: missing quantity at "qty"`},
		{`[{"line_id":"1","qty":2.5}]`, `items[0]: line 1: qty is 2.5, not a whole number`},
		{`[{"line_id":"1","qty":"two"}]`, `items[0]: line 1: qty is "two", not a whole number`},
		{`[{"line_id":"1","qty":1,"sku":["a"]}]`, `items[0]: line 1: sku is ["a"], not a single value`},
	} {
		t.Run(tc.items, func(t *testing.T) {
			g := f
			g.page = k.page(tc.items)
			ts := httptest.NewServer(serveKind(g))
			defer ts.Close()
			_, err := kindPlatform(t, g, ts.URL, ts.URL).ListOrders(context.Background(), kindWindow)
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.ErrorContains(t, err, "order 0: id H-1: "+tc.err)
		})
	}
}
