package connectors

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/tuning"
)

// shopifySpec is kind shopify (shopify.go: REST, shopify_graphql.go:
// GraphQL; the query-cost model is spec_shopify_cost.go).
var shopifySpec = Spec[ShopifyOptions]{
	// Shopify GraphQL Admin API, the orders query (the default API of kind
	// shopify): first is 1..250
	// (https://shopify.dev/docs/api/usage/pagination-graphql). A query may
	// cost at most 1,000 points: 50 orders with 4 lines each cost about 852
	// (ShopifyOrdersQueryCost). Points, not requests, are the limit
	// (options.restore_rate, options.max_cost_available); rate_limit only
	// caps the pages a second, at a rate no plan's points allow anyway.
	Name: "shopify", Defaults: config.KindInfo{PageSize: 50, MaxPageSize: 250, RateLimit: config.RateLimit{RPS: 10, Burst: 10}},
	// options.api: rest, the REST Admin API, GET
	// /admin/api/{version}/orders.json: limit is 1..250
	// (https://shopify.dev/docs/api/admin-rest/latest/resources/order);
	// requests are a leaky bucket of 40 that leaks 2/s on standard plans
	// (https://shopify.dev/docs/api/admin-rest/usage/rate-limits).
	APIOption:   "api",
	APIDefaults: map[string]config.KindInfo{ShopifyREST: {PageSize: 250, MaxPageSize: 250, RateLimit: config.RateLimit{RPS: 2, Burst: 40}}},
	CheckTuning: checkShopifyGraphQL,
	Derive:      deriveShopifyBulk,
	Warnings:    shopifyWarnings,
	New:         newShopify,
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
	BulkMinSpan config.Duration `yaml:"bulk_min_span"`
	// BulkPollInterval is how long a slice waits, on a durable timer,
	// between looks at its running bulk query (default
	// DefaultShopifyBulkPollInterval).
	BulkPollInterval config.Duration `yaml:"bulk_poll_interval"`
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
	DefaultShopifyBulkMinSpan      = config.Duration(24 * time.Hour)
	DefaultShopifyBulkPollInterval = config.Duration(10 * time.Second)
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

func (o *ShopifyOptions) Finish(p config.Platform, bad config.ProblemFunc) {
	if u, err := url.Parse(p.Endpoint); o.BulkLoopbackHTTP && (err != nil || !config.LoopbackHost(u.Hostname())) {
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
	if o.BulkMinSpan < config.Duration(time.Second) {
		bad("bulk_min_span", "must be at least 1s (the narrowest slice that runs as a bulk query), got %s", o.BulkMinSpan)
	}
	if o.BulkPollInterval == 0 {
		o.BulkPollInterval = DefaultShopifyBulkPollInterval
	}
	if o.BulkPollInterval < config.Duration(100*time.Millisecond) || o.BulkPollInterval > config.Duration(10*time.Minute) {
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
func checkShopifyGraphQL(p config.Platform, o *ShopifyOptions, bad config.ProblemFunc) {
	if o.API != ShopifyGraphQL {
		return
	}
	// A page is lowered to what fits the single-query maximum (the
	// connector does so per query); one order must fit on its own.
	frag, _ := CheckShopifyFragment(o.OrderFragment)
	if cost := ShopifyOrdersQueryCost(1, ShopifyOrderCost(o.OrderFields, o.LineItemsPageSize, frag)); cost > ShopifyMaxQueryCost {
		bad("options.line_items_page_size", "one order listing %d lines with its field groups costs %d points, over Shopify's single-query maximum of %d: lower line_items_page_size, order_fields or order_fragment",
			o.LineItemsPageSize, cost, ShopifyMaxQueryCost)
	}
	// A slice splits after max_pages pages; kept below Shopify's pagination
	// limit, every slice that can split does so before Shopify stops it.
	if n := p.PageSize * p.MaxPages; n > ShopifyPaginationLimit {
		bad("max_pages", "%d pages of %d orders page through %d orders in one query, past Shopify's limit of %d: use at most %d",
			p.MaxPages, p.PageSize, n, ShopifyPaginationLimit, ShopifyPaginationLimit/max(p.PageSize, 1))
	}
}

// deriveShopifyBulk sets the bulk backfill tuning from Shopify's options.
// Options that do not decode (o nil) leave bulk off (such settings never
// pass Validate, so never reach a workflow from an edge).
func deriveShopifyBulk(_ config.Platform, o *ShopifyOptions, s *tuning.Settings) {
	s.Bulk = &tuning.Bulk{} // off, and never read from options (LegacyOptions)
	if o == nil {
		return
	}
	s.Bulk = &tuning.Bulk{Enabled: o.API == ShopifyGraphQL && o.BulkBackfill != nil && *o.BulkBackfill,
		MinSpan: o.BulkMinSpan, PollInterval: o.BulkPollInterval}
}

// shopifyRecentOrders is how far back Shopify lists orders to an app
// without the read_all_orders scope; older orders are left out without an
// error (https://shopify.dev/docs/api/admin-graphql/latest/objects/Order).
const shopifyRecentOrders = 60 * 24 * time.Hour

// Shopify rejects Admin API requests from public apps that use
// non-expiring offline tokens from ShopifyStaticTokenEnd; a month before,
// a shopify platform on an {env} or {file} token gets a warning (custom
// apps are exempt, so it stays a warning).
var (
	ShopifyStaticTokenEnd  = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	shopifyStaticTokenWarn = ShopifyStaticTokenEnd.AddDate(0, -1, 0)
)

// shopifyWarnings: the legacy REST API, a start older than Shopify lists
// without read_all_orders, and a static token near Shopify's cut-off.
func shopifyWarnings(p config.Platform, o *ShopifyOptions, now time.Time, warn config.ProblemFunc) {
	if o.API == ShopifyREST {
		warn("options.api", "the REST Admin API is legacy (Shopify, October 2024); api: graphql reads the same orders with the same ids, so the platform can move without refetching (docs/connectors.md)")
	}
	if start, err := p.ResolveStart(now); err == nil && now.Sub(start) > shopifyRecentOrders {
		warn("start", "reaches back %d days: Shopify lists orders older than 60 days only to apps with the read_all_orders scope, and leaves them out without an error otherwise",
			int(now.Sub(start).Hours()/24))
	}
	if p.Credentials.Stored == "" && !now.Before(shopifyStaticTokenWarn) {
		warn("credentials", "%s holds a static token: from %s Shopify rejects non-expiring offline tokens of public apps (custom apps are exempt); "+
			"for a public app move the shop to a stored expiring token (ordersync credentials migrate-shopify, or re-install through ordersync serve; docs/credentials.md)",
			p.Credentials, ShopifyStaticTokenEnd.Format("2006-01-02"))
	}
}
