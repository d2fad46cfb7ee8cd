package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync/internal/tuning"
)

// KindInfo is what ordersync knows about a connector kind from its platform's
// documentation: defaults for the settings a platforms file leaves unset (in
// the default block and the platform entry alike), and limits checked at load.
type KindInfo struct {
	PageSize    int       // default page size
	MaxPageSize int       // the largest page the API accepts; 0: no known limit
	RateLimit   RateLimit // default request rate; a zero field keeps ordersync's default
	Interval    Duration  // default slice width; 0 keeps ordersync's default
	Settle      Duration  // default settle; 0 keeps ordersync's default
	MinSettle   Duration  // the platform rejects windows that end closer to now
}

// kindSpec is one connector kind as config knows it: the defaults its
// platform's documentation gives, its options type and the checks only it
// knows. Package connectors registers a constructor under the same name in
// the kind's own file; connectors/kinds_test.go fails when the two lists
// differ. Adding a kind is one entry here plus that file (docs/connectors.md,
// "Adding a kind").
type kindSpec struct {
	name string
	// defaults are the kind's at its default API; a zero field keeps
	// ordersync's own default.
	defaults KindInfo
	// apiOption names the option that picks another API of the platform,
	// and apiDefaults are the defaults by its value (amazon's v0, Shopify's
	// REST): a different API has different limits.
	apiOption   string
	apiDefaults map[string]KindInfo
	// options returns a new value of the kind's options type; nil: the kind
	// takes no options and ignores any it is given.
	options func() kindOptions
	// check reports what else only the kind knows, after its limits and
	// before its options; ve holds the problems found so far. nil: nothing.
	check func(p Platform, ve *ValidationError)
	// derive sets the tuning workflows decide by that the kind derives
	// from its options (Shopify's bulk backfill), so workflow inputs carry
	// it instead of the options. nil: nothing.
	derive func(p Platform, s *tuning.Settings)
}

