package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// The full Order of the Shopify surface: every field ordersync's connector
// selects (shopify_fields.go there) and a few more for order_fragment,
// derived from the order's seed as its details are, in one tree the
// surface projects each query's selection onto (shopifyProject). The
// amounts follow the sim's own order: the lines' prices and quantities, a
// shipping charge of 4.99 or none, the version's total; taxes are 20 %
// VAT included in the prices. Shopify's field names and shapes
// (https://shopify.dev/docs/api/admin-graphql/latest/objects/Order).

// shopifyConnData is a connection in the tree: all its nodes, paged by
// first and after when projected. cursorID names it in its cursors.
type shopifyConnData struct {
	nodes    []map[string]any
	cursorID string
	lines    bool // lineItems: pages capped at Config.ShopifyLinePage
}

func money(cents int64, currency string) map[string]any {
	return map[string]any{"__typename": "MoneyBag", "shopMoney": map[string]any{"__typename": "MoneyV2", "amount": formatCents(cents), "currencyCode": currency}}
}

// vatIncluded is the 20 % VAT inside a gross amount, rounded half up.
func vatIncluded(cents int64) int64 { return (cents*20 + 60) / 120 }

func vatLines(gross int64, currency string) []map[string]any {
	return []map[string]any{{"__typename": "TaxLine", "title": "VAT", "rate": 0.2, "ratePercentage": 20.0, "priceSet": money(vatIncluded(gross), currency)}}
}

