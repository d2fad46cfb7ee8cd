package connectors

import (
	"cmp"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

// The canonical form of kind shopify, from either API's Raw: the GraphQL
// Order node (shopify_fields.go) or the REST order resource. Both give the
// same canonical fields for the same order (docs/connectors.md has the
// field table and the status mapping); Source says which it came from.

func init() { registerCanonical("shopify", canonicalShopify) }

func canonicalShopify(p config.Platform, o Order) *order.Canonical {
	if optionString(p, "api", ShopifyGraphQL) == ShopifyGraphQL {
		return canonicalShopifyGraphQL(o)
	}
	return canonicalShopifyREST(o)
}

// optionString is a platform's string option as written, or def when it
// is not set: read per order, so without decoding every option (the
// configuration was checked when it loaded).
func optionString(p config.Platform, key, def string) string {
	if s, ok := p.Options[key].(string); ok && s != "" {
		return s
	}
	return def
}

// shopifyFinancial maps displayFinancialStatus (GraphQL) or
// financial_status (REST, lower case) to the canonical financial state.
func shopifyFinancial(s string) string {
	switch strings.ToUpper(s) {
	case "":
		return ""
	case "PENDING":
		return order.FinancialPending
	case "AUTHORIZED":
		return order.FinancialAuthorized
	case "PAID":
		return order.FinancialPaid
	case "PARTIALLY_PAID":
		return order.FinancialPartiallyPaid
	case "PARTIALLY_REFUNDED":
		return order.FinancialPartiallyRefunded
	case "REFUNDED":
		return order.FinancialRefunded
	case "VOIDED":
		return order.FinancialVoided
	}
	return order.FinancialUnknown // EXPIRED, and whatever Shopify adds
}

// shopifyFulfillment maps displayFulfillmentStatus (GraphQL) or
// fulfillment_status (REST: null, fulfilled, partial, restocked).
func shopifyFulfillment(s string, rest bool) string {
	switch strings.ToUpper(s) {
	case "":
		if rest {
			return order.FulfillmentUnfulfilled // REST's null: nothing fulfilled yet
		}
		return ""
	case "FULFILLED":
		return order.FulfillmentFulfilled
	case "PARTIAL", "PARTIALLY_FULFILLED", "IN_PROGRESS":
		return order.FulfillmentPartial
	case "UNFULFILLED", "RESTOCKED", "OPEN", "PENDING_FULFILLMENT", "SCHEDULED", "ON_HOLD", "REQUEST_DECLINED":
		return order.FulfillmentUnfulfilled
	}
	return order.FulfillmentUnknown
}

// shopifyStatus is the canonical status: cancelled when cancelled, completed
// when closed (archived) or fulfilled, open otherwise.
func shopifyStatus(cancelled, closed bool, fulfillment string) string {
	switch {
	case cancelled:
		return order.StatusCancelled
	case closed || fulfillment == order.FulfillmentFulfilled:
		return order.StatusCompleted
	}
	return order.StatusOpen
}

type gqlMoney struct {
	ShopMoney struct {
		Amount       string `json:"amount"`
		CurrencyCode string `json:"currencyCode"`
	} `json:"shopMoney"`
}

func (m *gqlMoney) amount() string {
	if m == nil || !ValidDecimal(m.ShopMoney.Amount) {
		return ""
	}
	return m.ShopMoney.Amount
}

type gqlTaxLine struct {
	Title    string      `json:"title"`
	Rate     json.Number `json:"rate"`
	PriceSet *gqlMoney   `json:"priceSet"`
}

// gqlTaxTotal is the sum of tax lines' amounts, "" when there are none or
// one is not a decimal (not stated rather than a wrong total).
func gqlTaxTotal(ls []gqlTaxLine) string {
	taxes := make([]string, 0, len(ls))
	for _, t := range ls {
		taxes = append(taxes, t.PriceSet.amount())
	}
	return decimalSum(taxes...)
}

type gqlAddress struct {
	Name          string `json:"name"`
	FirstName     string `json:"firstName"`
	LastName      string `json:"lastName"`
	Company       string `json:"company"`
	Address1      string `json:"address1"`
	Address2      string `json:"address2"`
	City          string `json:"city"`
	Province      string `json:"province"`
	Zip           string `json:"zip"`
	CountryCodeV2 string `json:"countryCodeV2"`
	Phone         string `json:"phone"`
}

type gqlShopifyOrder struct {
	Name                     string    `json:"name"`
	CancelledAt              *string   `json:"cancelledAt"`
	ClosedAt                 *string   `json:"closedAt"`
	DisplayFinancialStatus   string    `json:"displayFinancialStatus"`
	DisplayFulfillmentStatus string    `json:"displayFulfillmentStatus"`
	CurrencyCode             string    `json:"currencyCode"`
	SubtotalPriceSet         *gqlMoney `json:"subtotalPriceSet"`
	TotalShippingPriceSet    *gqlMoney `json:"totalShippingPriceSet"`
	TotalTaxSet              *gqlMoney `json:"totalTaxSet"`
	TotalDiscountsSet        *gqlMoney `json:"totalDiscountsSet"`
	TotalPriceSet            *gqlMoney `json:"totalPriceSet"`
	Email                    string    `json:"email"`
	Phone                    string    `json:"phone"`
	Customer                 *struct {
		ID                  string `json:"id"`
		DisplayName         string `json:"displayName"`
		FirstName           string `json:"firstName"`
		LastName            string `json:"lastName"`
		DefaultEmailAddress *struct {
			EmailAddress string `json:"emailAddress"`
		} `json:"defaultEmailAddress"`
		DefaultPhoneNumber *struct {
			PhoneNumber string `json:"phoneNumber"`
		} `json:"defaultPhoneNumber"`
	} `json:"customer"`
	BillingAddress       *gqlAddress  `json:"billingAddress"`
	ShippingAddress      *gqlAddress  `json:"shippingAddress"`
	TaxLines             []gqlTaxLine `json:"taxLines"`
	Tags                 []string     `json:"tags"`
	Note                 *string      `json:"note"`
	DiscountApplications *struct {
		Nodes []struct {
			Code  string `json:"code"`
			Title string `json:"title"`
			Value *struct {
				Typename   string      `json:"__typename"`
				Amount     string      `json:"amount"`
				Percentage json.Number `json:"percentage"`
			} `json:"value"`
		} `json:"nodes"`
	} `json:"discountApplications"`
	ShippingLines *struct {
		Nodes []struct {
			Title              string       `json:"title"`
			Code               string       `json:"code"`
			DiscountedPriceSet *gqlMoney    `json:"discountedPriceSet"`
			OriginalPriceSet   *gqlMoney    `json:"originalPriceSet"`
			TaxLines           []gqlTaxLine `json:"taxLines"`
		} `json:"nodes"`
	} `json:"shippingLines"`
	LineItems *struct {
		Nodes []struct {
			ID                   string       `json:"id"`
			SKU                  string       `json:"sku"`
			Name                 string       `json:"name"`
			Title                string       `json:"title"`
			Quantity             int64        `json:"quantity"`
			OriginalUnitPriceSet *gqlMoney    `json:"originalUnitPriceSet"`
			DiscountedTotalSet   *gqlMoney    `json:"discountedTotalSet"`
			TotalDiscountSet     *gqlMoney    `json:"totalDiscountSet"`
			TaxLines             []gqlTaxLine `json:"taxLines"`
		} `json:"nodes"`
	} `json:"lineItems"`
}

func canonicalShopifyGraphQL(o Order) *order.Canonical {
	var n gqlShopifyOrder
	if json.Unmarshal(o.Raw, &n) != nil {
		return nil
	}
	c := &order.Canonical{Source: ShopifyGraphQL, Number: n.Name, PlatformStatus: o.Status, Currency: n.CurrencyCode,
		FinancialStatus:   shopifyFinancial(n.DisplayFinancialStatus),
		FulfillmentStatus: shopifyFulfillment(n.DisplayFulfillmentStatus, false),
		Totals: order.Totals{Subtotal: n.SubtotalPriceSet.amount(), Shipping: n.TotalShippingPriceSet.amount(), Tax: n.TotalTaxSet.amount(),
			Discount: n.TotalDiscountsSet.amount(), Total: n.TotalPriceSet.amount()},
	}
	if len(n.Tags) > 0 {
		c.Tags = n.Tags
	}
	c.Status = shopifyStatus(n.CancelledAt != nil, n.ClosedAt != nil, c.FulfillmentStatus)
	if n.Note != nil {
		c.Note = *n.Note
	}
	for _, t := range n.TaxLines {
		c.Taxes = append(c.Taxes, order.Tax{Title: t.Title, Rate: decimalNumber(t.Rate), Amount: t.PriceSet.amount()})
	}
	if d := n.DiscountApplications; d != nil {
		for _, a := range d.Nodes {
			dc := order.Discount{Code: a.Code, Title: a.Title}
			if a.Value != nil && a.Value.Typename == "MoneyV2" && ValidDecimal(a.Value.Amount) {
				dc.Amount = a.Value.Amount
			}
			c.Discounts = append(c.Discounts, dc)
		}
	}
	if s := n.ShippingLines; s != nil {
		for _, l := range s.Nodes {
			price := cmp.Or(l.DiscountedPriceSet.amount(), l.OriginalPriceSet.amount())
			c.Shipping = append(c.Shipping, order.ShippingLine{Title: l.Title, Code: l.Code, Price: price, Tax: gqlTaxTotal(l.TaxLines)})
		}
	}
	if cu := n.Customer; cu != nil || n.Email != "" || n.Phone != "" {
		cc := &order.Customer{Email: n.Email, Phone: n.Phone}
		if cu != nil {
			cc.ID, _ = shopifyID(cu.ID, "Customer")
			cc.Name = cmp.Or(strings.TrimSpace(cu.FirstName+" "+cu.LastName), cu.DisplayName)
			if cc.Email == "" && cu.DefaultEmailAddress != nil {
				cc.Email = cu.DefaultEmailAddress.EmailAddress
			}
			if cc.Phone == "" && cu.DefaultPhoneNumber != nil {
				cc.Phone = cu.DefaultPhoneNumber.PhoneNumber
			}
		}
		c.Customer = cc
	}
	c.BillingAddress, c.ShippingAddress = n.BillingAddress.canonical(), n.ShippingAddress.canonical()
	if li := n.LineItems; li != nil {
		for _, l := range li.Nodes {
			id, _ := shopifyID(l.ID, "LineItem")
			c.Lines = append(c.Lines, order.CanonicalLine{ID: id, SKU: l.SKU, Title: cmp.Or(l.Name, l.Title), Quantity: l.Quantity,
				UnitPrice: l.OriginalUnitPriceSet.amount(), Total: l.DiscountedTotalSet.amount(), Tax: gqlTaxTotal(l.TaxLines),
				Discount: nonZero(l.TotalDiscountSet.amount())})
		}
	} else {
		c.Lines = CanonicalLines(o.Lines)
	}
	return c
}

func (a *gqlAddress) canonical() *order.Address {
	if a == nil {
		return nil
	}
	name := a.Name
	if name == "" {
		name = strings.TrimSpace(a.FirstName + " " + a.LastName)
	}
	return &order.Address{Name: name, Company: a.Company, Line1: a.Address1, Line2: a.Address2, City: a.City, Region: a.Province,
		PostalCode: a.Zip, CountryCode: a.CountryCodeV2, Phone: a.Phone}
}

type restTaxLine struct {
	Title string      `json:"title"`
	Rate  json.Number `json:"rate"`
	Price string      `json:"price"`
}

// restTaxTotal is gqlTaxTotal for REST tax lines.
func restTaxTotal(ls []restTaxLine) string {
	taxes := make([]string, 0, len(ls))
	for _, t := range ls {
		taxes = append(taxes, t.Price)
	}
	return decimalSum(taxes...)
}

type restAddress struct {
	Name        string `json:"name"`
	FirstName   string `json:"first_name"`
	LastName    string `json:"last_name"`
	Company     string `json:"company"`
	Address1    string `json:"address1"`
	Address2    string `json:"address2"`
	City        string `json:"city"`
	Province    string `json:"province"`
	Zip         string `json:"zip"`
	CountryCode string `json:"country_code"`
	Phone       string `json:"phone"`
}

func (a *restAddress) canonical() *order.Address {
	if a == nil {
		return nil
	}
	g := gqlAddress{Name: a.Name, FirstName: a.FirstName, LastName: a.LastName, Company: a.Company, Address1: a.Address1, Address2: a.Address2,
		City: a.City, Province: a.Province, Zip: a.Zip, CountryCodeV2: a.CountryCode, Phone: a.Phone}
	return g.canonical()
}

type restShopifyOrder struct {
	Name                  string  `json:"name"`
	CancelledAt           *string `json:"cancelled_at"`
	ClosedAt              *string `json:"closed_at"`
	FinancialStatus       string  `json:"financial_status"`
	FulfillmentStatus     string  `json:"fulfillment_status"`
	Currency              string  `json:"currency"`
	SubtotalPrice         string  `json:"subtotal_price"`
	TotalTax              string  `json:"total_tax"`
	TotalDiscounts        string  `json:"total_discounts"`
	TotalPrice            string  `json:"total_price"`
	TotalShippingPriceSet *struct {
		ShopMoney struct {
			Amount string `json:"amount"`
		} `json:"shop_money"`
	} `json:"total_shipping_price_set"`
	Email    string `json:"email"`
	Phone    string `json:"phone"`
	Customer *struct {
		ID        json.Number `json:"id"`
		Email     string      `json:"email"`
		FirstName string      `json:"first_name"`
		LastName  string      `json:"last_name"`
		Phone     string      `json:"phone"`
	} `json:"customer"`
	BillingAddress       *restAddress  `json:"billing_address"`
	ShippingAddress      *restAddress  `json:"shipping_address"`
	TaxLines             []restTaxLine `json:"tax_lines"`
	Tags                 string        `json:"tags"`
	Note                 *string       `json:"note"`
	DiscountApplications []struct {
		Type      string `json:"type"`
		Code      string `json:"code"`
		Title     string `json:"title"`
		Value     string `json:"value"`
		ValueType string `json:"value_type"`
	} `json:"discount_applications"`
	DiscountCodes []struct {
		Code   string `json:"code"`
		Amount string `json:"amount"`
	} `json:"discount_codes"`
	ShippingLines []struct {
		Title           string        `json:"title"`
		Code            string        `json:"code"`
		Price           string        `json:"price"`
		DiscountedPrice string        `json:"discounted_price"`
		TaxLines        []restTaxLine `json:"tax_lines"`
	} `json:"shipping_lines"`
	LineItems []struct {
		ID                  json.Number   `json:"id"`
		SKU                 string        `json:"sku"`
		Name                string        `json:"name"`
		Title               string        `json:"title"`
		Quantity            int64         `json:"quantity"`
		Price               string        `json:"price"`
		TaxLines            []restTaxLine `json:"tax_lines"`
		DiscountAllocations []struct {
			Amount string `json:"amount"`
		} `json:"discount_allocations"`
	} `json:"line_items"`
}

func canonicalShopifyREST(o Order) *order.Canonical {
	var n restShopifyOrder
	if json.Unmarshal(o.Raw, &n) != nil {
		return nil
	}
	c := &order.Canonical{Source: ShopifyREST, Number: n.Name, PlatformStatus: o.Status, Currency: n.Currency,
		FinancialStatus:   shopifyFinancial(n.FinancialStatus),
		FulfillmentStatus: shopifyFulfillment(n.FulfillmentStatus, true),
		Totals: order.Totals{Subtotal: decimalOrEmpty(n.SubtotalPrice), Tax: decimalOrEmpty(n.TotalTax), Discount: decimalOrEmpty(n.TotalDiscounts),
			Total: decimalOrEmpty(n.TotalPrice)}}
	if s := n.TotalShippingPriceSet; s != nil {
		c.Totals.Shipping = decimalOrEmpty(s.ShopMoney.Amount)
	}
	c.Status = shopifyStatus(n.CancelledAt != nil, n.ClosedAt != nil, c.FulfillmentStatus)
	if n.Note != nil {
		c.Note = *n.Note
	}
	for _, t := range strings.Split(n.Tags, ",") { // REST joins tags with ", "
		if t = strings.TrimSpace(t); t != "" {
			c.Tags = append(c.Tags, t)
		}
	}
	for _, t := range n.TaxLines {
		c.Taxes = append(c.Taxes, order.Tax{Title: t.Title, Rate: decimalNumber(t.Rate), Amount: decimalOrEmpty(t.Price)})
	}
	for _, a := range n.DiscountApplications {
		dc := order.Discount{Code: a.Code, Title: a.Title}
		if a.ValueType == "fixed_amount" {
			dc.Amount = decimalOrEmpty(a.Value)
		}
		c.Discounts = append(c.Discounts, dc)
	}
	if len(n.DiscountApplications) == 0 { // older orders: codes only
		for _, d := range n.DiscountCodes {
			c.Discounts = append(c.Discounts, order.Discount{Code: d.Code, Amount: decimalOrEmpty(d.Amount)})
		}
	}
	for _, l := range n.ShippingLines {
		price := cmp.Or(decimalOrEmpty(l.DiscountedPrice), decimalOrEmpty(l.Price))
		c.Shipping = append(c.Shipping, order.ShippingLine{Title: l.Title, Code: l.Code, Price: price, Tax: restTaxTotal(l.TaxLines)})
	}
	if cu := n.Customer; cu != nil || n.Email != "" || n.Phone != "" {
		cc := &order.Customer{Email: n.Email, Phone: n.Phone}
		if cu != nil {
			cc.ID = cu.ID.String()
			cc.Name = strings.TrimSpace(cu.FirstName + " " + cu.LastName)
			if cc.Email == "" {
				cc.Email = cu.Email
			}
			if cc.Phone == "" {
				cc.Phone = cu.Phone
			}
		}
		c.Customer = cc
	}
	c.BillingAddress, c.ShippingAddress = n.BillingAddress.canonical(), n.ShippingAddress.canonical()
	if n.LineItems == nil {
		c.Lines = CanonicalLines(o.Lines)
		return c
	}
	for _, l := range n.LineItems {
		allocated := make([]string, 0, len(l.DiscountAllocations))
		for _, a := range l.DiscountAllocations {
			allocated = append(allocated, a.Amount)
		}
		discount := decimalSum(allocated...)
		// REST states no line total: quantity x price, less what discounts
		// allocated to the line (GraphQL's discountedTotalSet).
		total := decimalProduct(l.Price, l.Quantity)
		if total != "" && discount != "" {
			total = decimalSum(total, "-"+discount)
		}
		c.Lines = append(c.Lines, order.CanonicalLine{ID: l.ID.String(), SKU: l.SKU, Title: cmp.Or(l.Name, l.Title), Quantity: l.Quantity,
			UnitPrice: decimalOrEmpty(l.Price), Total: total, Tax: restTaxTotal(l.TaxLines), Discount: nonZero(discount)})
	}
	return c
}

// decimalOrEmpty is s when it is a decimal amount, else "" (not stated).
func decimalOrEmpty(s string) string {
	if ValidDecimal(s) {
		return s
	}
	return ""
}

// decimalNumber is a JSON number as a decimal string ("0.06"), "" when it
// is none (an exponent, or nothing).
func decimalNumber(n json.Number) string { return decimalOrEmpty(n.String()) }

func nonZero(s string) string {
	if r, ok := new(big.Rat).SetString(s); !ok || r.Sign() == 0 {
		return ""
	}
	return s
}

// decimalScale is the number of decimals of a decimal string.
func decimalScale(s string) int {
	if _, frac, ok := strings.Cut(s, "."); ok {
		return len(frac)
	}
	return 0
}

// decimalSum adds decimal strings exactly, with the most decimals any of
// them has; "" when there is none, or one is not a decimal.
func decimalSum(values ...string) string {
	if len(values) == 0 {
		return ""
	}
	sum, scale := new(big.Rat), 0
	for _, v := range values {
		v = strings.Replace(v, "--", "", 1)
		if !ValidDecimal(v) {
			return ""
		}
		r, _ := new(big.Rat).SetString(v)
		sum.Add(sum, r)
		scale = max(scale, decimalScale(v))
	}
	return sum.FloatString(scale)
}

// decimalProduct is price x quantity, exactly.
func decimalProduct(price string, qty int64) string {
	if !ValidDecimal(price) {
		return ""
	}
	r, _ := new(big.Rat).SetString(price)
	return r.Mul(r, new(big.Rat).SetInt64(qty)).FloatString(decimalScale(price))
}