var kindSpecs = []kindSpec{
	// The built-in simulator: ordersync's own defaults, no options.
	{name: "sim"},
	// Shopify GraphQL Admin API, the orders query (the default API of kind
	// shopify): first is 1..250
	// (https://shopify.dev/docs/api/usage/pagination-graphql). A query may
	// cost at most 1,000 points: 50 orders with 4 lines each cost about 852
	// (ShopifyOrdersQueryCost). Points, not requests, are the limit
	// (options.restore_rate, options.max_cost_available); rate_limit only
	// caps the pages a second, at a rate no plan's points allow anyway.
	{name: "shopify", defaults: KindInfo{PageSize: 50, MaxPageSize: 250, RateLimit: RateLimit{RPS: 10, Burst: 10}},
		// options.api: rest, the REST Admin API, GET
		// /admin/api/{version}/orders.json: limit is 1..250
		// (https://shopify.dev/docs/api/admin-rest/latest/resources/order);
		// requests are a leaky bucket of 40 that leaks 2/s on standard plans
		// (https://shopify.dev/docs/api/admin-rest/usage/rate-limits).
		apiOption:   "api",
		apiDefaults: map[string]KindInfo{ShopifyREST: {PageSize: 250, MaxPageSize: 250, RateLimit: RateLimit{RPS: 2, Burst: 40}}},
		options:     func() kindOptions { return &ShopifyOptions{} },
		check:       checkShopifyGraphQL,
		derive:      deriveShopifyBulk},
	// Amazon SP-API Orders v2026-01-01 searchOrders (models/orders-api-model/
	// orders_2026-01-01.json in amzn/selling-partner-api-models):
	// maxResultsPerPage 1..100, usage plan 0.0056 requests/s with burst 20,
	// lastUpdatedBefore at least 2 minutes before now. Settle 3m adds a
	// minute for clock skew and timer latency; hourly slices keep the
	// steady state at one request an hour.
	{name: "amazon", defaults: KindInfo{PageSize: 100, MaxPageSize: 100, RateLimit: RateLimit{RPS: 0.0056, Burst: 20},
		Interval: Duration(time.Hour), Settle: Duration(3 * time.Minute), MinSettle: Duration(2 * time.Minute)},
		// options.api_version v0: Orders v0 getOrders
		// (models/orders-api-model/ordersV0.json): MaxResultsPerPage
		// 1..100, usage plan 0.0167 requests/s with burst 20, the same
		// 2-minute rule.
		apiOption: "api_version",
		apiDefaults: map[string]KindInfo{AmazonAPIV0: {PageSize: 100, MaxPageSize: 100, RateLimit: RateLimit{RPS: 0.0167, Burst: 20},
			Interval: Duration(time.Hour), Settle: Duration(3 * time.Minute), MinSettle: Duration(2 * time.Minute)}},
		options: func() kindOptions { return &AmazonOptions{} }},
	// eBay Sell Fulfillment getOrders: limit 1..200
	// (https://developer.ebay.com/api-docs/sell/fulfillment/resources/order/methods/getOrders);
	// 100,000 calls a day by default (https://developer.ebay.com/develop/api/sell/api_call_limits):
	// 1 request/s stays under it.
	{name: "ebay", defaults: KindInfo{PageSize: 200, MaxPageSize: 200, RateLimit: RateLimit{RPS: 1, Burst: 5}},
		options: func() kindOptions { return &EbayOptions{} }},
	// WooCommerce REST v3 GET /wp-json/wc/v3/orders: per_page 1..100
	// (https://woocommerce.github.io/woocommerce-rest-api-docs/#list-all-orders).
	// WooCommerce sets no rate limit; the host does, so ordersync's default stays.
	{name: "woocommerce", defaults: KindInfo{PageSize: 100, MaxPageSize: 100},
		options: func() kindOptions { return &WooCommerceOptions{} },
		check:   checkWooCommerceEndpoint},
	// Any JSON API, described by its options (kinds_http.go): nothing is
	// known of its limits.
	{name: "http", options: func() kindOptions { return &HTTPOptions{} }},
}

// Kinds lists the connector kinds a platform may name, in kindSpecs order.
var Kinds = func() []string {
	names := make([]string, len(kindSpecs))
	for i, s := range kindSpecs {
		names[i] = s.name
	}
	return names
}()

// kindSpecOf is the spec of a kind; false for a kind config does not know.
func kindSpecOf(kind string) (kindSpec, bool) {
	for _, s := range kindSpecs {
		if s.name == kind {
			return s, true
		}
	}
	return kindSpec{}, false
}

// KindDefaults returns what ordersync knows about a kind (zero for kinds with
// no documented limits, such as sim and http), for the kind's default API.
func KindDefaults(kind string) KindInfo {
	s, _ := kindSpecOf(kind)
	return s.defaults
}

// kindInfoOf is what ordersync knows about p's kind at the API its options
// choose: amazon on the legacy v0 API has v0's rate, shopify on REST its
// request bucket.
func kindInfoOf(p Platform) KindInfo {
	s, _ := kindSpecOf(p.Kind)
	if s.apiOption == "" {
		return s.defaults
	}
	if api, ok := p.Options[s.apiOption].(string); ok {
		if k, ok := s.apiDefaults[api]; ok {
			return k
		}
	}
	return s.defaults
}

// applyKindDefaults sets the kind's defaults on every field that neither the
// default block nor the platform entry set; explicit holds the field paths
// they did set ("page_size", "rate_limit.rps", ...).
func applyKindDefaults(p *Platform, explicit map[string]bool) {
	if _, ok := kindSpecOf(p.Kind); !ok {
		return
	}
	k := kindInfoOf(*p)
	unset := func(field string, nonZero bool) bool { return nonZero && !explicit[field] }
	if unset("page_size", k.PageSize > 0) {
		p.PageSize = k.PageSize
	}
	if unset("rate_limit.rps", k.RateLimit.RPS > 0) {
		p.RateLimit.RPS = k.RateLimit.RPS
	}
	if unset("rate_limit.burst", k.RateLimit.Burst > 0) {
		p.RateLimit.Burst = k.RateLimit.Burst
	}
	if unset("interval", k.Interval > 0) {
		p.Interval = k.Interval
	}
	if unset("settle", k.Settle > 0) {
		p.Settle = k.Settle
	}
}