// shopifyOrderTree is order seq at version v as the Shopify surface knows
// it. full makes every optional part present (a sample to check
// selections against).
func shopifyOrderTree(seq uint32, o *order, v version, currency string, full bool) map[string]any {
	d := newDetails(o.seed)
	id := orderID(seq)
	financial, cancelled := ShopifyFinancialStatus(v.status.String())
	fulfillment := "UNFULFILLED"
	shipped := v.status == statusShipped || v.status == statusDelivered
	if shipped {
		fulfillment = "FULFILLED"
	}
	created, updated := shopifySeconds(o.created), shopifySeconds(v.updated)
	first, last, c := firstNames[d.first], lastNames[d.last], cities[d.city]
	email := strings.ToLower(first+"."+last) + strconv.Itoa(int(d.mailNo)) + "@example.com"
	phone := c.phone + " " + strconv.Itoa(int(d.phone))
	address := map[string]any{"__typename": "MailingAddress", "name": first + " " + last, "firstName": first, "lastName": last, "company": nil,
		"address1": strconv.Itoa(int(d.houseNo)) + " " + streets[d.street], "address2": nil, "city": c.name, "province": nil, "provinceCode": nil,
		"zip": strconv.Itoa(int(d.zip)), "country": countryNames[c.country], "countryCodeV2": c.country, "phone": phone}

	var subtotal int64
	lines := make([]map[string]any, d.n)
	for i := range lines {
		it := d.items[i]
		total := it.qty * it.price
		subtotal += total
		lines[i] = map[string]any{"__typename": "LineItem", "id": shopifyLineGID + fmt.Sprintf("%s%02d", id, i+1),
			"sku": "SKU-" + strconv.Itoa(int(it.sku)), "name": products[it.product], "title": products[it.product], "quantity": it.qty,
			"variantTitle": nil, "vendor": "Sim Goods", "requiresShipping": true,
			"originalUnitPriceSet": money(it.price, currency), "discountedTotalSet": money(total, currency), "totalDiscountSet": money(0, currency),
			"taxLines": vatLines(total, currency)}
	}
	freeShip := full || (d.ship == 0 && d.extra%4 == 0)
	var shipping []map[string]any
	var discounts []map[string]any
	codes := []any{}
	discount := int64(0)
	if d.ship > 0 || freeShip {
		paid := d.ship
		if freeShip {
			paid, discount = 0, 499
		}
		shipping = append(shipping, map[string]any{"__typename": "ShippingLine", "id": "gid://shopify/ShippingLine/" + id + "01",
			"title": "Standard Shipping", "code": "STANDARD", "source": "shopify", "carrierIdentifier": nil,
			"originalPriceSet": money(499, currency), "discountedPriceSet": money(paid, currency), "taxLines": vatLines(paid, currency)})
	}
	if freeShip {
		codes = append(codes, "FREESHIP")
		discounts = append(discounts, map[string]any{"__typename": "DiscountCodeApplication", "code": "FREESHIP", "index": 0,
			"allocationMethod": "EACH", "targetSelection": "ALL", "targetType": "SHIPPING_LINE",
			"value": map[string]any{"__typename": "PricingPercentageValue", "percentage": 100.0}})
	}
	tags := []any{"sim"}
	var attrs []map[string]any
	if full || d.extra%3 == 0 {
		tags = append(tags, "gift")
		attrs = append(attrs, map[string]any{"__typename": "Attribute", "key": "gift_wrap", "value": "yes"})
	}
	var note any
	if full || d.extra%5 == 0 {
		note = "Please leave the parcel at the door."
	}
	gateways := []any{"shopify_payments"}
	if v.status == statusPending {
		gateways = []any{"manual"}
	}
	refunded := int64(0)
	var refunds []map[string]any
	if full || v.status == statusRefunded {
		refunded = v.total
		refunds = append(refunds, map[string]any{"__typename": "Refund", "id": "gid://shopify/Refund/" + id, "createdAt": updated,
			"note": "Returned by the customer", "totalRefundedSet": money(v.total, currency)})
	}
	var fulfillments []map[string]any
	if full || shipped {
		display := "IN_TRANSIT"
		if v.status == statusDelivered {
			display = "DELIVERED"
		}
		number := fmt.Sprintf("JD%014d", d.extra)
		fulfillments = append(fulfillments, map[string]any{"__typename": "Fulfillment", "id": "gid://shopify/Fulfillment/" + id,
			"name": "#" + id + "-F1", "status": "SUCCESS", "displayStatus": display, "createdAt": updated, "updatedAt": updated,
			"trackingInfo": []map[string]any{{"__typename": "FulfillmentTrackingInfo", "company": "DHL Express", "number": number,
				"url": "https://www.dhl.com/en/express/tracking.html?AWB=" + number}}})
	}
	var cancelledAt, cancelReason, closedAt any
	if cancelled {
		cancelledAt, cancelReason = updated, "CUSTOMER"
	}
	if v.status == statusDelivered {
		closedAt = updated
	}
	customer := map[string]any{"__typename": "Customer", "id": fmt.Sprintf("gid://shopify/Customer/%d", 7_000_000_000+(d.first*100+d.last)*100+d.mailNo),
		"displayName": first + " " + last, "firstName": first, "lastName": last,
		"defaultEmailAddress": map[string]any{"__typename": "CustomerEmailAddress", "emailAddress": email},
		"defaultPhoneNumber":  map[string]any{"__typename": "CustomerPhoneNumber", "phoneNumber": phone}}
	return map[string]any{
		"__typename": "Order", "id": shopifyOrderGID + id, "name": "#" + id, "createdAt": created, "updatedAt": updated, "processedAt": created,
		"cancelledAt": cancelledAt, "cancelReason": cancelReason, "closedAt": closedAt,
		"displayFinancialStatus": financial, "displayFulfillmentStatus": fulfillment, "currencyCode": currency, "taxesIncluded": true,
		"subtotalPriceSet": money(subtotal, currency), "totalShippingPriceSet": money(d.ship, currency),
		"totalTaxSet": money(vatIncluded(v.total), currency), "totalDiscountsSet": money(discount, currency),
		"totalPriceSet": money(v.total, currency), "totalRefundedSet": money(refunded, currency),
		"email": email, "phone": phone, "customer": customer, "billingAddress": address, "shippingAddress": cloneMap(address),
		"taxLines": vatLines(v.total, currency), "discountCodes": codes, "tags": tags, "note": note, "customAttributes": orEmpty(attrs),
		"paymentGatewayNames": gateways, "refunds": orEmpty(refunds), "fulfillments": orEmpty(fulfillments),
		"lineItems":            &shopifyConnData{nodes: lines, cursorID: id, lines: true},
		"shippingLines":        &shopifyConnData{nodes: shipping, cursorID: id + "/shippingLines"},
		"discountApplications": &shopifyConnData{nodes: discounts, cursorID: id + "/discountApplications"},
		// Beyond what the connector selects, for options.order_fragment.
		"poNumber": nil, "sourceName": "web", "customerLocale": "en", "confirmationNumber": fmt.Sprintf("SIM%06d", d.extra%1_000_000),
		"totalWeight": "0", "statusPageUrl": "https://sim.example/orders/" + id,
		"channelInformation": map[string]any{"__typename": "ChannelInformation", "channelId": "gid://shopify/ChannelInformation/1"},
	}
}

