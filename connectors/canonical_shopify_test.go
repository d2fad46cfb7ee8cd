package connectors

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

// updatingGoldens says whether -update was given: rewrite the canonical
// goldens in testdata/canonical from the mappers' output (go test -run
// TestCanonicalGolden ./connectors/ -update). The flag is registered by
// the external test package (canonical_update_flag_test.go), which every
// golden test of the package shares.
func updatingGoldens() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// goldenCanonical compares the canonical form of o with
// testdata/canonical/<name>.canonical.json.
func goldenCanonical(t *testing.T, p config.Platform, o Order, name string) *order.Canonical {
	t.Helper()
	c := Canonical(p, o)
	got, err := json.MarshalIndent(c, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "canonical", name+".canonical.json")
	if updatingGoldens() {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write the golden")
	require.JSONEq(t, string(want), string(got), "%s: the mapping changed; check it and rerun with -update", name)
	return c
}

func readRaw(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "canonical", name+".raw.json"))
	require.NoError(t, err)
	return b
}

func shopifyPlatform(t *testing.T, api string) config.Platform {
	t.Helper()
	f, err := config.Parse([]byte("platforms:\n  shop:\n    kind: shopify\n    endpoint: https://acme.myshopify.com\n    credentials: {env: S}\n    options: {api: " + api + "}\n"))
	require.NoError(t, err)
	p, _ := f.Get("shop")
	return p
}

// shopifyGraphQLExample is the REST reference's example order (450789469)
// as the GraphQL connector stores it, and the REST one as the REST
// connector does, both through the connectors' own decoding.
func shopifyExamples(t *testing.T) (gql, rest Order) {
	raw := readRaw(t, "shopify-graphql")
	var n shopifyNode
	require.NoError(t, json.Unmarshal(raw, &n))
	gc := &shopifyGraphQL{platform: "shop", fields: newShopifyFields(ShopifyOptions{LineItemsPageSize: 4})}
	gql, more, err := gc.pagedOrder(n, raw)
	require.NoError(t, err)
	require.Empty(t, more)

	raw = readRaw(t, "shopify-rest")
	var so shopifyOrder
	require.NoError(t, json.Unmarshal(raw, &so))
	rest, err = (&shopifyConnector{platform: "shop"}).order(so, raw)
	require.NoError(t, err)
	return gql, rest
}

func TestCanonicalGoldenShopify(t *testing.T) {
	gql, rest := shopifyExamples(t)
	g := goldenCanonical(t, shopifyPlatform(t, "graphql"), gql, "shopify-graphql")
	r := goldenCanonical(t, shopifyPlatform(t, "rest"), rest, "shopify-rest")
	require.Equal(t, "graphql", g.Source)
	require.Equal(t, "rest", r.Source)
	require.Equal(t, order.StatusOpen, g.Status)
	require.Equal(t, order.FinancialPartiallyRefunded, g.FinancialStatus)
	require.Equal(t, "partially_refunded", g.PlatformStatus, "the platform's word is kept")
	require.Equal(t, order.Totals{Subtotal: "597.00", Shipping: "0.00", Tax: "11.94", Discount: "10.00", Total: "598.94"}, g.Totals)
	require.Equal(t, &order.Customer{ID: "207119551", Email: "bob.norman@mail.example.com", Name: "Bob Norman", Phone: "+557734881234"}, g.Customer)
}

// TestCanonicalShopifyRESTAndGraphQLAgree: the same order through either
// API gives the same canonical OMS fields; only Source (and the times'
// zone, already UTC) tell them apart.
func TestCanonicalShopifyRESTAndGraphQLAgree(t *testing.T) {
	gql, rest := shopifyExamples(t)
	require.Equal(t, rest.ID, gql.ID)
	require.Equal(t, rest.UpdatedAt, gql.UpdatedAt)
	g := Canonical(shopifyPlatform(t, "graphql"), gql)
	r := Canonical(shopifyPlatform(t, "rest"), rest)
	g.Source, r.Source = "", ""
	require.Equal(t, r, g)
}

// Each field group, in either API's documented response shape, reaches
// the canonical order; a group left out leaves its canonical fields empty
// rather than wrong. The REST keys are the group's fields in the REST
// order resource (docs/connectors.md's table).
func TestCanonicalShopifyFieldGroups(t *testing.T) {
	type group struct {
		gql, rest []string
		check     func(*order.Canonical) bool
	}
	groups := map[string]group{
		ShopifyFieldsCustomer: {[]string{"email", "phone", "customer"}, []string{"email", "phone", "customer"},
			func(c *order.Canonical) bool {
				return c.Customer != nil && c.Customer.Email == "bob.norman@mail.example.com"
			}},
		ShopifyFieldsAddresses: {[]string{"billingAddress", "shippingAddress"}, []string{"billing_address", "shipping_address"},
			func(c *order.Canonical) bool {
				return c.BillingAddress != nil && c.ShippingAddress != nil && c.ShippingAddress.City == "Louisville"
			}},
		ShopifyFieldsShippingLines: {[]string{"shippingLines"}, []string{"shipping_lines"},
			func(c *order.Canonical) bool { return len(c.Shipping) == 1 && c.Shipping[0].Title == "Free Shipping" }},
		ShopifyFieldsTaxLines: {[]string{"taxLines"}, []string{"tax_lines"},
			func(c *order.Canonical) bool { return len(c.Taxes) == 1 && c.Taxes[0].Rate == "0.06" }},
		ShopifyFieldsDiscounts: {[]string{"discountApplications", "discountCodes"}, []string{"discount_applications", "discount_codes"},
			func(c *order.Canonical) bool { return len(c.Discounts) == 1 && c.Discounts[0].Code == "TENOFF" }},
		ShopifyFieldsNotes: {[]string{"tags", "note"}, []string{"tags", "note"},
			func(c *order.Canonical) bool { return c.Note == "leave at the door" && len(c.Tags) == 2 }},
	}
	for _, api := range []string{"graphql", "rest"} {
		raw := readRaw(t, "shopify-"+api)
		// The documented order has no tags and no note: give it some, in
		// each API's shape.
		var node map[string]any
		require.NoError(t, json.Unmarshal(raw, &node))
		node["note"] = "leave at the door"
		if api == "graphql" {
			node["tags"] = []string{"vip", "wholesale"}
		} else {
			node["tags"] = "vip, wholesale"
		}
		raw, _ = json.Marshal(node)
		p := shopifyPlatform(t, api)
		for g, tc := range groups {
			t.Run(api+"/"+g, func(t *testing.T) {
				keys := tc.gql
				if api == "rest" {
					keys = tc.rest
				}
				with := Canonical(p, Order{Platform: "shop", ID: "450789469", Raw: raw})
				require.True(t, tc.check(with), "the group's fields are mapped: %+v", with)
				var n map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(raw, &n))
				for _, k := range keys {
					delete(n, k)
				}
				b, _ := json.Marshal(n)
				without := Canonical(p, Order{Platform: "shop", ID: "450789469", Raw: b})
				require.False(t, tc.check(without), "without the group its canonical fields stay empty")
			})
		}
	}
}
