package connectors

import (
	"encoding/json"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

func init() { registerCanonical("ebay", ebayCanonical) }

// ebayAmount is the Fulfillment API's Amount: value and currency.
type ebayAmount struct {
	Value    canonText `json:"value"`
	Currency canonText `json:"currency"`
}

// ebayCanonAddress is the Fulfillment API's ExtendedContact (shipTo,
// buyerRegistrationAddress).
type ebayCanonAddress struct {
	FullName       canonText `json:"fullName"`
	CompanyName    canonText `json:"companyName"`
	Email          canonText `json:"email"`
	ContactAddress struct {
		AddressLine1    canonText `json:"addressLine1"`
		AddressLine2    canonText `json:"addressLine2"`
		City            canonText `json:"city"`
		StateOrProvince canonText `json:"stateOrProvince"`
		PostalCode      canonText `json:"postalCode"`
		CountryCode     canonText `json:"countryCode"`
	} `json:"contactAddress"`
	PrimaryPhone struct {
		PhoneNumber canonText `json:"phoneNumber"`
	} `json:"primaryPhone"`
}

func (a ebayCanonAddress) address() *order.Address {
	ca := a.ContactAddress
	return canonAddress(order.Address{Name: a.FullName.String(), Company: a.CompanyName.String(), Line1: ca.AddressLine1.String(),
		Line2: ca.AddressLine2.String(), City: ca.City.String(), Region: ca.StateOrProvince.String(), PostalCode: ca.PostalCode.String(),
		CountryCode: ca.CountryCode.String(), Phone: a.PrimaryPhone.PhoneNumber.String()})
}

// ebayCanonTax is a line item's tax or eBay-collected tax.
type ebayCanonTax struct {
	TaxType canonText  `json:"taxType"`
	Amount  ebayAmount `json:"amount"`
}

// ebayCanonOrder is what the canonical order reads of a Fulfillment API
// order (https://developer.ebay.com/api-docs/sell/fulfillment/types/sel:Order).
type ebayCanonOrder struct {
	OrderFulfillmentStatus canonText `json:"orderFulfillmentStatus"`
	OrderPaymentStatus     canonText `json:"orderPaymentStatus"`
	BuyerCheckoutNotes     canonText `json:"buyerCheckoutNotes"`
	CancelStatus           struct {
		CancelState canonText `json:"cancelState"`
	} `json:"cancelStatus"`
	Buyer struct {
		Username                 canonText        `json:"username"`
		BuyerRegistrationAddress ebayCanonAddress `json:"buyerRegistrationAddress"`
	} `json:"buyer"`
	PricingSummary struct {
		PriceSubtotal ebayAmount `json:"priceSubtotal"`
		PriceDiscount ebayAmount `json:"priceDiscount"`
		DeliveryCost  ebayAmount `json:"deliveryCost"`
		Tax           ebayAmount `json:"tax"`
		Total         ebayAmount `json:"total"`
	} `json:"pricingSummary"`
	FulfillmentStartInstructions []struct {
		ShippingStep struct {
			ShippingServiceCode canonText        `json:"shippingServiceCode"`
			ShipTo              ebayCanonAddress `json:"shipTo"`
		} `json:"shippingStep"`
	} `json:"fulfillmentStartInstructions"`
	LineItems []struct {
		LineItemCost      ebayAmount `json:"lineItemCost"`
		AppliedPromotions []struct {
			PromotionID    canonText  `json:"promotionId"`
			Description    canonText  `json:"description"`
			DiscountAmount ebayAmount `json:"discountAmount"`
		} `json:"appliedPromotions"`
		Taxes                    []ebayCanonTax `json:"taxes"`
		EbayCollectAndRemitTaxes []ebayCanonTax `json:"ebayCollectAndRemitTaxes"`
	} `json:"lineItems"`
}

// ebayFulfillment maps orderFulfillmentStatus; ebayFinancial maps
// orderPaymentStatus (docs/orders.md has the tables).
var (
	ebayFulfillment = map[string]string{
		"NOT_STARTED": order.FulfillmentUnfulfilled,
		"IN_PROGRESS": order.FulfillmentPartial,
		"FULFILLED":   order.FulfillmentFulfilled,
	}
	ebayFinancial = map[string]string{
		"PENDING":            order.FinancialPending,
		"PAID":               order.FinancialPaid,
		"PARTIALLY_REFUNDED": order.FinancialPartiallyRefunded,
		"FULLY_REFUNDED":     order.FinancialRefunded,
		"FAILED":             order.FinancialUnknown,
	}
)

// ebayCanonical maps a Fulfillment API order: cancelled when
// cancelStatus.cancelState is CANCELED, completed when FULFILLED, else
// open. The number is the orderId (what Seller Hub and the buyer see);
// discount is priceDiscount without its sign; each of lineItems'
// appliedPromotions is a discount; taxes are summed per taxType over the
// line items (taxes and ebayCollectAndRemitTaxes); a line's total is its
// lineItemCost (unit price × quantity, before discounts).
func ebayCanonical(_ config.Platform, o Order) *order.Canonical {
	var e ebayCanonOrder
	if json.Unmarshal(o.Raw, &e) != nil {
		return nil
	}
	ps := e.PricingSummary
	c := &order.Canonical{Number: o.ID, PlatformStatus: o.Status, Currency: o.Currency, Note: e.BuyerCheckoutNotes.String(),
		Totals: order.Totals{Subtotal: ps.PriceSubtotal.Value.String(), Shipping: ps.DeliveryCost.Value.String(), Tax: ps.Tax.Value.String(),
			Discount: canonAbs(ps.PriceDiscount.Value.String()), Total: ps.Total.Value.String()}}
	c.FulfillmentStatus = ebayFulfillment[e.OrderFulfillmentStatus.String()]
	if e.OrderFulfillmentStatus != "" && c.FulfillmentStatus == "" {
		c.FulfillmentStatus = order.FulfillmentUnknown
	}
	c.FinancialStatus = ebayFinancial[e.OrderPaymentStatus.String()]
	if e.OrderPaymentStatus != "" && c.FinancialStatus == "" {
		c.FinancialStatus = order.FinancialUnknown
	}
	switch {
	case e.CancelStatus.CancelState == "CANCELED":
		c.Status = order.StatusCancelled
	case c.FulfillmentStatus == order.FulfillmentFulfilled:
		c.Status = order.StatusCompleted
	case c.FulfillmentStatus != "" && c.FulfillmentStatus != order.FulfillmentUnknown:
		c.Status = order.StatusOpen
	default:
		c.Status = order.StatusUnknown
	}
	reg := e.Buyer.BuyerRegistrationAddress
	c.Customer = canonCustomer(order.Customer{ID: e.Buyer.Username.String(), Email: reg.Email.String(), Name: reg.FullName.String(),
		Phone: reg.PrimaryPhone.PhoneNumber.String()})
	if len(e.FulfillmentStartInstructions) > 0 {
		step := e.FulfillmentStartInstructions[0].ShippingStep
		c.ShippingAddress = step.ShipTo.address()
		if code := step.ShippingServiceCode.String(); code != "" || ps.DeliveryCost.Value != "" {
			c.Shipping = []order.ShippingLine{{Code: code, Price: ps.DeliveryCost.Value.String()}}
		}
	}
	taxByType := map[string]string{}
	var taxTypes []string
	addTax := func(t ebayCanonTax) {
		typ := t.TaxType.String()
		if prev, ok := taxByType[typ]; ok {
			taxByType[typ] = canonSum(prev, t.Amount.Value.String())
			return
		}
		taxTypes = append(taxTypes, typ)
		taxByType[typ] = t.Amount.Value.String()
	}
	for _, it := range e.LineItems {
		for _, p := range it.AppliedPromotions {
			c.Discounts = append(c.Discounts, order.Discount{Code: p.PromotionID.String(), Title: p.Description.String(), Amount: canonAbs(p.DiscountAmount.Value.String())})
		}
		for _, t := range it.Taxes {
			addTax(t)
		}
		for _, t := range it.EbayCollectAndRemitTaxes {
			addTax(t)
		}
	}
	for _, typ := range taxTypes {
		c.Taxes = append(c.Taxes, order.Tax{Title: typ, Amount: taxByType[typ]})
	}
	if !o.HasLines {
		return c
	}
	for i, l := range o.Lines {
		cl := order.CanonicalLine{ID: l.ID, SKU: l.SKU, Title: l.Title, Quantity: l.Quantity, UnitPrice: l.UnitPrice}
		if i < len(e.LineItems) {
			it := e.LineItems[i]
			cl.Total = it.LineItemCost.Value.String()
			var disc, tax []string
			for _, p := range it.AppliedPromotions {
				disc = append(disc, canonAbs(p.DiscountAmount.Value.String()))
			}
			for _, t := range it.Taxes {
				tax = append(tax, t.Amount.Value.String())
			}
			for _, t := range it.EbayCollectAndRemitTaxes {
				tax = append(tax, t.Amount.Value.String())
			}
			cl.Discount, cl.Tax = canonSum(disc...), canonSum(tax...)
		}
		c.Lines = append(c.Lines, cl)
	}
	return c
}
