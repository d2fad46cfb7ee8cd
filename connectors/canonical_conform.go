package connectors

import (
	"encoding/json"
	"math/big"
	"slices"
	"strings"

	"github.com/ordersync/ordersync/order"
)

// conform makes c valid under the canonical order's schema whatever the
// platform sent: a value the schema has no room for (money that is not a
// plain decimal, a currency that is not three letters, a status outside
// its values, a line without an id) is dropped or replaced by what says
// "not known", never passed on. The raw order keeps what the platform
// said; a receiver that validates canonical orders never sees one fail.
func conform(c *order.Canonical) {
	if !slices.Contains([]string{order.StatusOpen, order.StatusCompleted, order.StatusCancelled, order.StatusUnknown}, c.Status) {
		c.Status = order.StatusUnknown
	}
	if c.FinancialStatus != "" && !slices.Contains([]string{order.FinancialPending, order.FinancialAuthorized, order.FinancialPaid,
		order.FinancialPartiallyPaid, order.FinancialPartiallyRefunded, order.FinancialRefunded, order.FinancialVoided,
		order.FinancialUnknown}, c.FinancialStatus) {
		c.FinancialStatus = order.FinancialUnknown
	}
	if c.FulfillmentStatus != "" && !slices.Contains([]string{order.FulfillmentUnfulfilled, order.FulfillmentPartial,
		order.FulfillmentFulfilled, order.FulfillmentUnknown}, c.FulfillmentStatus) {
		c.FulfillmentStatus = order.FulfillmentUnknown
	}
	c.Currency = canonCurrency(c.Currency)
	for _, m := range []*string{&c.Totals.Subtotal, &c.Totals.Shipping, &c.Totals.Tax, &c.Totals.Discount, &c.Totals.Total} {
		canonMoney(m)
	}
	// A tax without an amount says nothing the schema can hold ("" is not
	// "0"): it is left out.
	c.Taxes = slices.DeleteFunc(c.Taxes, func(t order.Tax) bool { return !ValidDecimal(t.Amount) })
	for i := range c.Taxes {
		canonMoney(&c.Taxes[i].Rate)
	}
	if len(c.Taxes) == 0 {
		c.Taxes = nil
	}
	for i := range c.Discounts {
		canonMoney(&c.Discounts[i].Amount)
	}
	for i := range c.Shipping {
		canonMoney(&c.Shipping[i].Price)
		canonMoney(&c.Shipping[i].Tax)
	}
	for _, a := range []*order.Address{c.BillingAddress, c.ShippingAddress} {
		if a != nil {
			a.CountryCode = canonCountry(a.CountryCode)
		}
	}
	for i := range c.Lines {
		l := &c.Lines[i]
		if l.ID == "" {
			l.ID = PositionLineID(i)
		}
		l.Quantity = max(l.Quantity, 0)
		for _, m := range []*string{&l.UnitPrice, &l.Total, &l.Tax, &l.Discount} {
			canonMoney(m)
		}
	}
}

// canonMoney empties *s unless it is a plain decimal.
func canonMoney(s *string) {
	if !ValidDecimal(*s) {
		*s = ""
	}
}

// canonCurrency is an ISO 4217 code in upper case, or "" when s is not
// three letters.
func canonCurrency(s string) string {
	return upperLetters(strings.TrimSpace(s), 3)
}

// canonCountry is an ISO 3166-1 alpha-2 code in upper case, or "".
func canonCountry(s string) string {
	return upperLetters(strings.TrimSpace(s), 2)
}

func upperLetters(s string, n int) string {
	if len(s) != n {
		return ""
	}
	s = strings.ToUpper(s)
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return ""
		}
	}
	return s
}

// canonDecimal is a plain decimal as an integer of units of 10^-scale.
type canonDecimal struct {
	v     *big.Int
	scale int
}

func parseCanonDecimal(s string) (canonDecimal, bool) {
	if !ValidDecimal(s) {
		return canonDecimal{}, false
	}
	neg := strings.HasPrefix(s, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	v, _ := new(big.Int).SetString(intPart+frac, 10)
	if neg {
		v.Neg(v)
	}
	return canonDecimal{v: v, scale: len(frac)}, true
}

func (d canonDecimal) String() string {
	return formatScaled(new(big.Int).Abs(d.v), d.scale, d.v.Sign() < 0)
}

// rescale is d with scale s >= d.scale.
func (d canonDecimal) rescale(s int) canonDecimal {
	f := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-d.scale)), nil)
	return canonDecimal{v: new(big.Int).Mul(d.v, f), scale: s}
}

// canonSum adds plain decimals exactly, keeping the most decimals any of
// them has ("1.35" + "0.00" is "1.35"); "" when one of them is not a
// decimal or there are none.
func canonSum(values ...string) string {
	if len(values) == 0 {
		return ""
	}
	sum := canonDecimal{v: new(big.Int)}
	for _, s := range values {
		d, ok := parseCanonDecimal(s)
		if !ok {
			return ""
		}
		scale := max(sum.scale, d.scale)
		sum, d = sum.rescale(scale), d.rescale(scale)
		sum.v.Add(sum.v, d.v)
	}
	return sum.String()
}

// canonNeg is -s, "" when s is not a decimal.
func canonNeg(s string) string {
	d, ok := parseCanonDecimal(s)
	if !ok {
		return ""
	}
	d.v.Neg(d.v)
	return d.String()
}

// canonAbs is |s|, "" when s is not a decimal.
func canonAbs(s string) string {
	d, ok := parseCanonDecimal(s)
	if !ok {
		return ""
	}
	d.v.Abs(d.v)
	return d.String()
}

// canonSign is -1, 0 or 1 by s's sign; 0 for what is not a decimal.
func canonSign(s string) int {
	d, ok := parseCanonDecimal(s)
	if !ok {
		return 0
	}
	return d.v.Sign()
}

// canonPercent turns a percentage into a decimal fraction exactly ("20" is
// "0.20", "7.25" is "0.0725"); "" when s is not a decimal.
func canonPercent(s string) string {
	d, ok := parseCanonDecimal(s)
	if !ok {
		return ""
	}
	d.scale += 2
	return d.String()
}

// canonJoin joins the non-empty parts with a space (a first and last name).
func canonJoin(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// canonAddress is a, or nil when it says nothing.
func canonAddress(a order.Address) *order.Address {
	if a == (order.Address{}) {
		return nil
	}
	return &a
}

// canonCustomer is c, or nil when it says nothing.
func canonCustomer(c order.Customer) *order.Customer {
	if c == (order.Customer{}) {
		return nil
	}
	return &c
}

// canonText is a scalar of a platform's JSON as text: a string as it is,
// a number as its literal ("600.0" stays "600.0"), a boolean, null or
// anything else as "". One odd field then leaves only itself empty
// instead of failing the whole canonical order.
type canonText string

func (t *canonText) UnmarshalJSON(b []byte) error {
	*t = ""
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if json.Unmarshal(b, &s) == nil {
			*t = canonText(s)
		}
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*t = canonText(b)
	}
	return nil
}

func (t canonText) String() string { return string(t) }
