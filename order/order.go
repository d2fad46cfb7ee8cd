// Package order holds the order as ordersync stores and delivers it: the
// platform's own JSON (Raw), the header fields every kind fills in, the
// lines, and the canonical order (Canonical), one shape for every kind.
// Connectors produce it, the store keeps it, the change feed and the
// destinations carry it; none of them needs another's package for it.
package order

import (
	"encoding/json"
	"strings"
	"time"
)

// Order is the normalized form every connector returns. Raw keeps the
// platform's own JSON so nothing the platform said is lost.
type Order struct {
	Platform  string    `json:"platform"`
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"` // UTC
	UpdatedAt time.Time `json:"updated_at"` // UTC; the slicing and upsert key
	Currency  string    `json:"currency"`
	Total     string    `json:"total"` // decimal string, never a float
	LineCount int       `json:"line_count"`
	// Lines are the order's lines when the platform's API returns them
	// (HasLines); a connector that lists orders without lines leaves both
	// unset, and the store then keeps whatever lines it has.
	Lines    []Line          `json:"lines,omitempty"`
	HasLines bool            `json:"has_lines,omitempty"`
	Raw      json.RawMessage `json:"raw"`
	// Canonical is the order in ordersync's one shape for every kind
	// (canonical.go, schema/order.v1.json); nil when the kind has no
	// mapping or the version was stored before there was one.
	Canonical *Canonical `json:"canonical,omitempty"`
}

// Line is one line of an order as the platform lists it: what was
// bought, how many, at what unit price. A back-end cannot fulfil, invoice or
// reconcile an order without its lines, so they are data, stored with their
// order under the same newest-version rule (all lines of a version replace
// all lines of the older one).
type Line struct {
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

// ValidDecimal reports whether s is a plain decimal number such as "12",
// "-3.50" or "0.125": what money amounts look like, with no exponent, so
// they can be stored exactly and never pass through a float.
func ValidDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasDot := strings.Cut(s, ".")
	return allDigits(intPart) && (!hasDot || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
