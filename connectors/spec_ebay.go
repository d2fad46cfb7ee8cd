package connectors

import (
	"strings"

	"github.com/ordersync/ordersync/config"
)

// ebaySpec is kind ebay (ebay.go).
var ebaySpec = Spec[EbayOptions]{
	// eBay Sell Fulfillment getOrders: limit 1..200
	// (https://developer.ebay.com/api-docs/sell/fulfillment/resources/order/methods/getOrders);
	// 100,000 calls a day by default (https://developer.ebay.com/develop/api/sell/api_call_limits):
	// 1 request/s stays under it.
	Name: "ebay", Defaults: config.KindInfo{PageSize: 200, MaxPageSize: 200, RateLimit: config.RateLimit{RPS: 1, Burst: 5}},
	New: newEbay,
}

// EbayOptions are the options of kind ebay.
type EbayOptions struct {
	// TokenURL is the OAuth token endpoint (default: the endpoint's host +
	// /identity/v1/oauth2/token, which serves production and sandbox alike).
	TokenURL string `yaml:"token_url"`
	// Scopes are asked for when refreshing (default sell.fulfillment.readonly).
	Scopes []string `yaml:"scopes"`
}

func (o *EbayOptions) Finish(p config.Platform, bad config.ProblemFunc) {
	o.TokenURL = defaultURL(o.TokenURL, strings.TrimRight(p.Endpoint, "/")+"/identity/v1/oauth2/token", "token_url", bad)
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"https://api.ebay.com/oauth/api_scope/sell.fulfillment.readonly"}
	}
}
