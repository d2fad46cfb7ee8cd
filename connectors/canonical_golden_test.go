package connectors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/order"
)

// go test ./connectors -run TestCanonicalGoldens -update rewrites the
// *.canonical.json goldens from the mappers; review the diff before
// committing it.
var updateGoldens = flag.Bool("update", false, "rewrite connectors/testdata/canonical/*.canonical.json from the mappers")

// canonicalGoldens are the kinds whose goldens this file makes: each
// <kind>.raw.json is a response of the kind's list call, served to the
// real connector; <kind>.canonical.json holds the canonical orders it
// returns. woocommerce.raw.json: order 727, the WooCommerce REST API
// docs' example order (woocommerce.github.io/woocommerce-rest-api-docs,
// "Retrieve an order"), and order 728 in the same documented fields with
// a coupon, a rate_percent, a refund and a customer note. ebay.raw.json: a
// getOrders page whose two orders use the documented fields of the
// Fulfillment API's Order type (developer.ebay.com, sell/fulfillment
// types: pricingSummary, fulfillmentStartInstructions.shippingStep.shipTo,
// lineItems with appliedPromotions and ebayCollectAndRemitTaxes,
// cancelStatus), one paid and open, one cancelled and refunded.
// sim.raw.json: the simulator's order JSON as sim/doc.go documents it,
// one order per status. http.raw.json: an API for the field mapping below.
var canonicalGoldens = []kindFixture{
	{name: "woocommerce", kind: "woocommerce", secret: `{"consumer_key":"ck_golden","consumer_secret":"cs_golden"}`, ordersPath: "/wp-json/wc/v3/orders"},
	{name: "ebay", kind: "ebay", secret: oauthSecret, oauth: true, ordersPath: "/sell/fulfillment/v1/order",
		options: func(tokenURL string) map[string]any { return map[string]any{"token_url": tokenURL} }},
	{name: "sim", kind: "sim", secret: "sim-bearer-secret", ordersPath: "/orders"},
	{name: "http", kind: "http", secret: "http-api-key-secret", ordersPath: "/orders",
		options: func(string) map[string]any {
			o := httpKindOptions("none")
			o["records_path"] = "data.orders"
			o["fields"] = map[string]any{"id": "order_no", "updated_at": "modified", "created_at": "created", "status": "state",
				"currency": "currency", "total": "amount"}
			o["lines"] = map[string]any{"path": "items", "id": "line", "sku": "sku", "title": "name", "quantity": "qty", "unit_price": "price"}
			return o
		}},
}

func goldenPath(kind, what string) string {
	return filepath.Join("testdata", "canonical", kind+"."+what+".json")
}

// fetchCanonical lists f's page through its connector and returns the
// canonical orders, checking each is filled in.
func fetchCanonical(t *testing.T, f kindFixture) []*order.Canonical {
	t.Helper()
	srv := httptest.NewServer(serveKind(f))
	defer srv.Close()
	var options map[string]any
	if f.options != nil {
		options = f.options(srv.URL + "/token")
	}
	c, err := connectors.New(config.Platform{Name: "shop-" + f.kind, Kind: f.kind, Endpoint: srv.URL, PageSize: 50,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, f.secret), Options: options})
	require.NoError(t, err)
	page, err := c.ListOrders(context.Background(), kindWindow)
	require.NoError(t, err)
	require.NotEmpty(t, page.Orders, "%s: no orders", f.name)
	out := make([]*order.Canonical, 0, len(page.Orders))
	for _, o := range page.Orders {
		require.NotNil(t, o.Canonical, "%s: order %s has no canonical form", f.name, o.ID)
		require.Equal(t, f.kind, o.Canonical.Kind)
		require.Equal(t, o.ID, o.Canonical.OrderID)
		out = append(out, o.Canonical)
	}
	return out
}

// TestCanonicalGoldens: each kind's documented response maps to its
// golden canonical orders.
func TestCanonicalGoldens(t *testing.T) {
	for _, f := range canonicalGoldens {
		t.Run(f.kind, func(t *testing.T) {
			raw, err := os.ReadFile(goldenPath(f.kind, "raw"))
			require.NoError(t, err)
			f.page = string(raw)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // goldens are read by people
			enc.SetIndent("", "  ")
			require.NoError(t, enc.Encode(fetchCanonical(t, f)))
			got := buf.Bytes()
			if *updateGoldens {
				require.NoError(t, os.WriteFile(goldenPath(f.kind, "canonical"), got, 0o644))
			}
			want, err := os.ReadFile(goldenPath(f.kind, "canonical"))
			require.NoError(t, err, "no golden yet: run with -update")
			require.Equal(t, string(want), string(got), "the canonical orders of %s changed; if that is meant, run with -update and review the diff", goldenPath(f.kind, "raw"))
		})
	}
}