func orEmpty(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// shopifyFieldError is a selection Shopify refuses before running it.
type shopifyFieldError struct {
	code, msg string
}

func (e *shopifyFieldError) Error() string { return e.msg }

// shopifyProjector answers a selection from a tree, counting the actual
// cost as Shopify does (what was returned: 1 an object, 2 a connection).
type shopifyProjector struct {
	vars     map[string]any
	linePage int
	actual   int
}

// typeMatches says whether an inline fragment on cond applies to an
// object of type typ (its own type, or an interface or union it is in).
func typeMatches(cond, typ string) bool {
	switch {
	case cond == "" || cond == typ:
		return true
	case cond == "DiscountApplication":
		switch typ {
		case "AutomaticDiscountApplication", "DiscountCodeApplication", "ManualDiscountApplication", "ScriptDiscountApplication":
			return true
		}
		return false
	case cond == "PricingValue":
		return typ == "MoneyV2" || typ == "PricingPercentageValue"
	}
	return false
}

func (p *shopifyProjector) object(sel []gqlSel, obj map[string]any) (map[string]any, error) {
	typ, _ := obj["__typename"].(string)
	out := map[string]any{}
	for _, s := range sel {
		if s.inline {
			if !typeMatches(s.on, typ) {
				continue
			}
			sub, err := p.object(s.sub, obj)
			if err != nil {
				return nil, err
			}
			for k, v := range sub {
				out[k] = v
			}
			continue
		}
		v, ok := obj[s.name]
		if !ok {
			return nil, &shopifyFieldError{code: "undefinedField", msg: fmt.Sprintf("Field '%s' doesn't exist on type '%s'", s.name, typ)}
		}
		x, err := p.value(s, v)
		if err != nil {
			return nil, err
		}
		out[s.key()] = x
	}
	return out, nil
}

func (p *shopifyProjector) value(s gqlSel, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if !s.hasSub {
			return nil, &shopifyFieldError{code: "selectionMismatch", msg: fmt.Sprintf("Field must have selections (field '%s' returns %v but has no selections. Did you mean '%s { ... }'?)", s.name, x["__typename"], s.name)}
		}
		p.actual++
		return p.object(s.sub, x)
	case []map[string]any:
		if !s.hasSub {
			return nil, &shopifyFieldError{code: "selectionMismatch", msg: fmt.Sprintf("Field must have selections (field '%s' returns a list of objects)", s.name)}
		}
		n, given, err := s.intArg("first", p.vars)
		if err != nil {
			return nil, err
		}
		if given {
			x = x[:min(max(n, 0), len(x))]
		}
		out := make([]any, 0, len(x))
		for _, el := range x {
			p.actual++
			o, err := p.object(s.sub, el)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	case *shopifyConnData:
		return p.connection(s, x)
	}
	if s.hasSub {
		return nil, &shopifyFieldError{code: "selectionMismatch", msg: fmt.Sprintf("Selections can't be made on scalars (field '%s')", s.name)}
	}
	return v, nil
}

func (p *shopifyProjector) connection(s gqlSel, c *shopifyConnData) (any, error) {
	if !s.hasSub {
		return nil, &shopifyFieldError{code: "selectionMismatch", msg: fmt.Sprintf("Field must have selections (field '%s' returns a connection)", s.name)}
	}
	first, given, err := s.intArg("first", p.vars)
	if err != nil {
		return nil, err
	}
	if !given {
		first = len(c.nodes) // a bulk query: the whole connection
	}
	if c.lines && p.linePage > 0 {
		first = min(first, p.linePage)
	}
	from := 0
	if a, ok := s.args["after"]; ok {
		if after, _ := a.resolve(p.vars).(string); after != "" {
			n, ok := decodeLineCursor(after, c.cursorID)
			if !ok {
				return nil, &shopifyFieldError{code: "BAD_REQUEST", msg: fmt.Sprintf("%s for %s", shopifyBadCursor, s.name)}
			}
			from = n
		}
	}
	from = min(from, len(c.nodes))
	end := min(from+max(first, 0), len(c.nodes))
	p.actual += 2
	out := map[string]any{}
	for _, f := range s.sub {
		switch f.name {
		case "nodes", "edges":
			list := make([]any, 0, end-from)
			for i := from; i < end; i++ {
				if f.name == "nodes" {
					p.actual++
					o, err := p.object(f.sub, c.nodes[i])
					if err != nil {
						return nil, err
					}
					list = append(list, o)
					continue
				}
				edge := map[string]any{}
				for _, e := range f.sub {
					switch e.name {
					case "node":
						p.actual++
						o, err := p.object(e.sub, c.nodes[i])
						if err != nil {
							return nil, err
						}
						edge[e.key()] = o
					case "cursor":
						edge[e.key()] = encodeLineCursor(c.cursorID, i+1)
					}
				}
				list = append(list, edge)
			}
			out[f.key()] = list
		case "pageInfo":
			pi := map[string]any{}
			for _, e := range f.sub {
				switch e.name {
				case "hasNextPage":
					pi[e.key()] = end < len(c.nodes)
				case "hasPreviousPage":
					pi[e.key()] = from > 0
				case "endCursor":
					if end > from {
						pi[e.key()] = encodeLineCursor(c.cursorID, end)
					} else {
						pi[e.key()] = nil
					}
				case "startCursor":
					if end > from {
						pi[e.key()] = encodeLineCursor(c.cursorID, from+1)
					} else {
						pi[e.key()] = nil
					}
				}
			}
			out[f.key()] = pi
		default:
			return nil, &shopifyFieldError{code: "undefinedField", msg: fmt.Sprintf("Field '%s' doesn't exist on a connection", f.name)}
		}
	}
	return out, nil
}

// shopifySample is an order with every optional part present: selections
// are checked against it before a query is charged, as Shopify validates
// a query before it runs it.
var shopifySample = func() map[string]any {
	o := order{seed: 1, created: 1_700_000_000_000_000}
	return shopifyOrderTree(1, &o, version{updated: o.created, total: 1000, status: statusDelivered}, "EUR", true)
}()

// checkShopifySelection validates an Order selection.
func checkShopifySelection(sel []gqlSel) error {
	p := &shopifyProjector{vars: map[string]any{}}
	_, err := p.object(stripArgs(sel), shopifySample)
	return err
}

// stripArgs drops arguments, so a check does not depend on the variables.
func stripArgs(sel []gqlSel) []gqlSel {
	out := make([]gqlSel, len(sel))
	for i, s := range sel {
		s.args = nil
		s.sub = stripArgs(s.sub)
		out[i] = s
	}
	return out
}
