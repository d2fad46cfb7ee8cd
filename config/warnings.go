package config

import (
	"fmt"
	"time"
)

// shopifyRecentOrders is how far back Shopify lists orders to an app
// without the read_all_orders scope; older orders are left out without an
// error (https://shopify.dev/docs/api/admin-graphql/latest/objects/Order).
const shopifyRecentOrders = 60 * 24 * time.Hour

// Warnings are settings that load but deserve a second look, one line each
// in the form of a Problem ("platform "x": field "options.api": ..."), for
// the CLI to print next to a successful load. They may read the clock (a
// start in the past), so workflow code never calls them.
func (p Platform) Warnings() []string { return p.warnings(time.Now()) }

func (p Platform) warnings(now time.Time) []string {
	var out []string
	warn := func(field, format string, args ...any) {
		out = append(out, Problem{Platform: p.Name, Field: field, Reason: fmt.Sprintf(format, args...)}.String())
	}
	if p.Kind != "shopify" {
		return nil
	}
	o, err := p.ShopifyOptions()
	if err != nil {
		return nil // the load reports it
	}
	if o.API == ShopifyREST {
		warn("options.api", "the REST Admin API is legacy (Shopify, October 2024); api: graphql reads the same orders with the same ids, so the platform can move without refetching (docs/connectors.md)")
	}
	if start, err := p.ResolveStart(now); err == nil && now.Sub(start) > shopifyRecentOrders {
		warn("start", "reaches back %d days: Shopify lists orders older than 60 days only to apps with the read_all_orders scope, and leaves them out without an error otherwise",
			int(now.Sub(start).Hours()/24))
	}
	return out
}

// Warnings are the warnings of every platform, in name order.
func (f *File) Warnings() []string {
	var out []string
	for _, p := range f.Platforms {
		out = append(out, p.Warnings()...)
	}
	return out
}