// TestCanonicalGoldensMatchSchema validates every golden canonical order
// of every kind (a file holds one order or an array of them) against
// order/schema/order.v1.json with the JSON Schema library.
func TestCanonicalGoldensMatchSchema(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "canonical", "*.canonical.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), len(canonicalGoldens))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			docs := []json.RawMessage{b}
			if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '[' {
				require.NoError(t, json.Unmarshal(b, &docs))
				require.NotEmpty(t, docs, "%s holds no order", file)
			}
			for i, doc := range docs {
				require.NoError(t, order.ValidateCanonicalJSON(doc), "%s, order %d", file, i)
			}
		})
	}
}

// TestCanonicalOfEveryKindValidates: the canonical form of an order
// fetched by every kind's connector (the minimal orders of kindFixtures)
// is valid under the schema.
func TestCanonicalOfEveryKindValidates(t *testing.T) {
	for _, f := range kindFixtures {
		t.Run(f.name, func(t *testing.T) {
			for _, c := range fetchCanonical(t, f) {
				doc, err := json.Marshal(c)
				require.NoError(t, err)
				require.NoError(t, order.ValidateCanonicalJSON(doc), "%s", doc)
				require.Equal(t, order.SchemaV1, c.Schema)
			}
		})
	}
}

// TestCanonicalConformsHostileData: whatever a platform puts in the
// fields the canonical order reads, the canonical order stays valid
// under the schema (the raw order keeps what was said).
func TestCanonicalConformsHostileData(t *testing.T) {
	for _, tc := range []struct{ kind, raw string }{
		{"woocommerce", `{"id":1,"number":{"x":1},"status":"processing","total":"1e9","total_tax":"abc","discount_total":12.5,` +
			`"billing":{"country":"USA","email":7},"shipping":{"country":"us"},"tax_lines":[{"label":"VAT","tax_total":"x","rate_percent":"lots"}],` +
			`"coupon_lines":[{"code":"C","discount":"-"}],"shipping_lines":[{"total":null}],"line_items":[{"id":"","quantity":-3,"subtotal":"NaN"}]}`},
		{"woocommerce", `{"status":"wc-custom-status","billing":[]}`},
		{"ebay", `{"orderFulfillmentStatus":"LOST_IN_SPACE","orderPaymentStatus":"MAYBE","pricingSummary":{"total":{"value":"0x10","currency":"usd"},` +
			`"priceDiscount":{"value":"ten"}},"fulfillmentStartInstructions":[{"shippingStep":{"shipTo":{"contactAddress":{"countryCode":"GBR"}}}}],` +
			`"lineItems":[{"taxes":[{"taxType":"VAT","amount":{"value":"--1"}}],"appliedPromotions":[{"discountAmount":{"value":"."}}]}]}`},
		{"sim", `{"customer":{"address":{"country":"Germany"}},"status":"teleported"}`},
		{"http", `not json at all`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			o := connectors.Order{Platform: "p", ID: "1", Status: "weird", Currency: "eur0", Total: "1,00", Raw: json.RawMessage(tc.raw),
				HasLines: true, Lines: []connectors.OrderLine{{ID: "", Quantity: -1, UnitPrice: "free"}}}
			o.UpdatedAt = kindWindow.From
			c := connectors.Canonical(config.Platform{Name: "p", Kind: tc.kind}, o)
			doc, err := json.Marshal(c)
			require.NoError(t, err)
			require.NoError(t, order.ValidateCanonicalJSON(doc), "%s", doc)
			require.False(t, strings.Contains(string(doc), "1e9"), "%s", doc)
		})
	}
}

// TestCanonicalOfSimulatorOrdersValidates: every order the simulator
// serves over a day of history, listed by the sim connector and by the
// http kind configured for it, has a canonical form valid under the
// schema, and the sim's knows each simulator status.
func TestCanonicalOfSimulatorOrdersValidates(t *testing.T) {
	clk := newFakeClock()
	simConn, httpConn := simPair(t, clk, nil, "acme-token", 50, 5*time.Second)
	for _, c := range []connectors.Connector{simConn, httpConn} {
		req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now(), Page: 1}
		n := 0
		for ; ; req.Page++ {
			require.Less(t, req.Page, 200)
			page, err := c.ListOrders(context.Background(), req)
			require.NoError(t, err)
			for _, o := range page.Orders {
				doc, err := json.Marshal(o.Canonical)
				require.NoError(t, err)
				require.NoError(t, order.ValidateCanonicalJSON(doc), "%s", doc)
				if o.Canonical.Kind == "sim" {
					require.NotEqual(t, order.StatusUnknown, o.Canonical.Status, "%s", doc)
					require.NotNil(t, o.Canonical.Customer, "%s", doc)
				}
				n++
			}
			if page.NextToken == "" {
				break
			}
			req.Token = page.NextToken
		}
		require.Positive(t, n)
	}
}
