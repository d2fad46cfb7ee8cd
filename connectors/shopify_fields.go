package connectors

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The Order selection of the GraphQL connector: the fields an OMS needs to
// fulfil an order (the REST order resource's, docs/connectors.md has the
// table), in field groups an account may narrow (options.order_fields) and
// extend (options.order_fragment). Field names are the GraphQL Admin API's
// (https://shopify.dev/docs/api/admin-graphql/latest/objects/Order).
//
// Raw has ONE shape whichever way an order came (a page, order(id:), a bulk
// result): the Order node as selected, with every connection (lineItems,
// shippingLines, discountApplications) as {"nodes": [...]} holding all its
// nodes (those of follow-up queries, or a bulk result's child rows, put
// back under their order by __parentId), no pageInfo, no edges, no
// __parentId. Lists (refunds, fulfillments, taxLines) are arrays, as
// Shopify returns them. Keys are sorted (the node is re-encoded).

const shopifyMoney2 = "{ shopMoney { amount currencyCode } }"

const shopifyAddressFields = "{ name firstName lastName company address1 address2 city province provinceCode zip country countryCodeV2 phone }"

const shopifyTaxLineFields = "{ title rate priceSet " + shopifyMoney2 + " }"

// shopifyLineNode is a LineItem's selection (ShopifyLineCost).
const shopifyLineNode = "__typename id sku name title quantity originalUnitPriceSet " + shopifyMoney2 +
	" discountedTotalSet " + shopifyMoney2 + " totalDiscountSet " + shopifyMoney2 + " taxLines " + shopifyTaxLineFields

// shopifyNested is one of the order's connections or lists: what a page
// selects of it and how the rest of it is fetched.
type shopifyNested struct {
	field    string // on Order
	group    string // "" for lineItems, which are always fetched
	node     string // the node's (or element's) selection
	nodeCost int
	first    int  // in a page query; lineItems: options.line_items_page_size
	list     bool // a list Shopify truncates to first:, not a connection
	op       string
	typename func(string) bool // a bulk child row's __typename is one of this connection's
}

// shopifyDiscountApplications are the types of the DiscountApplication
// interface.
var shopifyDiscountApplications = []string{"AutomaticDiscountApplication", "DiscountCodeApplication", "ManualDiscountApplication", "ScriptDiscountApplication"}

var shopifyNestedFields = []shopifyNested{
	{field: "lineItems", node: shopifyLineNode, nodeCost: ShopifyLineCost, op: shopifyLinesOperation,
		typename: func(t string) bool { return t == "LineItem" }},
	{field: "shippingLines", group: ShopifyFieldsShippingLines, first: ShopifyShippingLinesFirst, nodeCost: 1 + 2 + 2 + 3,
		node: "__typename id title code source carrierIdentifier originalPriceSet " + shopifyMoney2 + " discountedPriceSet " + shopifyMoney2 +
			" taxLines " + shopifyTaxLineFields,
		op: "OrderShippingLines", typename: func(t string) bool { return t == "ShippingLine" }},
	{field: "discountApplications", group: ShopifyFieldsDiscounts, first: ShopifyDiscountsFirst, nodeCost: 1 + 1,
		node: "__typename allocationMethod targetSelection targetType index value { __typename ... on MoneyV2 { amount currencyCode } ... on PricingPercentageValue { percentage } }" +
			" ... on DiscountCodeApplication { code } ... on ManualDiscountApplication { title description }" +
			" ... on AutomaticDiscountApplication { title } ... on ScriptDiscountApplication { title }",
		op: "OrderDiscountApplications", typename: func(t string) bool { return slices.Contains(shopifyDiscountApplications, t) }},
	{field: "refunds", group: ShopifyFieldsRefunds, first: ShopifyRefundsFirst, list: true, nodeCost: 1 + 2,
		node: "id createdAt note totalRefundedSet " + shopifyMoney2, op: "OrderRefunds"},
	{field: "fulfillments", group: ShopifyFieldsFulfillments, first: ShopifyFulfillmentsFirst, list: true,
		nodeCost: 1 + ShopifyTrackingFirst,
		node:     "id name status displayStatus createdAt updatedAt trackingInfo(first: " + strconv.Itoa(ShopifyTrackingFirst) + ") { company number url }",
		op:       "OrderFulfillments"},
}

func nestedField(field string) (shopifyNested, bool) {
	for _, n := range shopifyNestedFields {
		if n.field == field {
			return n, true
		}
	}
	return shopifyNested{}, false
}

// shopifyFields is a platform's Order selection.
type shopifyFields struct {
	groups      []string
	fragment    string
	fragObjects int
	lines       int
}

