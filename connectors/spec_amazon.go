package connectors

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync/config"
)

// amazonSpec is kind amazon (amazon.go).
var amazonSpec = Spec[AmazonOptions]{
	// Amazon SP-API Orders v2026-01-01 searchOrders (models/orders-api-model/
	// orders_2026-01-01.json in amzn/selling-partner-api-models):
	// maxResultsPerPage 1..100, usage plan 0.0056 requests/s with burst 20,
	// lastUpdatedBefore at least 2 minutes before now. Settle 3m adds a
	// minute for clock skew and timer latency; hourly slices keep the
	// steady state at one request an hour.
	Name: "amazon", Defaults: config.KindInfo{PageSize: 100, MaxPageSize: 100, RateLimit: config.RateLimit{RPS: 0.0056, Burst: 20},
		Interval: config.Duration(time.Hour), Settle: config.Duration(3 * time.Minute), MinSettle: config.Duration(2 * time.Minute)},
	// options.api_version v0: Orders v0 getOrders
	// (models/orders-api-model/ordersV0.json): MaxResultsPerPage
	// 1..100, usage plan 0.0167 requests/s with burst 20, the same
	// 2-minute rule.
	APIOption: "api_version",
	APIDefaults: map[string]config.KindInfo{AmazonAPIV0: {PageSize: 100, MaxPageSize: 100, RateLimit: config.RateLimit{RPS: 0.0167, Burst: 20},
		Interval: config.Duration(time.Hour), Settle: config.Duration(3 * time.Minute), MinSettle: config.Duration(2 * time.Minute)}},
	Warnings: amazonWarnings,
	New:      newAmazon,
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

func (o *AmazonOptions) Finish(_ config.Platform, bad config.ProblemFunc) {
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

// amazonWarnings: the v0 API, which Amazon removes.
func amazonWarnings(_ config.Platform, o *AmazonOptions, _ time.Time, warn config.ProblemFunc) {
	if o.APIVersion == AmazonAPIV0 {
		warn("options.api_version", "Amazon removes Orders API v0 (getOrders) on %s; set api_version %s (or remove it: it is the default). "+
			"Order ids stay the same, so the switch loses and duplicates nothing (docs/connectors.md, amazon)",
			AmazonV0Removal, AmazonAPI20260101)
	}
}
