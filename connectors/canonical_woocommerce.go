package connectors

import (
	"encoding/json"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

func init() { registerCanonical("woocommerce", wooCanonical) }

// wooCanonOrder is what the canonical order reads of a WooCommerce REST v3
// order (https://woocommerce.github.io/woocommerce-rest-api-docs/#order-properties).
type wooCanonOrder struct {
	Number        canonText       `json:"number"`
	Status        canonText       `json:"status"`
	DiscountTotal canonText       `json:"discount_total"`
	ShippingTotal canonText       `json:"shipping_total"`
	TotalTax      canonText       `json:"total_tax"`
	Total         canonText       `json:"total"`
	CustomerID    canonText       `json:"customer_id"`
	CustomerNote  canonText       `json:"customer_note"`
	Billing       wooCanonAddress `json:"billing"`
	Shipping      wooCanonAddress `json:"shipping"`
	LineItems     []struct {
		ID       canonText `json:"id"`
		Name     canonText `json:"name"`
		SKU      canonText `json:"sku"`
		Quantity canonText `json:"quantity"`
		Subtotal canonText `json:"subtotal"`
		Total    canonText `json:"total"`
		TotalTax canonText `json:"total_tax"`
	} `json:"line_items"`
	TaxLines []struct {
		RateCode         canonText `json:"rate_code"`
		Label            canonText `json:"label"`
		TaxTotal         canonText `json:"tax_total"`
		ShippingTaxTotal canonText `json:"shipping_tax_total"`
		RatePercent      canonText `json:"rate_percent"`
	} `json:"tax_lines"`
	ShippingLines []struct {
		MethodTitle canonText `json:"method_title"`
		MethodID    canonText `json:"method_id"`
		Total       canonText `json:"total"`
		TotalTax    canonText `json:"total_tax"`
	} `json:"shipping_lines"`
	CouponLines []struct {
		Code     canonText `json:"code"`
		Discount canonText `json:"discount"`
	} `json:"coupon_lines"`
	Refunds []struct {
		Total canonText `json:"total"`
	} `json:"refunds"`
}

type wooCanonAddress struct {
	FirstName canonText `json:"first_name"`
	LastName  canonText `json:"last_name"`
	Company   canonText `json:"company"`
	Address1  canonText `json:"address_1"`
	Address2  canonText `json:"address_2"`
	City      canonText `json:"city"`
	State     canonText `json:"state"`
	Postcode  canonText `json:"postcode"`
	Country   canonText `json:"country"`
	Email     canonText `json:"email"`
	Phone     canonText `json:"phone"`
}

func (a wooCanonAddress) address() *order.Address {
	return canonAddress(order.Address{Name: canonJoin(a.FirstName.String(), a.LastName.String()), Company: a.Company.String(),
		Line1: a.Address1.String(), Line2: a.Address2.String(), City: a.City.String(), Region: a.State.String(),
		PostalCode: a.Postcode.String(), CountryCode: a.Country.String(), Phone: a.Phone.String()})
}

// wooStates maps a WooCommerce order status to the canonical status,
// financial and fulfilment state (docs/orders.md has the table). A status
// a plugin added is unknown; its word stays in platform_status.
var wooStates = map[string][3]string{
	"pending":        {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"checkout-draft": {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"on-hold":        {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"failed":         {order.StatusOpen, order.FinancialUnknown, order.FulfillmentUnfulfilled},
	"processing":     {order.StatusOpen, order.FinancialPaid, order.FulfillmentUnfulfilled},
	"completed":      {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"refunded":       {order.StatusCompleted, order.FinancialRefunded, order.FulfillmentUnknown},
	"cancelled":      {order.StatusCancelled, order.FinancialUnknown, order.FulfillmentUnknown},
	"trash":          {order.StatusCancelled, order.FinancialUnknown, order.FulfillmentUnknown},
}

// wooCanonical maps a WooCommerce order. A paid order with refunds that
// is not refunded whole is partially_refunded. A line's unit price is its
// subtotal (before discounts) over its quantity when that is exact, its
// discount subtotal - total; a tax line's amount is its tax_total plus
// its shipping_tax_total.
func wooCanonical(_ config.Platform, o Order) *order.Canonical {
	var w wooCanonOrder
	if json.Unmarshal(o.Raw, &w) != nil {
		return nil
	}
	c := &order.Canonical{Number: w.Number.String(), PlatformStatus: w.Status.String(), Currency: o.Currency,
		Totals: order.Totals{Shipping: w.ShippingTotal.String(), Tax: w.TotalTax.String(), Discount: w.DiscountTotal.String(), Total: w.Total.String()},
		Note:   w.CustomerNote.String()}
	c.Status = order.StatusUnknown
	if s, ok := wooStates[c.PlatformStatus]; ok {
		c.Status, c.FinancialStatus, c.FulfillmentStatus = s[0], s[1], s[2]
	}
	if len(w.Refunds) > 0 && c.FinancialStatus == order.FinancialPaid {
		c.FinancialStatus = order.FinancialPartiallyRefunded
	}
	for _, t := range w.TaxLines {
		title := t.Label.String()
		if title == "" {
			title = t.RateCode.String()
		}
		amount := t.TaxTotal.String()
		if t.ShippingTaxTotal != "" {
			amount = canonSum(amount, t.ShippingTaxTotal.String())
		}
		c.Taxes = append(c.Taxes, order.Tax{Title: title, Rate: canonPercent(t.RatePercent.String()), Amount: amount})
	}
	for _, d := range w.CouponLines {
		c.Discounts = append(c.Discounts, order.Discount{Code: d.Code.String(), Amount: d.Discount.String()})
	}
	for _, s := range w.ShippingLines {
		c.Shipping = append(c.Shipping, order.ShippingLine{Title: s.MethodTitle.String(), Code: s.MethodID.String(), Price: s.Total.String(), Tax: s.TotalTax.String()})
	}
	cust := order.Customer{Email: w.Billing.Email.String(), Name: canonJoin(w.Billing.FirstName.String(), w.Billing.LastName.String()), Phone: w.Billing.Phone.String()}
	if id := w.CustomerID.String(); id != "" && id != "0" { // 0 is a guest
		cust.ID = id
	}
	c.Customer = canonCustomer(cust)
	c.BillingAddress, c.ShippingAddress = w.Billing.address(), w.Shipping.address()
	if !o.HasLines {
		return c
	}
	for i, it := range w.LineItems {
		l := order.CanonicalLine{ID: it.ID.String(), SKU: it.SKU.String(), Title: it.Name.String(), Total: it.Total.String(), Tax: it.TotalTax.String()}
		if i < len(o.Lines) {
			l.Quantity = o.Lines[i].Quantity
		}
		l.UnitPrice = ebayUnitPrice(it.Subtotal.String(), l.Quantity)
		if d := canonSum(it.Subtotal.String(), canonNeg(it.Total.String())); canonSign(d) > 0 {
			l.Discount = d
		}
		c.Lines = append(c.Lines, l)
	}
	return c
}