func newShopifyFields(opts ShopifyOptions) shopifyFields {
	groups := opts.OrderFields
	if groups == nil {
		groups = ShopifyOrderFieldGroups
	}
	objects, _ := CheckShopifyFragment(opts.OrderFragment) // checked when the config loaded
	return shopifyFields{groups: groups, fragment: opts.OrderFragment, fragObjects: objects, lines: opts.LineItemsPageSize}
}

func (f shopifyFields) has(group string) bool { return group == "" || slices.Contains(f.groups, group) }

// orderCost is the requested cost of one Order node.
func (f shopifyFields) orderCost() int {
	return ShopifyOrderCost(f.groups, f.lines, f.fragObjects)
}

// nested are the order's connections and lists this selection has.
func (f shopifyFields) nested() []shopifyNested {
	var out []shopifyNested
	for _, n := range shopifyNestedFields {
		if f.has(n.group) {
			out = append(out, n)
		}
	}
	return out
}

// selection is the Order node's selection. A page or order(id:) query
// pages the connections (first: with pageInfo, lineItems by $lines); a
// bulk query lists them whole (edges, no first:) and its lists untruncated.
func (f shopifyFields) selection(bulk bool) string {
	var b strings.Builder
	b.WriteString("id name createdAt updatedAt processedAt cancelledAt cancelReason closedAt displayFinancialStatus displayFulfillmentStatus currencyCode taxesIncluded")
	for _, m := range []string{"subtotalPriceSet", "totalShippingPriceSet", "totalTaxSet", "totalDiscountsSet", "totalPriceSet"} {
		b.WriteString(" " + m + " " + shopifyMoney2)
	}
	scalars := map[string]string{
		ShopifyFieldsCustomer:  "email phone customer { id displayName firstName lastName defaultEmailAddress { emailAddress } defaultPhoneNumber { phoneNumber } }",
		ShopifyFieldsAddresses: "billingAddress " + shopifyAddressFields + " shippingAddress " + shopifyAddressFields,
		ShopifyFieldsTaxLines:  "taxLines " + shopifyTaxLineFields,
		ShopifyFieldsDiscounts: "discountCodes",
		ShopifyFieldsNotes:     "tags note customAttributes { key value }",
		ShopifyFieldsPayment:   "paymentGatewayNames",
		ShopifyFieldsRefunds:   "totalRefundedSet " + shopifyMoney2,
	}
	for _, g := range ShopifyOrderFieldGroups {
		if f.has(g) && scalars[g] != "" {
			b.WriteString(" " + scalars[g])
		}
	}
	for _, n := range f.nested() {
		b.WriteString(" " + n.field)
		switch {
		case bulk && n.list:
			b.WriteString(" { " + n.node + " }")
		case bulk:
			b.WriteString(" { edges { node { " + n.node + " } } }")
		case n.list:
			b.WriteString("(first: " + strconv.Itoa(n.first) + ") { " + n.node + " }")
		default:
			first := strconv.Itoa(n.first)
			if n.field == "lineItems" {
				first = "$lines"
			}
			b.WriteString("(first: " + first + ") { nodes { " + n.node + " } pageInfo { hasNextPage endCursor } }")
		}
	}
	if f.fragment != "" {
		b.WriteString(" " + f.fragment)
	}
	return b.String()
}

// ordersQuery is the page query.
func (f shopifyFields) ordersQuery() string {
	return `query OrdersUpdatedInWindow($first: Int!, $after: String, $query: String!, $lines: Int!) {
  orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes { ` + f.selection(false) + ` }
    pageInfo { hasNextPage endCursor }
  }
}`
}

// orderQuery is order(id:), the get-one-order call.
func (f shopifyFields) orderQuery() string {
	return `query OrderByID($id: ID!, $lines: Int!) {
  order(id: $id) { ` + f.selection(false) + ` }
}`
}

// bulkQuery is the bulk query for a window's orders.
func (f shopifyFields) bulkQuery(search string) string {
	return `{
  orders(query: ` + strconv.Quote(search) + `, sortKey: UPDATED_AT) {
    edges { node { ` + f.selection(true) + ` } }
  }
}`
}

// followUpFirst is the first: of a follow-up query for more of n: 50
// nodes of a connection (50 lines request 503 points, half the smallest
// bucket), as many elements of a list as one query may hold; never more
// than limit (the single-query maximum or a smaller bucket) allows, and
// at least one.
func followUpFirst(n shopifyNested, limit float64) int {
	if !n.list {
		return max(1, min(50, int((limit-3)/float64(n.nodeCost))))
	}
	return max(1, min(ShopifyMaxConnectionSize, int((limit-1)/float64(n.nodeCost))))
}

