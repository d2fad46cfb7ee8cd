package connectors

// What the GraphQL Admin API allows, from
// https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits and
// https://shopify.dev/docs/api/usage/limits.
const (
	// DefaultShopifyRestoreRate is the standard plans' restore rate in
	// points a second (Advanced 200, Plus 1,000, Enterprise 2,000).
	DefaultShopifyRestoreRate = 100.0
	// DefaultShopifyMaxCostAvailable is the bucket ordersync assumes: 20
	// seconds of the standard restore rate. The connector follows the
	// smaller maximumAvailable Shopify reports in every response.
	DefaultShopifyMaxCostAvailable = 2000.0
	// ShopifyMaxQueryCost is the single query limit: a query whose requested
	// cost is higher is refused (MAX_COST_EXCEEDED).
	ShopifyMaxQueryCost = 1000
	// ShopifyPaginationLimit is how many objects one query pages through
	// at most.
	ShopifyPaginationLimit = 25000
	// DefaultShopifyLineItemsPageSize is the lines listed with each order;
	// an order with more gets the rest by follow-up queries.
	DefaultShopifyLineItemsPageSize = 4
	// ShopifyMaxConnectionSize is the largest first a connection accepts.
	ShopifyMaxConnectionSize = 250
)

// The order field groups of the GraphQL connector (options.order_fields):
// what it fetches of each order beside the header, the totals, the
// statuses and the lines, which it always fetches. Customer and addresses
// are the buyer's personal data.
const (
	ShopifyFieldsCustomer      = "customer"       // email, phone, customer {id, name, email, phone}
	ShopifyFieldsAddresses     = "addresses"      // billingAddress, shippingAddress
	ShopifyFieldsShippingLines = "shipping_lines" // shippingLines with their prices and taxes
	ShopifyFieldsTaxLines      = "tax_lines"      // taxLines
	ShopifyFieldsDiscounts     = "discounts"      // discountCodes, discountApplications
	ShopifyFieldsNotes         = "notes"          // tags, note, customAttributes
	ShopifyFieldsPayment       = "payment"        // paymentGatewayNames
	ShopifyFieldsRefunds       = "refunds"        // totalRefundedSet, refunds
	ShopifyFieldsFulfillments  = "fulfillments"   // fulfillments with their tracking info
)

// ShopifyOrderFieldGroups are the groups in the order the query lists them;
// all of them are fetched by default.
var ShopifyOrderFieldGroups = []string{ShopifyFieldsCustomer, ShopifyFieldsAddresses, ShopifyFieldsShippingLines,
	ShopifyFieldsTaxLines, ShopifyFieldsDiscounts, ShopifyFieldsNotes, ShopifyFieldsPayment, ShopifyFieldsRefunds, ShopifyFieldsFulfillments}

// The first: of the order's nested connections and lists. An order with
// more shipping lines or discount applications gets the rest by follow-up
// queries, as its lines do; refunds and fulfillments are lists, which
// Shopify truncates to first: (an order with more gets them by one
// follow-up query each, ShopifyListFollowUp).
const (
	ShopifyShippingLinesFirst = 3
	ShopifyDiscountsFirst     = 5
	ShopifyRefundsFirst       = 5
	ShopifyFulfillmentsFirst  = 5
	ShopifyTrackingFirst      = 3
)

// shopifyGroupCost is each group's requested cost per order by Shopify's
// rule (an object 1, a scalar or enum 0, a connection 2 plus first times
// its node, a list first times its element, an interface or union the
// most of its members; a money bag and its shopMoney are 2 objects).
var shopifyGroupCost = map[string]int{
	ShopifyFieldsCustomer:      3,                                       // customer, defaultEmailAddress, defaultPhoneNumber
	ShopifyFieldsAddresses:     2,                                       // billingAddress, shippingAddress
	ShopifyFieldsShippingLines: 2 + ShopifyShippingLinesFirst*(1+2+2+3), // line, 2 money bags, a tax line with its money
	ShopifyFieldsTaxLines:      3,                                       // a tax line and its priceSet
	ShopifyFieldsDiscounts:     2 + ShopifyDiscountsFirst*(1+1),         // application and its value (MoneyV2 or percentage)
	ShopifyFieldsNotes:         1,                                       // customAttributes
	ShopifyFieldsPayment:       0,
	ShopifyFieldsRefunds:       2 + ShopifyRefundsFirst*(1+2),                         // totalRefundedSet; refund and its totalRefundedSet
	ShopifyFieldsFulfillments:  ShopifyFulfillmentsFirst * (1 + ShopifyTrackingFirst), // fulfillment and its trackingInfo
}

// ShopifyLineCost is a line's requested cost: the LineItem, its
// originalUnitPriceSet, discountedTotalSet and totalDiscountSet, and a tax
// line with its priceSet.
const ShopifyLineCost = 1 + 2 + 2 + 2 + 3

// ShopifyOrderCost is the requested cost of one Order node as the GraphQL
// connector selects it: the order, its five totals (10), its lineItems
// connection of lines lines, its groups, and the objects of the extra
// fragment (fragmentObjects).
func ShopifyOrderCost(groups []string, lines, fragmentObjects int) int {
	c := 1 + 10 + 2 + lines*ShopifyLineCost + fragmentObjects
	for _, g := range groups {
		c += shopifyGroupCost[g]
	}
	return c
}

// ShopifyOrdersQueryCost is the requested cost of a page of the orders
// query: the connection, 2, plus each order.
func ShopifyOrdersQueryCost(pageSize, orderCost int) int { return 2 + pageSize*orderCost }

// ShopifyPageFit is the largest page of orders of orderCost points whose
// query stays within limit points (the single-query maximum or a smaller
// bucket); 0 when not even one order fits.
func ShopifyPageFit(orderCost int, limit float64) int {
	if orderCost <= 0 {
		return ShopifyMaxConnectionSize
	}
	return min(max(int((limit-2)/float64(orderCost)), 0), ShopifyMaxConnectionSize)
}

// ShopifyLinesQueryCost is the requested cost of the follow-up query for
// one order's further lines: the order (1) and its lineItems connection.
func ShopifyLinesQueryCost(first int) int { return 1 + 2 + first*ShopifyLineCost }
