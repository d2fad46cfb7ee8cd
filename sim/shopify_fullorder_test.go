package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullOrderQuery selects a few of the full order's fields: the connector's
// shape (connections by first:, lists, an interface's inline fragments).
const fullOrderQuery = `query OrderByID($id: ID!) {
  order(id: $id) {
    id name email
    customer { id defaultEmailAddress { emailAddress } }
    shippingAddress { city countryCodeV2 }
    totalPriceSet { shopMoney { amount currencyCode } }
    lineItems(first: 2) { nodes { __typename id sku quantity taxLines { title rate priceSet { shopMoney { amount } } } } pageInfo { hasNextPage endCursor } }
    discountApplications(first: 5) { nodes { __typename value { __typename ... on MoneyV2 { amount } ... on PricingPercentageValue { percentage } } ... on DiscountCodeApplication { code } } }
    fulfillments(first: 5) { status trackingInfo(first: 3) { company number } }
  }
}`

// TestShopifyCostOfASelection: the requested cost is Shopify's rule over
// the selection received; the actual cost counts what was returned.
func TestShopifyCostOfASelection(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(5, clk))
	code, body := gql(t, ts.URL, "acme", "acme-token", "OrderByID", fullOrderQuery, map[string]any{"id": "gid://shopify/Order/1000000001"})
	require.Equal(t, http.StatusOK, code)
	a := decodeAnswer(t, body)
	require.Empty(t, a.Errors, string(body))
	// order 1 + customer 2 + shippingAddress 1 + totalPriceSet 2 + lineItems 2+2x(1+3)
	// + discountApplications 2+5x(1+1) + fulfillments 5x(1+3).
	require.Equal(t, 1+2+1+2+(2+2*4)+(2+5*2)+5*4, a.Extensions.Cost.RequestedQueryCost)
	require.LessOrEqual(t, *a.Extensions.Cost.ActualQueryCost, a.Extensions.Cost.RequestedQueryCost)
	var data struct {
		Data struct {
			Order map[string]json.RawMessage `json:"order"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &data))
	o := data.Data.Order
	require.Len(t, o, 9, "exactly the fields selected: %s", body)
	require.Contains(t, string(o["email"]), "@example.com")
	require.Contains(t, string(o["lineItems"]), `"__typename":"LineItem"`)
	require.Contains(t, string(o["lineItems"]), `"rate":0.2,"title":"VAT"`)
	require.NotContains(t, string(o["lineItems"]), `"name"`, "a field not selected is not answered")
}

// TestShopifyRefusesAsShopifyDoes: a query over the single-query maximum
// with Shopify's MAX_COST_EXCEEDED text, a field Order does not have, a
// scalar given a selection; order(id:) of an unknown order is null.
func TestShopifyRefusesAsShopifyDoes(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(5, clk))
	id := map[string]any{"id": "gid://shopify/Order/1000000001"}
	for _, tc := range []struct{ name, query, want string }{
		{"over 1,000 points", strings.Replace(fullOrderQuery, "lineItems(first: 2)", "lineItems(first: 250)", 1),
			"Query cost is 1040, which exceeds the single query max cost limit (1000).\n\nSee https://shopify.dev/concepts/about-apis/rate-limits"},
		{"no such field", strings.Replace(fullOrderQuery, "id name email", "id name email colour", 1), "Field 'colour' doesn't exist on type 'Order'"},
		{"a selection on a scalar", strings.Replace(fullOrderQuery, "id name email", "id name { first } email", 1), "Selections can't be made on scalars"},
		{"a connection without first", strings.Replace(fullOrderQuery, "lineItems(first: 2)", "lineItems", 1), "you must provide one of first or last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body := gql(t, ts.URL, "acme", "acme-token", "OrderByID", tc.query, id)
			a := decodeAnswer(t, body)
			require.Len(t, a.Errors, 1, string(body))
			require.Contains(t, a.Errors[0].Message, tc.want)
			require.Nil(t, a.Extensions.Cost, "a refused query is not charged")
		})
	}
	_, body := gql(t, ts.URL, "acme", "acme-token", "OrderByID", fullOrderQuery, map[string]any{"id": "gid://shopify/Order/1000099999"})
	require.Contains(t, string(body), `"data":{"order":null}`)
}
