package connectors

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

// The canonical form of kind amazon, from an Orders API v2026-01-01 Order
// (searchOrders, getOrder) or a v0 Order (getOrders; getOrder adds its
// items as "OrderItems"). docs/connectors.md has the status mapping.

func init() { registerCanonical("amazon", canonicalAmazon) }

func canonicalAmazon(p config.Platform, o Order) *order.Canonical {
	if optionString(p, "api_version", AmazonAPI20260101) == AmazonAPIV0 {
		return canonicalAmazonV0(o)
	}
	return canonicalAmazon2026(o)
}

// amazon2026States maps a FulfillmentStatus to the canonical status,
// financial and fulfilment states. Amazon charges the buyer when the order
// ships; before that the payment is authorised (pending while it is not).
var amazon2026States = map[string][3]string{
	"PENDING_AVAILABILITY": {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"PENDING":              {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"UNSHIPPED":            {order.StatusOpen, order.FinancialAuthorized, order.FulfillmentUnfulfilled},
	"PARTIALLY_SHIPPED":    {order.StatusOpen, order.FinancialPartiallyPaid, order.FulfillmentPartial},
	"SHIPPED":              {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"CANCELLED":            {order.StatusCancelled, order.FinancialVoided, order.FulfillmentUnfulfilled},
	"UNFULFILLABLE":        {order.StatusUnknown, order.FinancialUnknown, order.FulfillmentUnfulfilled},
}

// amazonV0States is the same for v0's OrderStatus.
var amazonV0States = map[string][3]string{
	"PendingAvailability": {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"Pending":             {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"Unshipped":           {order.StatusOpen, order.FinancialAuthorized, order.FulfillmentUnfulfilled},
	"PartiallyShipped":    {order.StatusOpen, order.FinancialPartiallyPaid, order.FulfillmentPartial},
	"Shipped":             {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"InvoiceUnconfirmed":  {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"Canceled":            {order.StatusCancelled, order.FinancialVoided, order.FulfillmentUnfulfilled},
	"Unfulfillable":       {order.StatusUnknown, order.FinancialUnknown, order.FulfillmentUnfulfilled},
}

func amazonStates(c *order.Canonical, states map[string][3]string, word string) {
	c.PlatformStatus = word
	if st, ok := states[word]; ok {
		c.Status, c.FinancialStatus, c.FulfillmentStatus = st[0], st[1], st[2]
	} else if word != "" {
		c.Status, c.FinancialStatus, c.FulfillmentStatus = order.StatusUnknown, order.FinancialUnknown, order.FulfillmentUnknown
	}
}

type amazonBreakdowns []struct {
	Type     string       `json:"type"`
	Subtotal *amazonMoney `json:"subtotal"`
}

// get is the amount of the breakdown of this type ("" when none); a
// DISCOUNT comes as the amount taken off, positive.
func (b amazonBreakdowns) get(typ string) string {
	for _, x := range b {
		if x.Type == typ && x.Subtotal != nil && ValidDecimal(x.Subtotal.Amount) {
			return strings.TrimPrefix(x.Subtotal.Amount, "-")
		}
	}
	return ""
}

type amazonAddress2026 struct {
	Name          string `json:"name"`
	CompanyName   string `json:"companyName"`
	AddressLine1  string `json:"addressLine1"`
	AddressLine2  string `json:"addressLine2"`
	City          string `json:"city"`
	StateOrRegion string `json:"stateOrRegion"`
	PostalCode    string `json:"postalCode"`
	CountryCode   string `json:"countryCode"`
	Phone         string `json:"phone"`
}

type amazon2026Full struct {
	OrderID string `json:"orderId"`
	Buyer   *struct {
		BuyerName  string `json:"buyerName"`
		BuyerEmail string `json:"buyerEmail"`
	} `json:"buyer"`
	Recipient *struct {
		DeliveryAddress *amazonAddress2026 `json:"deliveryAddress"`
	} `json:"recipient"`
	Proceeds *struct {
		GrandTotal *amazonMoney     `json:"grandTotal"`
		Breakdowns amazonBreakdowns `json:"breakdowns"`
	} `json:"proceeds"`
	Fulfillment *struct {
		FulfillmentStatus       string `json:"fulfillmentStatus"`
		FulfillmentServiceLevel string `json:"fulfillmentServiceLevel"`
	} `json:"fulfillment"`
	OrderItems []struct {
		amazon2026Item // what a line takes on the list path, so both read one item shape
		Proceeds       *struct {
			Breakdowns amazonBreakdowns `json:"breakdowns"`
		} `json:"proceeds"`
		Promotion *struct {
			Breakdowns []struct {
				PromotionID string `json:"promotionId"`
			} `json:"breakdowns"`
		} `json:"promotion"`
	} `json:"orderItems"`
}

func canonicalAmazon2026(o Order) *order.Canonical {
	var a amazon2026Full
	if json.Unmarshal(o.Raw, &a) != nil {
		return nil
	}
	c := &order.Canonical{Source: AmazonAPI20260101, Number: a.OrderID, Currency: o.Currency}
	if f := a.Fulfillment; f != nil {
		amazonStates(c, amazon2026States, f.FulfillmentStatus)
	}
	if p := a.Proceeds; p != nil {
		if g := p.GrandTotal; g != nil {
			c.Totals.Total, c.Currency = decimalOrEmpty(g.Amount), g.CurrencyCode
		}
		b := p.Breakdowns
		c.Totals.Subtotal, c.Totals.Shipping, c.Totals.Tax, c.Totals.Discount = b.get("ITEM"), b.get("SHIPPING"), b.get("TAX"), b.get("DISCOUNT")
		if f := a.Fulfillment; f != nil && (f.FulfillmentServiceLevel != "" || c.Totals.Shipping != "") {
			c.Shipping = []order.ShippingLine{{Title: f.FulfillmentServiceLevel, Code: f.FulfillmentServiceLevel, Price: c.Totals.Shipping}}
		}
	}
	if b := a.Buyer; b != nil {
		c.Customer = &order.Customer{Name: b.BuyerName, Email: b.BuyerEmail}
	}
	if r := a.Recipient; r != nil && r.DeliveryAddress != nil {
		d := r.DeliveryAddress
		c.ShippingAddress = &order.Address{Name: d.Name, Company: d.CompanyName, Line1: d.AddressLine1, Line2: d.AddressLine2, City: d.City,
			Region: d.StateOrRegion, PostalCode: d.PostalCode, CountryCode: d.CountryCode, Phone: d.Phone}
	}
	for _, it := range a.OrderItems {
		l := order.CanonicalLine{ID: it.OrderItemID, Quantity: it.QuantityOrdered}
		if p := it.Product; p != nil {
			l.SKU, l.Title = p.SellerSKU, p.Title
			if p.Price != nil && p.Price.UnitPrice != nil {
				l.UnitPrice = decimalOrEmpty(p.Price.UnitPrice.Amount)
			}
		}
		if p := it.Proceeds; p != nil {
			l.Total, l.Tax, l.Discount = p.Breakdowns.get("ITEM"), p.Breakdowns.get("TAX"), p.Breakdowns.get("DISCOUNT")
		}
		if p := it.Promotion; p != nil {
			for _, b := range p.Breakdowns {
				if b.PromotionID != "" && !slices.ContainsFunc(c.Discounts, func(d order.Discount) bool { return d.Code == b.PromotionID }) {
					c.Discounts = append(c.Discounts, order.Discount{Code: b.PromotionID})
				}
			}
		}
		c.Lines = append(c.Lines, l)
	}
	return c
}

type amazonV0Full struct {
	AmazonOrderID    string         `json:"AmazonOrderId"`
	OrderStatus      string         `json:"OrderStatus"`
	OrderTotal       *amazonV0Money `json:"OrderTotal"`
	ShipServiceLevel string         `json:"ShipServiceLevel"`
	BuyerInfo        *struct {
		BuyerEmail string `json:"BuyerEmail"`
		BuyerName  string `json:"BuyerName"`
	} `json:"BuyerInfo"`
	ShippingAddress *struct {
		Name          string `json:"Name"`
		CompanyName   string `json:"CompanyName"`
		AddressLine1  string `json:"AddressLine1"`
		AddressLine2  string `json:"AddressLine2"`
		City          string `json:"City"`
		StateOrRegion string `json:"StateOrRegion"`
		PostalCode    string `json:"PostalCode"`
		CountryCode   string `json:"CountryCode"`
		Phone         string `json:"Phone"`
	} `json:"ShippingAddress"`
	OrderItems *[]struct {
		OrderItemID       string         `json:"OrderItemId"`
		SellerSKU         string         `json:"SellerSKU"`
		Title             string         `json:"Title"`
		QuantityOrdered   int64          `json:"QuantityOrdered"`
		ItemPrice         *amazonV0Money `json:"ItemPrice"`
		ItemTax           *amazonV0Money `json:"ItemTax"`
		ShippingPrice     *amazonV0Money `json:"ShippingPrice"`
		ShippingTax       *amazonV0Money `json:"ShippingTax"`
		ShippingDiscount  *amazonV0Money `json:"ShippingDiscount"`
		PromotionDiscount *amazonV0Money `json:"PromotionDiscount"`
		PromotionIDs      []string       `json:"PromotionIds"`
	} `json:"OrderItems"`
}

func (m *amazonV0Money) amount() string {
	if m == nil {
		return ""
	}
	return decimalOrEmpty(m.Amount)
}

func canonicalAmazonV0(o Order) *order.Canonical {
	var a amazonV0Full
	if json.Unmarshal(o.Raw, &a) != nil {
		return nil
	}
	c := &order.Canonical{Source: AmazonAPIV0, Number: a.AmazonOrderID, Currency: o.Currency}
	amazonStates(c, amazonV0States, a.OrderStatus)
	if t := a.OrderTotal; t != nil {
		c.Totals.Total, c.Currency = t.amount(), t.CurrencyCode
	}
	if b := a.BuyerInfo; b != nil && (b.BuyerEmail != "" || b.BuyerName != "") {
		c.Customer = &order.Customer{Name: b.BuyerName, Email: b.BuyerEmail}
	}
	if d := a.ShippingAddress; d != nil {
		c.ShippingAddress = &order.Address{Name: d.Name, Company: d.CompanyName, Line1: d.AddressLine1, Line2: d.AddressLine2, City: d.City,
			Region: d.StateOrRegion, PostalCode: d.PostalCode, CountryCode: d.CountryCode, Phone: d.Phone}
	}
	if a.OrderItems == nil { // getOrders: no items, the lines stay as the header says
		c.Lines = CanonicalLines(o.Lines)
		if a.ShipServiceLevel != "" {
			c.Shipping = []order.ShippingLine{{Title: a.ShipServiceLevel, Code: a.ShipServiceLevel}}
		}
		return c
	}
	var sub, ship, shipTax, tax, disc []string
	for _, it := range *a.OrderItems {
		if c.Currency == "" && it.ItemPrice != nil {
			c.Currency = it.ItemPrice.CurrencyCode // a pending order has no OrderTotal
		}
		total := it.ItemPrice.amount()
		c.Lines = append(c.Lines, order.CanonicalLine{ID: it.OrderItemID, SKU: it.SellerSKU, Title: it.Title, Quantity: it.QuantityOrdered,
			UnitPrice: divideDecimal(total, it.QuantityOrdered), Total: total, Tax: it.ItemTax.amount(), Discount: nonZero(it.PromotionDiscount.amount())})
		for _, p := range it.PromotionIDs {
			if !slices.ContainsFunc(c.Discounts, func(d order.Discount) bool { return d.Code == p }) {
				c.Discounts = append(c.Discounts, order.Discount{Code: p})
			}
		}
		for _, x := range []struct {
			to *[]string
			m  *amazonV0Money
		}{{&sub, it.ItemPrice}, {&ship, it.ShippingPrice}, {&shipTax, it.ShippingTax}, {&tax, it.ItemTax}, {&tax, it.ShippingTax},
			{&disc, it.PromotionDiscount}, {&disc, it.ShippingDiscount}} {
			if v := x.m.amount(); v != "" {
				*x.to = append(*x.to, v)
			}
		}
	}
	c.Totals.Subtotal, c.Totals.Shipping, c.Totals.Tax, c.Totals.Discount = decimalSum(sub...), decimalSum(ship...), decimalSum(tax...), nonZero(decimalSum(disc...))
	if a.ShipServiceLevel != "" || c.Totals.Shipping != "" {
		c.Shipping = []order.ShippingLine{{Title: a.ShipServiceLevel, Code: a.ShipServiceLevel, Price: c.Totals.Shipping, Tax: decimalSum(shipTax...)}}
	}
	return c
}