// validateKind checks what only the kind knows: page size and settle limits,
// the kind's own checks and its options.
func (p Platform) validateKind() *ValidationError {
	ve := &ValidationError{}
	checkKindLimits(p.tuning(), kindInfoOf(p), p.reporter(ve, nil))
	s, _ := kindSpecOf(p.Kind)
	if s.check != nil {
		s.check(p, ve)
	}
	if s.options != nil {
		ve.merge(p.decodeKindOptions(s.options()))
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// problemFunc reports one problem of a field.
type problemFunc func(field, format string, args ...any)

// kindOptions is the options schema of one kind: finish fills in defaults
// and checks the decoded values.
type kindOptions interface {
	finish(p Platform, bad problemFunc)
}

// anyKindOption lists the top-level option names some kind knows. A key one
// kind does not know but another does is ignored rather than reported, so a
// default block can carry options for several kinds; a typo is reported.
// It is filled in init: kinds' checks decode options, which reads it.
var anyKindOption = map[string]bool{}

func init() {
	for _, s := range kindSpecs {
		if s.options == nil {
			continue
		}
		for name := range yamlFields(reflect.TypeOf(s.options()).Elem()) {
			anyKindOption[name] = true
		}
	}
}

// decodeKindOptions decodes p.Options into target, fills in defaults and
// validates; problems name the field as "options.<path>".
func (p Platform) decodeKindOptions(target kindOptions) *ValidationError {
	ve := &ValidationError{}
	bad := func(field, format string, args ...any) { ve.add(p.Name, "options."+field, format, args...) }
	decodeOptions(p.Options, target, "", bad, anyKindOption)
	if len(ve.Problems) == 0 {
		target.finish(p, bad)
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// KindOptions decodes, defaults and validates p's options as T, the
// options type of p's kind (ShopifyOptions, AmazonOptions, ...): what a
// connector calls to read its settings. Problems name the field as
// "options.<path>".
func KindOptions[T any, PT interface {
	*T
	kindOptions
}](p Platform) (T, error) {
	var o T
	if ve := p.decodeKindOptions(PT(&o)); ve != nil {
		return o, ve
	}
	return o, nil
}

// decodeOptions sets target's fields (by yaml tag) from a generic map, as
// YAML or JSON (a `config` signal) leave it. known, at the top level only,
// names keys to skip silently.
func decodeOptions(m map[string]any, target any, prefix string, bad problemFunc, known map[string]bool) {
	v := reflect.ValueOf(target).Elem()
	fields := yamlFields(v.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		idx, ok := fields[k]
		switch {
		case ok:
			decodeOptionValue(m[k], v.Field(idx), prefix+k, bad)
		case !known[k]:
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			bad(prefix+k, "unknown option (known here: %s)", strings.Join(names, ", "))
		}
	}
}

func decodeOptionValue(val any, fv reflect.Value, name string, bad problemFunc) {
	orig := val
	switch fv.Kind() {
	case reflect.Struct:
		sub, ok := val.(map[string]any)
		if !ok {
			bad(name, "must be a mapping, got %s", showValue(val))
			return
		}
		decodeOptions(sub, fv.Addr().Interface(), name+".", bad, nil)
		return
	case reflect.Map: // map[string]string: scalars are taken as their text
		sub, ok := val.(map[string]any)
		if !ok {
			bad(name, "must be a mapping of names to values, got %s", showValue(val))
			return
		}
		out := make(map[string]string, len(sub))
		subKeys := make([]string, 0, len(sub))
		for k := range sub {
			subKeys = append(subKeys, k)
		}
		sort.Strings(subKeys) // problems come in a stable order, even inside workflows
		for _, k := range subKeys {
			x := sub[k]
			switch x.(type) {
			case map[string]any, []any, nil:
				bad(name+"."+k, "must be a single value, got %s", showValue(x))
			default:
				out[k] = fmt.Sprint(x)
			}
		}
		fv.Set(reflect.ValueOf(out))
		return
	case reflect.Slice:
		if _, isList := val.([]any); !isList && val != nil {
			val = []any{val} // a single value is a list of one
		}
	}
	b, err := json.Marshal(val)
	if err == nil {
		err = json.Unmarshal(b, fv.Addr().Interface())
	}
	if err != nil {
		bad(name, "must be %s, got %s", describeType(fv.Type()), showValue(orig))
	}
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// DefaultShopifyAPIVersion is the Admin API version used when
// options.api_version is unset: the newest stable version when the connector
// was written (November 2026). Shopify supports each stable version for at
// least 12 months (https://shopify.dev/docs/api/usage/versioning).
const DefaultShopifyAPIVersion = "2026-10"

// The Admin APIs kind shopify speaks (options.api).
const (
	// ShopifyGraphQL is the GraphQL Admin API, the default.
	ShopifyGraphQL = "graphql"
	// ShopifyREST is the REST Admin API, legacy since October 2024.
	ShopifyREST = "rest"
)

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

// ShopifyOptions are the options of kind shopify.
type ShopifyOptions struct {
	// API is graphql (the default) or rest (legacy).
	API string `yaml:"api"`
	// APIVersion is the version in the request path: YYYY-MM (a quarter's
	// first month) or "unstable".
	APIVersion string `yaml:"api_version"`
	// RestoreRate is the points a second the shop's plan restores
	// (graphql; default DefaultShopifyRestoreRate).
	RestoreRate float64 `yaml:"restore_rate"`
	// MaxCostAvailable is the bucket size in points (graphql; default
	// DefaultShopifyMaxCostAvailable).
	MaxCostAvailable float64 `yaml:"max_cost_available"`
	// LineItemsPageSize is how many lines each order lists in the orders
	// query (graphql; default DefaultShopifyLineItemsPageSize).
	LineItemsPageSize int `yaml:"line_items_page_size"`
	// BulkBackfill runs slices at least BulkMinSpan wide as one bulk query
	// (bulkOperationRunQuery) instead of paging (graphql; default on).
	BulkBackfill *bool `yaml:"bulk_backfill"`
	// BulkMinSpan is the narrowest slice that runs as a bulk query
	// (default DefaultShopifyBulkMinSpan).
	BulkMinSpan Duration `yaml:"bulk_min_span"`
	// BulkPollInterval is how long a slice waits, on a durable timer,
	// between looks at its running bulk query (default
	// DefaultShopifyBulkPollInterval).
	BulkPollInterval Duration `yaml:"bulk_poll_interval"`
	// BulkConcurrency is how many bulk queries Shopify runs at once per app
	// and shop (default ShopifyBulkConcurrency of api_version).
	BulkConcurrency int `yaml:"bulk_concurrency"`
	// OrderFields are the field groups fetched of each order beside its
	// header, totals, statuses and lines (graphql; default all of
	// ShopifyOrderFieldGroups). Leaving out customer and addresses keeps
	// the buyer's personal data out of the store.
	OrderFields []string `yaml:"order_fields"`
	// OrderFragment adds fields to the Order selection (graphql): a
	// selection set such as "poNumber sourceName channelInformation {
	// channelId }", checked by CheckShopifyFragment.
	OrderFragment string `yaml:"order_fragment"`
	// BulkLoopbackHTTP lets result files come over plain http from
	// loopback, at the endpoint's port only: for the simulator, which
	// serves its own result files. Off, they come only over https from
	// public addresses. It needs an endpoint on loopback.
	BulkLoopbackHTTP bool `yaml:"bulk_loopback_http"`
}

// UseBulk says whether a slice of this width runs as a bulk query.
func (o ShopifyOptions) UseBulk(width time.Duration) bool {
	return o.API == ShopifyGraphQL && o.BulkBackfill != nil && *o.BulkBackfill && width >= o.BulkMinSpan.D()
}

// Bulk query defaults. A bulk query costs a handful of requests however
// many orders it holds (start, a look every poll interval, one download),
// but takes Shopify seconds to minutes to prepare, so it pays for windows
// that hold many pages: backfill slices, which widen up to
// backfill_max_span (30 days by default) while history is sparse. A day is
// where a shop with a few hundred orders a day needs several pages.
const (
	DefaultShopifyBulkMinSpan      = Duration(24 * time.Hour)
	DefaultShopifyBulkPollInterval = Duration(10 * time.Second)
)

// ShopifyBulkConcurrency is how many bulk queries an app may run at once on
// one shop in an API version: one before 2026-01, five from 2026-01 on
// (https://shopify.dev/docs/api/usage/bulk-operations/queries, "Faster bulk
// operations" in the 2026-01 changelog).
func ShopifyBulkConcurrency(apiVersion string) int {
	if apiVersion == "unstable" || apiVersion >= "2026-01" {
		return 5
	}
	return 1
}

var shopifyVersion = regexp.MustCompile(`^(20\d\d-(01|04|07|10)|unstable)$`)

func (o *ShopifyOptions) finish(p Platform, bad problemFunc) {
	if u, err := url.Parse(p.Endpoint); o.BulkLoopbackHTTP && (err != nil || !loopbackHost(u.Hostname())) {
		bad("bulk_loopback_http", "is for a simulator on loopback (127.0.0.1, ::1, localhost); the endpoint %q is not", p.Endpoint)
	}
	if o.API == "" {
		o.API = ShopifyGraphQL
	}
	if o.API != ShopifyGraphQL && o.API != ShopifyREST {
		bad("api", "must be graphql or rest, got %q", o.API)
	}
	if o.APIVersion == "" {
		o.APIVersion = DefaultShopifyAPIVersion
	}
	if !shopifyVersion.MatchString(o.APIVersion) {
		bad("api_version", "%q is not a Shopify API version like %s (YYYY-01, -04, -07 or -10)", o.APIVersion, DefaultShopifyAPIVersion)
	}
	if o.RestoreRate == 0 {
		o.RestoreRate = DefaultShopifyRestoreRate
	}
	if o.RestoreRate < 0 {
		bad("restore_rate", "must be positive (points a second: 100 standard, 200 Advanced, 1000 Plus, 2000 Enterprise), got %v", o.RestoreRate)
	}
	if o.MaxCostAvailable == 0 {
		o.MaxCostAvailable = DefaultShopifyMaxCostAvailable
	}
	if o.MaxCostAvailable < ShopifyMaxQueryCost {
		bad("max_cost_available", "must hold Shopify's single-query maximum of %d points, got %v", ShopifyMaxQueryCost, o.MaxCostAvailable)
	}
	if o.LineItemsPageSize == 0 {
		o.LineItemsPageSize = DefaultShopifyLineItemsPageSize
	}
	if o.LineItemsPageSize < 1 || o.LineItemsPageSize > ShopifyMaxConnectionSize {
		bad("line_items_page_size", "must be between 1 and %d, got %d", ShopifyMaxConnectionSize, o.LineItemsPageSize)
	}
	if o.OrderFields == nil {
		o.OrderFields = slices.Clone(ShopifyOrderFieldGroups)
	}
	seen := map[string]bool{}
	for _, g := range o.OrderFields {
		if !slices.Contains(ShopifyOrderFieldGroups, g) {
			bad("order_fields", "%q is not a field group (one of %s)", g, strings.Join(ShopifyOrderFieldGroups, ", "))
		} else if seen[g] {
			bad("order_fields", "%q is listed twice", g)
		}
		seen[g] = true
	}
	if _, err := CheckShopifyFragment(o.OrderFragment); err != nil {
		bad("order_fragment", "%v", err)
	}
	if o.BulkBackfill == nil {
		on := o.API == ShopifyGraphQL
		o.BulkBackfill = &on
	} else if *o.BulkBackfill && o.API != ShopifyGraphQL {
		bad("bulk_backfill", "bulk queries need api: graphql, got api %q", o.API)
	}
	if o.BulkMinSpan == 0 {
		o.BulkMinSpan = DefaultShopifyBulkMinSpan
	}
	if o.BulkMinSpan < Duration(time.Second) {
		bad("bulk_min_span", "must be at least 1s (the narrowest slice that runs as a bulk query), got %s", o.BulkMinSpan)
	}
	if o.BulkPollInterval == 0 {
		o.BulkPollInterval = DefaultShopifyBulkPollInterval
	}
	if o.BulkPollInterval < Duration(100*time.Millisecond) || o.BulkPollInterval > Duration(10*time.Minute) {
		bad("bulk_poll_interval", "must be between 100ms and 10m, got %s", o.BulkPollInterval)
	}
	if o.BulkConcurrency == 0 {
		o.BulkConcurrency = ShopifyBulkConcurrency(o.APIVersion)
	}
	if o.BulkConcurrency < 1 {
		bad("bulk_concurrency", "must be at least 1, got %d", o.BulkConcurrency)
	}
}

// checkShopifyGraphQL checks what the GraphQL Admin API's limits mean for
// the platform's page settings, once its limits and options are valid.
func checkShopifyGraphQL(p Platform, ve *ValidationError) {
	if len(ve.Problems) > 0 {
		return
	}
	o, err := KindOptions[ShopifyOptions](p)
	if err != nil || o.API != ShopifyGraphQL {
		return
	}
	// A page is lowered to what fits the single-query maximum (the
	// connector does so per query); one order must fit on its own.
	frag, _ := CheckShopifyFragment(o.OrderFragment)
	if cost := ShopifyOrdersQueryCost(1, ShopifyOrderCost(o.OrderFields, o.LineItemsPageSize, frag)); cost > ShopifyMaxQueryCost {
		ve.add(p.Name, "options.line_items_page_size", "one order listing %d lines with its field groups costs %d points, over Shopify's single-query maximum of %d: lower line_items_page_size, order_fields or order_fragment",
			o.LineItemsPageSize, cost, ShopifyMaxQueryCost)
	}
	// A slice splits after max_pages pages; kept below Shopify's pagination
	// limit, every slice that can split does so before Shopify stops it.
	if n := p.PageSize * p.MaxPages; n > ShopifyPaginationLimit {
		ve.add(p.Name, "max_pages", "%d pages of %d orders page through %d orders in one query, past Shopify's limit of %d: use at most %d",
			p.MaxPages, p.PageSize, n, ShopifyPaginationLimit, ShopifyPaginationLimit/max(p.PageSize, 1))
	}
}

// DefaultAmazonTokenURL is the Login with Amazon token endpoint SP-API uses in every region.
const DefaultAmazonTokenURL = "https://api.amazon.com/auth/o2/token"

// Amazon Orders API versions (options.api_version). v0 is deprecated:
// Amazon removes its getOrders on AmazonV0Removal ("New: Introducing the
// Orders API v2026-01-01", developer-docs.amazon.com/sp-api/changelog).
const (
	AmazonAPI20260101 = "2026-01-01"
	AmazonAPIV0       = "v0"
	AmazonV0Removal   = "2027-03-27"
)

// amazonIncludedData are the datasets searchOrders (2026-01-01) can add to
// an order (its includedData enum). BUYER and RECIPIENT are personal data.
var amazonIncludedData = []string{"BUYER", "RECIPIENT", "PROCEEDS", "EXPENSE", "PROMOTION", "CANCELLATION",
	"FULFILLMENT", "PACKAGES", "TAX", "PAYMENT", "FULFILLMENT_ORDERS"}

// AmazonOptions are the options of kind amazon.
type AmazonOptions struct {
	// APIVersion is the Orders API: AmazonAPI20260101 (the default,
	// searchOrders, items included) or AmazonAPIV0 (legacy getOrders).
	APIVersion string `yaml:"api_version"`
	// MarketplaceIDs select the marketplaces (marketplaceIds, 1..50), e.g. ATVPDKIKX0DER.
	MarketplaceIDs []string `yaml:"marketplace_ids"`
	// TokenURL is the LWA token endpoint (default DefaultAmazonTokenURL).
	TokenURL string `yaml:"token_url"`
	// IncludedData asks searchOrders for datasets beyond the items, status
	// (FULFILLMENT) and total (PROCEEDS) it always fetches, e.g. [BUYER,
	// RECIPIENT]. They are kept in the order's raw JSON, so BUYER and
	// RECIPIENT (personal data) are stored only when listed here.
	IncludedData []string `yaml:"included_data"`
	// IncludeBuyer and IncludeRecipient opt the account in to the BUYER
	// (name, email, company, purchase order number) and RECIPIENT (the
	// delivery address) datasets, personal data (2026-01-01; default off).
	// Listing them in IncludedData is the same opt-in.
	IncludeBuyer     bool `yaml:"include_buyer"`
	IncludeRecipient bool `yaml:"include_recipient"`
}

var marketplaceID = regexp.MustCompile(`^[A-Z0-9]{5,20}$`)

func (o *AmazonOptions) finish(_ Platform, bad problemFunc) {
	switch o.APIVersion {
	case "":
		o.APIVersion = AmazonAPI20260101
	case AmazonAPI20260101, AmazonAPIV0:
	default:
		// A default block may carry a Shopify api_version, which amazon
		// platforms read too: say so rather than only "invalid".
		bad("api_version", "%q is not an Amazon Orders API version (%s, or %s until %s); a Shopify api_version belongs on the shopify platforms, not in the default block",
			o.APIVersion, AmazonAPI20260101, AmazonAPIV0, AmazonV0Removal)
	}
	switch n := len(o.MarketplaceIDs); {
	case n == 0:
		bad("marketplace_ids", "is required: the marketplaces to list, e.g. [ATVPDKIKX0DER] for amazon.com")
	case n > 50:
		bad("marketplace_ids", "the Orders API accepts at most 50 marketplaces, got %d", n)
	}
	for _, id := range o.MarketplaceIDs {
		if !marketplaceID.MatchString(id) {
			bad("marketplace_ids", "%q is not a marketplace id like ATVPDKIKX0DER", id)
		}
	}
	if len(o.IncludedData) > 0 && o.APIVersion == AmazonAPIV0 {
		bad("included_data", "needs api_version %s (getOrders of v0 has no includedData)", AmazonAPI20260101)
	}
	if o.IncludeBuyer && o.APIVersion == AmazonAPIV0 {
		bad("include_buyer", "needs api_version %s (v0 has no BUYER dataset)", AmazonAPI20260101)
	}
	if o.IncludeRecipient && o.APIVersion == AmazonAPIV0 {
		bad("include_recipient", "needs api_version %s (v0 has no RECIPIENT dataset)", AmazonAPI20260101)
	}
	for _, d := range o.IncludedData {
		if !slices.Contains(amazonIncludedData, d) {
			bad("included_data", "%q is not a searchOrders dataset (one of %s)", d, strings.Join(amazonIncludedData, ", "))
		}
	}
	o.TokenURL = defaultURL(o.TokenURL, DefaultAmazonTokenURL, "token_url", bad)
}

// EbayOptions are the options of kind ebay.
type EbayOptions struct {
	// TokenURL is the OAuth token endpoint (default: the endpoint's host +
	// /identity/v1/oauth2/token, which serves production and sandbox alike).
	TokenURL string `yaml:"token_url"`
	// Scopes are asked for when refreshing (default sell.fulfillment.readonly).
	Scopes []string `yaml:"scopes"`
}

func (o *EbayOptions) finish(p Platform, bad problemFunc) {
	o.TokenURL = defaultURL(o.TokenURL, strings.TrimRight(p.Endpoint, "/")+"/identity/v1/oauth2/token", "token_url", bad)
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"https://api.ebay.com/oauth/api_scope/sell.fulfillment.readonly"}
	}
}

// WooCommerceOptions are the options of kind woocommerce.
type WooCommerceOptions struct {
	// Auth sends the consumer key and secret as HTTP Basic auth ("basic", the
	// default) or as consumer_key/consumer_secret query parameters ("query",
	// for servers that drop the Authorization header). Both need HTTPS.
	Auth string `yaml:"auth"`
}

// checkWooCommerceEndpoint refuses plain HTTP, over which WooCommerce
// takes no consumer key and secret.
func checkWooCommerceEndpoint(p Platform, ve *ValidationError) {
	if strings.HasPrefix(p.Endpoint, "http://") {
		ve.add(p.Name, "endpoint", "WooCommerce accepts a consumer key and secret only over HTTPS (plain HTTP needs OAuth 1.0a, which ordersync does not implement)")
	}
}

func (o *WooCommerceOptions) finish(_ Platform, bad problemFunc) {
	if o.Auth == "" {
		o.Auth = "basic"
	}
	if o.Auth != "basic" && o.Auth != "query" {
		bad("auth", "must be basic or query, got %q", o.Auth)
	}
}

// defaultURL returns v, or def when v is empty, reporting a v that is not an http(s) URL.
func defaultURL(v, def, field string, bad problemFunc) string {
	if v == "" {
		return def
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad(field, "%q is not an http(s) URL", v)
	}
	return v
}

// checkEntryOptions reports an option a platform entry sets itself that
// its kind does not have but another kind does. The default block may
// carry options for several kinds (each kind ignores the others'), but an
// entry's own options are for its kind alone: a shopify platform with
// options.token_url (an amazon and ebay option) would validate and be
// silently ignored. Keys no kind knows are reported as typos by the
// kind's own decoding; kinds without an options schema (sim) keep theirs
// free.
func checkEntryOptions(p Platform, entry *yaml.Node, ve *ValidationError) {
	s, ok := kindSpecOf(p.Kind)
	if !ok || s.options == nil || entry == nil || entry.Kind != yaml.MappingNode {
		return
	}
	var opts *yaml.Node
	for i := 0; i+1 < len(entry.Content); i += 2 {
		if entry.Content[i].Value == "options" {
			opts = entry.Content[i+1]
		}
	}
	if opts == nil || opts.Kind != yaml.MappingNode {
		return
	}
	own := yamlFields(reflect.TypeOf(s.options()).Elem())
	for i := 0; i+1 < len(opts.Content); i += 2 {
		key := opts.Content[i]
		if _, ok := own[key.Value]; ok || !anyKindOption[key.Value] {
			continue
		}
		var of []string
		for _, k := range kindSpecs {
			if k.options != nil {
				if _, ok := yamlFields(reflect.TypeOf(k.options()).Elem())[key.Value]; ok {
					of = append(of, k.name)
				}
			}
		}
		names := make([]string, 0, len(own))
		for n := range own {
			names = append(names, n)
		}
		sort.Strings(names)
		ve.add(p.Name, "options."+key.Value, "is an option of kind %s, not of kind %s, which would ignore it (line %d; known here: %s)",
			strings.Join(of, " and "), p.Kind, key.Line, strings.Join(names, ", "))
	}
}
