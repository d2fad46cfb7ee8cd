package config

import (
	"fmt"
	"time"
)

// Warnings are settings that load and run today but deserve a second look,
// such as an API version the platform is removing. They never stop a file
// from loading (a platforms file that works must keep working); the CLI
// prints them ("warning: " + Problem.String()) next to a successful load.
// They may read the clock (a start in the past), so workflow code never
// calls them.

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

// Warnings lists the warnings of one merged, valid platform.
func (p Platform) Warnings() []Problem { return p.warnings(time.Now()) }

func (p Platform) warnings(now time.Time) []Problem {
	var out []Problem
	warn := func(field, format string, args ...any) {
		out = append(out, Problem{Platform: p.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch p.Kind {
	case "amazon":
		if o, err := KindOptions[AmazonOptions](p); err == nil && o.APIVersion == AmazonAPIV0 {
			warn("options.api_version", "Amazon removes Orders API v0 (getOrders) on %s; set api_version %s (or remove it: it is the default). "+
				"Order ids stay the same, so the switch loses and duplicates nothing (docs/connectors.md, amazon)",
				AmazonV0Removal, AmazonAPI20260101)
		}
	case "shopify":
		o, err := KindOptions[ShopifyOptions](p)
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
		if p.Credentials.Stored == "" && !now.Before(shopifyStaticTokenWarn) {
			warn("credentials", "%s holds a static token: from %s Shopify rejects non-expiring offline tokens of public apps (custom apps are exempt); "+
				"for a public app move the shop to a stored expiring token (ordersync credentials migrate-shopify, or re-install through ordersync serve; docs/credentials.md)",
				p.Credentials, ShopifyStaticTokenEnd.Format("2006-01-02"))
		}
	}
	return out
}

// Warnings lists the warnings of every platform of the file, in name order.
func (f *File) Warnings() []Problem {
	var out []Problem
	for _, p := range f.Platforms {
		out = append(out, p.Warnings()...)
	}
	return out
}
