package connectors

// OrderLine is one line of an order as the platform lists it: what was
// bought, how many, at what unit price. A back-end cannot fulfil, invoice or
// reconcile an order without its lines, so they are data, stored with their
// order under the same newest-version rule (all lines of a version replace
// all lines of the older one).
type OrderLine struct {
	// ID is the platform's line id; connectors whose API has none use the
	// line's 1-based position ("1", "2", ...), stable within one version.
	ID    string `json:"id"`
	SKU   string `json:"sku,omitempty"`
	Title string `json:"title,omitempty"`
	// Quantity is the number of units ordered.
	Quantity int64 `json:"quantity"`
	// UnitPrice is a decimal string ("12.50"), never a float; "" when the
	// platform does not say.
	UnitPrice string `json:"unit_price,omitempty"`
	Currency  string `json:"currency,omitempty"`
}
