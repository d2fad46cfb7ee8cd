package connectors

// The kinds, in the order config lists them (config.Kinds: the kinds a
// problem names, "one of sim, shopify, ..."). Each spec is defined beside
// its connector, in spec_<kind>.go; adding a kind adds its spec here.
func init() {
	registerSpec(simSpec)
	registerSpec(shopifySpec)
	registerSpec(amazonSpec)
	registerSpec(ebaySpec)
	registerSpec(wooCommerceSpec)
	registerSpec(httpSpec)
}
