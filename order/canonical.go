package order

import "time"

// SchemaV1 names version 1 of the canonical order. It is the "schema"
// field of every canonical order, and the $id of its JSON Schema,
// order/schema/order.v1.json (embedded: SchemaJSON). A change a reader could
// trip over (a field removed, renamed or given another meaning) makes a v2
// beside it; new optional fields do not.
const SchemaV1 = "https://ordersync.dev/schemas/order/v1.json"

// Canonical is an order in one shape for every platform kind, mapped from
// the platform's own JSON (Raw) by the kind's connector when the order is
// fetched. Money is a decimal string in Currency ("12.50"), never a float;
// "" means the platform did not say (which is not the same as "0").
// Customer and addresses are personal data: present only when the
// platform returned them (see docs/orders.md for what each kind fetches).
type Canonical struct {
	Schema   string `json:"schema"`
	Platform string `json:"platform"`
	// Kind is the connector kind (shopify, amazon, ...); Source says which
	// of its APIs the order came from (shopify: "graphql" or "rest";
	// amazon: "v0" or "2026-01-01"), as fields can differ between them.
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	// OrderID is the platform's id (Order.ID); Number is what the merchant
	// and the buyer call the order (Shopify's "#1001", WooCommerce's
	// number, eBay's and Amazon's order id).
	OrderID   string    `json:"order_id"`
	Number    string    `json:"number,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at"`
	// Status is one of StatusOpen, StatusCompleted, StatusCancelled,
	// StatusUnknown; PlatformStatus is the platform's own word for it.
	Status         string `json:"status"`
	PlatformStatus string `json:"platform_status,omitempty"`
	// FinancialStatus is one of the Financial* values; FulfillmentStatus
	// one of the Fulfillment* values ("" when the platform has neither).
	FinancialStatus   string `json:"financial_status,omitempty"`
	FulfillmentStatus string `json:"fulfillment_status,omitempty"`
	Currency          string `json:"currency,omitempty"`
	Totals            Totals `json:"totals"`
	Taxes             []Tax  `json:"taxes,omitempty"`
	// Discounts are the order's discount applications and codes.
	Discounts       []Discount      `json:"discounts,omitempty"`
	Shipping        []ShippingLine  `json:"shipping,omitempty"`
	Customer        *Customer       `json:"customer,omitempty"`
	BillingAddress  *Address        `json:"billing_address,omitempty"`
	ShippingAddress *Address        `json:"shipping_address,omitempty"`
	Lines           []CanonicalLine `json:"lines"`
	Tags            []string        `json:"tags,omitempty"`
	Note            string          `json:"note,omitempty"`
}

// Status values of a canonical order: open until the platform says it is
// done (shipped, delivered, fulfilled, closed) or cancelled.
const (
	StatusOpen      = "open"
	StatusCompleted = "completed"
	StatusCancelled = "cancelled"
	StatusUnknown   = "unknown"
)

// Financial states of a canonical order.
const (
	FinancialPending           = "pending"
	FinancialAuthorized        = "authorized"
	FinancialPaid              = "paid"
	FinancialPartiallyPaid     = "partially_paid"
	FinancialPartiallyRefunded = "partially_refunded"
	FinancialRefunded          = "refunded"
	FinancialVoided            = "voided"
	FinancialUnknown           = "unknown"
)

// Fulfilment states of a canonical order.
const (
	FulfillmentUnfulfilled = "unfulfilled"
	FulfillmentPartial     = "partial"
	FulfillmentFulfilled   = "fulfilled"
	FulfillmentUnknown     = "unknown"
)

// Totals are the order's sums as the platform states them (never
// recomputed): Subtotal of the lines, Shipping, Tax, Discount (positive:
// the amount taken off) and Total, what the buyer pays.
type Totals struct {
	Subtotal string `json:"subtotal,omitempty"`
	Shipping string `json:"shipping,omitempty"`
	Tax      string `json:"tax,omitempty"`
	Discount string `json:"discount,omitempty"`
	Total    string `json:"total,omitempty"`
}

// Tax is one tax of the order: its title, its rate as a decimal fraction
// ("0.2" for 20 %) when stated, and its amount.
type Tax struct {
	Title  string `json:"title,omitempty"`
	Rate   string `json:"rate,omitempty"`
	Amount string `json:"amount"`
}

// Discount is a discount applied to the order: its code when one was
// entered, a title, and the amount taken off when stated.
type Discount struct {
	Code   string `json:"code,omitempty"`
	Title  string `json:"title,omitempty"`
	Amount string `json:"amount,omitempty"`
}

// ShippingLine is one shipping method charged on the order.
type ShippingLine struct {
	Title string `json:"title,omitempty"`
	Code  string `json:"code,omitempty"`
	Price string `json:"price,omitempty"`
	Tax   string `json:"tax,omitempty"`
}

// Customer is who placed the order, as far as the platform says.
type Customer struct {
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	Phone string `json:"phone,omitempty"`
}

// Address is a billing or shipping address. Region is the state,
// province or county; CountryCode is ISO 3166-1 alpha-2 when the platform
// gives one.
type Address struct {
	Name        string `json:"name,omitempty"`
	Company     string `json:"company,omitempty"`
	Line1       string `json:"line1,omitempty"`
	Line2       string `json:"line2,omitempty"`
	City        string `json:"city,omitempty"`
	Region      string `json:"region,omitempty"`
	PostalCode  string `json:"postal_code,omitempty"`
	CountryCode string `json:"country_code,omitempty"`
	Phone       string `json:"phone,omitempty"`
}

// CanonicalLine is one line of a canonical order. UnitPrice is the price
// of one unit before discounts, Total the line's amount as the platform
// states it, Tax and Discount what the platform puts on the line.
type CanonicalLine struct {
	ID        string `json:"id"`
	SKU       string `json:"sku,omitempty"`
	Title     string `json:"title,omitempty"`
	Quantity  int64  `json:"quantity"`
	UnitPrice string `json:"unit_price,omitempty"`
	Total     string `json:"total,omitempty"`
	Tax       string `json:"tax,omitempty"`
	Discount  string `json:"discount,omitempty"`
}
