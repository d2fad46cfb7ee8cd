package connectors

import (
	"strings"

	"github.com/ordersync/ordersync/config"
)

// wooCommerceSpec is kind woocommerce (woocommerce.go).
var wooCommerceSpec = Spec[WooCommerceOptions]{
	// WooCommerce REST v3 GET /wp-json/wc/v3/orders: per_page 1..100
	// (https://woocommerce.github.io/woocommerce-rest-api-docs/#list-all-orders).
	// WooCommerce sets no rate limit; the host does, so ordersync's default stays.
	Name: "woocommerce", Defaults: config.KindInfo{PageSize: 100, MaxPageSize: 100},
	Check: checkWooCommerceEndpoint,
	New:   newWooCommerce,
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
func checkWooCommerceEndpoint(p config.Platform, bad config.ProblemFunc) {
	if strings.HasPrefix(p.Endpoint, "http://") {
		bad("endpoint", "WooCommerce accepts a consumer key and secret only over HTTPS (plain HTTP needs OAuth 1.0a, which ordersync does not implement)")
	}
}

func (o *WooCommerceOptions) Finish(_ config.Platform, bad config.ProblemFunc) {
	if o.Auth == "" {
		o.Auth = "basic"
	}
	if o.Auth != "basic" && o.Auth != "query" {
		bad("auth", "must be basic or query, got %q", o.Auth)
	}
}
