package connectors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/config"
)

// CountRequest asks for the number of orders whose current update time
// falls in [From, To): the platform's own count of a window, which count
// reconciliation compares with the store's.
type CountRequest struct {
	From, To time.Time
	// Meter paces cost-metered platforms (Shopify's points) as in
	// PageRequest; nil paces nothing.
	Meter Meter
}

// Count precisions.
const (
	// CountExact: the platform counted every order of the window.
	CountExact = "exact"
	// CountAtLeast: the platform stopped counting at a limit; the window
	// holds at least N orders.
	CountAtLeast = "at_least"
)

// Count is a platform's count of one window.
type Count struct {
	N         int
	Precision string // CountExact or CountAtLeast
}

// Counter is a connector whose platform can count the orders of a window
// in one cheap call: Shopify's ordersCount, WooCommerce's X-WP-Total,
// eBay's total. The count must select exactly the orders ListOrders lists
// for the same window.
type Counter interface {
	CountOrders(ctx context.Context, req CountRequest) (Count, error)
}

// ErrCountUnsupported is CountOrders' answer for a kind (or API) without
// a count call: Amazon SP-API, the http kind, Shopify's REST API.
var ErrCountUnsupported = errors.New("the platform has no order count call")

// CountOrders counts a window through c's count call; a connector without
// one wraps ErrCountUnsupported.
func CountOrders(ctx context.Context, c Connector, req CountRequest) (Count, error) {
	if k, ok := c.(Counter); ok {
		return k.CountOrders(ctx, req)
	}
	return Count{}, fmt.Errorf("%T: %w", c, ErrCountUnsupported)
}

// CountOrders passes the count through when the kind has one, with errors
// scrubbed as ListOrders' are.
func (c redactingConnector) CountOrders(ctx context.Context, req CountRequest) (Count, error) {
	k, ok := c.inner.(Counter)
	if !ok {
		return Count{}, fmt.Errorf("%s (kind %s): %w", c.platform.Name, c.platform.Kind, ErrCountUnsupported)
	}
	n, err := k.CountOrders(ctx, req)
	return n, redactError(err, c.replacer())
}

// CountSupported says whether p's kind (and API) has a count call, without
// building a connector: the kinds reconciliation runs for.
func CountSupported(p config.Platform) bool {
	switch p.Kind {
	case "woocommerce", "ebay":
		return true
	case "shopify":
		o, err := config.KindOptions[ShopifyOptions](p)
		return err == nil && o.API == ShopifyGraphQL
	}
	return false
}

// checkCountWindow refuses an empty window before anything is sent.
func checkCountWindow(platform string, req CountRequest) error {
	return checkWindow(platform, PageRequest{From: req.From, To: req.To})
}