// followUpQuery is the query for the rest of one order's connection (from
// $after on) or, for a list, for as much of it as one query may hold, and
// its requested cost.
func followUpQuery(n shopifyNested, limit float64) (string, int) {
	first := followUpFirst(n, limit)
	if n.list {
		return `query ` + n.op + `($id: ID!) {
  order(id: $id) { ` + n.field + `(first: ` + strconv.Itoa(first) + `) { ` + n.node + ` } }
}`, 1 + first*n.nodeCost
	}
	return `query ` + n.op + `($id: ID!, $first: Int!, $after: String) {
  order(id: $id) {
    ` + n.field + `(first: $first, after: $after) {
      nodes { ` + n.node + ` }
      pageInfo { hasNextPage endCursor }
    }
  }
}`, 1 + 2 + first*n.nodeCost
}

// shopifyConn is a connection as a page answers it.
type shopifyConn struct {
	Nodes    []json.RawMessage `json:"nodes"`
	PageInfo shopifyPageInfo   `json:"pageInfo"`
}

// reshape puts an Order node of a page or order(id:) answer into Raw's one
// shape, and says which of its connections go on (field -> endCursor) and
// which lists may have been truncated.
func (f shopifyFields) reshape(raw json.RawMessage) (json.RawMessage, map[string]string, []string, error) {
	var node map[string]json.RawMessage
	if err := json.Unmarshal(raw, &node); err != nil {
		return nil, nil, nil, err
	}
	more := map[string]string{}
	var full []string
	for _, n := range f.nested() {
		v, ok := node[n.field]
		if !ok || string(v) == "null" {
			continue
		}
		if n.list {
			var els []json.RawMessage
			if err := json.Unmarshal(v, &els); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", n.field, describeFieldError(err))
			}
			if len(els) >= n.first {
				full = append(full, n.field)
			}
			continue
		}
		var c shopifyConn
		if err := json.Unmarshal(v, &c); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", n.field, describeFieldError(err))
		}
		if c.PageInfo.HasNextPage {
			if c.PageInfo.EndCursor == "" {
				return nil, nil, nil, fmt.Errorf("%s.pageInfo has a next page but no endCursor", n.field)
			}
			more[n.field] = c.PageInfo.EndCursor
		}
		node[n.field] = nodesOnly(c.Nodes)
	}
	out, err := json.Marshal(node)
	return out, more, full, err
}

func nodesOnly(nodes []json.RawMessage) json.RawMessage {
	if nodes == nil {
		nodes = []json.RawMessage{}
	}
	b, _ := json.Marshal(map[string][]json.RawMessage{"nodes": nodes})
	return b
}

// extendRaw appends nodes to a connection of a reshaped Order node, or
// replaces a list with a longer one.
func extendRaw(raw json.RawMessage, field string, list bool, nodes []json.RawMessage) (json.RawMessage, error) {
	var node map[string]json.RawMessage
	if err := json.Unmarshal(raw, &node); err != nil {
		return nil, err
	}
	if list {
		b, err := json.Marshal(nodes)
		if err != nil {
			return nil, err
		}
		node[field] = b
	} else {
		var c struct {
			Nodes []json.RawMessage `json:"nodes"`
		}
		if v, ok := node[field]; ok {
			if err := json.Unmarshal(v, &c); err != nil {
				return nil, err
			}
		}
		node[field] = nodesOnly(append(c.Nodes, nodes...))
	}
	return json.Marshal(node)
}

// childConnection is the connection a bulk result's child row belongs to,
// by its __typename; a row without one (results of queries before the
// full selection) is a line item when its id says so.
func (f shopifyFields) childConnection(typename, id string) string {
	if typename == "" && strings.HasPrefix(id, "gid://shopify/LineItem/") {
		return "lineItems"
	}
	for _, n := range f.nested() {
		if !n.list && n.typename(typename) {
			return n.field
		}
	}
	return ""
}

// withoutParent is a child row without its __parentId: the node as a
// page lists it.
func withoutParent(row []byte) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(row, &m); err != nil {
		return nil, err
	}
	delete(m, "__parentId")
	return json.Marshal(m)
}

// assemble is a bulk result's order in Raw's one shape: its own row with
// each selected connection as {"nodes": [its child rows]}.
func (f shopifyFields) assemble(row json.RawMessage, children map[string][]json.RawMessage) (json.RawMessage, error) {
	var node map[string]json.RawMessage
	if err := json.Unmarshal(row, &node); err != nil {
		return nil, err
	}
	for _, n := range f.nested() {
		if !n.list {
			node[n.field] = nodesOnly(children[n.field])
		}
	}
	return json.Marshal(node)
}
