package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// amazon2026 lists orders through Orders API v2026-01-01 searchOrders
// (options.api_version 2026-01-01, the default):
// GET <endpoint>/orders/2026-01-01/orders. Every order comes with its items,
// which become Order.Lines.
//
// What it relies on, from models/orders-api-model/orders_2026-01-01.json in
// amzn/selling-partner-api-models and Amazon's "Orders API Migration Guide":
//   - lastUpdatedAfter and lastUpdatedBefore are inclusive ("at or after",
//     "at or before"), ISO 8601 in UTC; SP-API date-times carry milliseconds
//     ("Date and Time Formatting"); lastUpdatedBefore must lie at least two
//     minutes before the request.
//   - marketplaceIds (at most 50), maxResultsPerPage (1..100, default 100)
//     and includedData are arrays, sent comma-separated; orderItems is part
//     of every order, FULFILLMENT adds the status and PROCEEDS the total,
//     BUYER and RECIPIENT the buyer's and the recipient's personal data.
//   - The response is {"orders":[...],"pagination":{"nextToken"},
//     "lastUpdatedBefore"}; pagination is absent on the last page. A later
//     page repeats every parameter of the first with paginationToken (only
//     maxResultsPerPage and includedData may change), and "the token will
//     expire after 24 hours".
//   - Errors are {"errors":[{"code","message","details"}]}; the usage plan
//     is 0.0056 requests/s with burst 20, reported in x-amzn-RateLimit-Limit.
type amazon2026 struct {
	*amazonAPI
	url      string
	included string // includedData, comma-separated
}

// amazon2026Path is searchOrders under the endpoint.
const amazon2026Path = "/orders/2026-01-01/orders"

// amazonMillis formats a searchOrders bound: UTC with milliseconds, the
// finest precision SP-API date-times take.
const amazonMillis = "2006-01-02T15:04:05.000Z07:00"

// amazon2026MaxPage is the largest maxResultsPerPage.
const amazon2026MaxPage = 100

// Pagination tokens expire 24 hours after Amazon issues them. A token the
// connector hands out is prefixed with the time it was issued
// ("o26.<unix seconds>.<Amazon's token>"), so a page requested later than
// amazon2026TokenLifetime minus an hour (clock skew, a request in flight)
// restarts its window instead of sending a token about to lapse. The prefix
// also tells a token of this API from a v0 NextToken when a platform changes
// api_version while a slice is in flight.
const (
	amazon2026TokenPrefix   = "o26."
	amazon2026TokenLifetime = 24 * time.Hour
	amazon2026TokenMargin   = time.Hour
)

// amazon2026Fulfilment are the datasets every order is asked with: what an
// OMS needs to fulfil it, none of them the buyer's personal data. FULFILLMENT
// is the status and the ship-by and deliver-by windows, PROCEEDS the totals
// (grand total and its ITEM, SHIPPING, TAX breakdowns), PACKAGES the
// shipped packages with carrier and tracking number, PROMOTION the
// promotions on each item, CANCELLATION the buyer's cancellation requests,
// TAX the tax registrations and invoicing (orders_2026-01-01.json).
var amazon2026Fulfilment = []string{"FULFILLMENT", "PROCEEDS", "PACKAGES", "PROMOTION", "CANCELLATION", "TAX"}

// amazon2026Included is includedData: the fulfilment datasets always, then
// the datasets options ask for, then BUYER and RECIPIENT only when the
// account opted in (include_buyer, include_recipient, or included_data
// naming them); config has checked them against the API's enum.
func amazon2026Included(opts AmazonOptions) string {
	sets := slices.Clone(amazon2026Fulfilment)
	extra := slices.Clone(opts.IncludedData)
	if opts.IncludeBuyer {
		extra = append(extra, "BUYER")
	}
	if opts.IncludeRecipient {
		extra = append(extra, "RECIPIENT")
	}
	for _, d := range extra {
		if !slices.Contains(sets, d) {
			sets = append(sets, d)
		}
	}
	return strings.Join(sets, ",")
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
//
// The request covers [From floored to the millisecond, To rounded up to the
// millisecond], both inclusive: Amazon does not document the precision it
// keeps for lastUpdatedTime, and an inclusive bound at To is the one that
// cannot leave out an order updated just before To whatever that precision
// is. Orders updated at exactly To come back too; the next slice reads them
// again, which the newest-version rule makes harmless.
//
// A window whose pagination token cannot be used starts over. A token
// issued too long ago is not sent: the window's first page is asked for in
// the same call. A token Amazon refuses (any 400 about it, whatever its
// text: amazonUnusableToken) ends the call with an empty page whose next
// token restarts the window (amazonRestartToken), so the restart is a
// request of its own, after its own request slot. Nothing is skipped
// (every page of the window is read again from the start); orders read
// twice are harmless. A token from v0 starts over too.
func (c *amazon2026) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	after := req.From.UTC().Truncate(time.Millisecond)
	before := ceilTime(req.To.UTC(), time.Millisecond)
	if err := c.checkSettled(before, "searchOrders", amazonMillis); err != nil {
		return Page{}, err
	}
	gen, ours := amazonGeneration(req.Token)
	token := c.resumable(ours)
	page, err := c.search(ctx, req, after, before, token)
	var dead *amazonDeadToken
	if errors.As(err, &dead) {
		return Page{NextToken: amazonRestartToken(token, c.now()), RateLimit: dead.rate}, nil
	}
	page.NextToken = withGeneration(gen, page.NextToken)
	return page, err
}

// resumable returns Amazon's token inside a token of ours, or "" when the
// window must start over: no token, a token from another API version, or
// one too close to its expiry.
func (c *amazon2026) resumable(token string) string {
	rest, ok := strings.CutPrefix(token, amazon2026TokenPrefix)
	if !ok {
		return ""
	}
	stamp, amazonToken, ok := strings.Cut(rest, ".")
	issued, err := strconv.ParseInt(stamp, 10, 64)
	if !ok || err != nil || amazonToken == "" {
		return ""
	}
	if c.now().Sub(time.Unix(issued, 0)) >= amazon2026TokenLifetime-amazon2026TokenMargin {
		return ""
	}
	return amazonToken
}

// amazonDeadToken is a 400 about the pagination token a request carried;
// rate is the usage plan the answer stated.
type amazonDeadToken struct{ rate float64 }

func (e *amazonDeadToken) Error() string { return "pagination token refused" }

func (c *amazon2026) search(ctx context.Context, req PageRequest, after, before time.Time, token string) (Page, error) {
	q := map[string]string{
		"lastUpdatedAfter":  after.Format(amazonMillis),
		"lastUpdatedBefore": before.Format(amazonMillis),
		"marketplaceIds":    c.marketplaces,
		"includedData":      c.included,
	}
	if size := pageSize(req, c.pageSize); size > 0 {
		q["maxResultsPerPage"] = strconv.Itoa(min(size, amazon2026MaxPage))
	}
	if token != "" {
		q["paginationToken"] = token
	}
	resp, err := c.get(ctx, c.url, q)
	if err != nil {
		return Page{}, err
	}
	if token != "" && amazonUnusableToken(resp.StatusCode(), resp.Body()) {
		return Page{}, &amazonDeadToken{rate: headerFloat(resp.Header(), amazonRateHeader)}
	}
	if err := responseError(c.platform, c.cred, resp, amazonRateHeader); err != nil {
		return Page{}, err
	}
	page, answered, err := c.decodePage(resp.Body(), req.Page)
	if err != nil {
		return Page{}, err
	}
	// The response says up to when it lists ("lastUpdatedBefore"). Should
	// Amazon ever answer for less than asked, the rest of the window would
	// be skipped without a trace; a retry later gets it all. Compared in
	// whole seconds, in case Amazon echoes the bound without milliseconds.
	if t, perr := time.Parse(time.RFC3339Nano, answered); perr == nil && t.Before(before.Truncate(time.Second)) {
		return Page{}, &TransientError{Platform: c.platform, Msg: fmt.Sprintf(
			"searchOrders listed orders updated until %s, not until %s as asked; retrying rather than skipping the rest of the window",
			answered, before.Format(amazonMillis))}
	}
	page.RateLimit = headerFloat(resp.Header(), amazonRateHeader)
	return page, nil
}

// decodePage returns a page and the response's lastUpdatedBefore.
func (c *amazon2026) decodePage(body []byte, page int) (Page, string, error) {
	items, err := decodeArrayPath(c.platform, page, body, []string{"orders"})
	if err != nil {
		return Page{}, "", err
	}
	var env struct {
		Pagination *struct {
			NextToken string `json:"nextToken"`
		} `json:"pagination"`
		LastUpdatedBefore string `json:"lastUpdatedBefore"`
	}
	if err := decodeJSON(c.platform, page, body, &env); err != nil {
		return Page{}, "", err
	}
	orders, err := decodeOrders(c.platform, page, items, c.order)
	if err != nil {
		return Page{}, "", err
	}
	p := Page{Orders: orders}
	if env.Pagination != nil && env.Pagination.NextToken != "" {
		p.NextToken = amazon2026TokenPrefix + strconv.FormatInt(c.now().Unix(), 10) + "." + env.Pagination.NextToken
	}
	return p, env.LastUpdatedBefore, nil
}

// amazonMoney is SP-API's Money: a decimal string and an ISO 4217 code.
type amazonMoney struct {
	Amount       string `json:"amount"`
	CurrencyCode string `json:"currencyCode"`
}

// amazon2026Order is the part of a searchOrders Order the connector reads;
// the rest travels in Order.Raw.
type amazon2026Order struct {
	OrderID         string `json:"orderId"`
	CreatedTime     string `json:"createdTime"`
	LastUpdatedTime string `json:"lastUpdatedTime"`
	Fulfillment     *struct {
		FulfillmentStatus string `json:"fulfillmentStatus"`
	} `json:"fulfillment"`
	Proceeds *struct {
		GrandTotal *amazonMoney `json:"grandTotal"`
	} `json:"proceeds"`
	OrderItems json.RawMessage `json:"orderItems"`
}

// amazon2026Item is the part of an OrderItem a line takes.
type amazon2026Item struct {
	OrderItemID     string `json:"orderItemId"`
	QuantityOrdered int64  `json:"quantityOrdered"`
	Product         *struct {
		Title     string `json:"title"`
		SellerSKU string `json:"sellerSku"`
		Price     *struct {
			UnitPrice *amazonMoney `json:"unitPrice"`
		} `json:"price"`
	} `json:"product"`
}

// order normalises one searchOrders order: status from
// fulfillment.fulfillmentStatus, total from proceeds.grandTotal (what the
// seller receives), lines from orderItems. An order without orderItems
// (which the API marks required) keeps HasLines false, so the store keeps
// the lines it has rather than dropping them.
func (c *amazon2026) order(ao amazon2026Order, raw json.RawMessage) (Order, error) {
	updated, created, err := orderHead(platformField{"orderId", ao.OrderID}, platformField{"lastUpdatedTime", ao.LastUpdatedTime}, platformField{"createdTime", ao.CreatedTime})
	if err != nil {
		return Order{}, err
	}
	o := Order{Platform: c.platform, ID: ao.OrderID, CreatedAt: created, UpdatedAt: updated, Raw: raw}
	if f := ao.Fulfillment; f != nil {
		o.Status = f.FulfillmentStatus
	}
	if p := ao.Proceeds; p != nil && p.GrandTotal != nil {
		if !ValidDecimal(p.GrandTotal.Amount) {
			return Order{}, fmt.Errorf("id %s: proceeds.grandTotal.amount %q is not a decimal number", textclip.Value(ao.OrderID), textclip.Value(p.GrandTotal.Amount))
		}
		o.Currency, o.Total = p.GrandTotal.CurrencyCode, p.GrandTotal.Amount
	}
	if len(ao.OrderItems) == 0 || string(ao.OrderItems) == "null" {
		return o, nil
	}
	if o.Lines, err = c.lines(raw); err != nil {
		return Order{}, fmt.Errorf("id %s: %w", textclip.Value(ao.OrderID), err)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}

// lines maps an order's orderItems to lines. A JSON type error keeps its
// offset, moved from the item to the order, so the MalformedError points at
// the bad byte in the page.
func (c *amazon2026) lines(raw json.RawMessage) ([]OrderLine, error) {
	items, err := decodeArrayPath(c.platform, 0, raw, []string{"orderItems"})
	if err != nil {
		var me *MalformedError
		if errors.As(err, &me) {
			return nil, me.Err
		}
		return nil, err
	}
	lines := make([]OrderLine, 0, len(items))
	for i, it := range items {
		var ai amazon2026Item
		if err := json.Unmarshal(it.Raw, &ai); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				moved := *te
				moved.Offset += it.Offset
				err = &moved
			}
			return nil, fmt.Errorf("orderItems[%d]: %w", i, describeFieldError(err))
		}
		line, err := amazon2026Line(ai)
		if err != nil {
			return nil, fmt.Errorf("orderItems[%d]: %w", i, err)
		}
		if slices.ContainsFunc(lines, func(l OrderLine) bool { return l.ID == line.ID }) {
			return nil, fmt.Errorf("orderItems[%d]: orderItemId %s appears twice", i, textclip.Value(line.ID))
		}
		lines = append(lines, line)
	}
	return lines, nil
}

func amazon2026Line(ai amazon2026Item) (OrderLine, error) {
	if ai.OrderItemID == "" {
		return OrderLine{}, errors.New("missing orderItemId")
	}
	if ai.QuantityOrdered < 0 {
		return OrderLine{}, fmt.Errorf("orderItemId %s: quantityOrdered %d is negative", textclip.Value(ai.OrderItemID), ai.QuantityOrdered)
	}
	l := OrderLine{ID: ai.OrderItemID, Quantity: ai.QuantityOrdered}
	if p := ai.Product; p != nil {
		l.SKU, l.Title = p.SellerSKU, p.Title
		if p.Price != nil && p.Price.UnitPrice != nil {
			if !ValidDecimal(p.Price.UnitPrice.Amount) {
				return OrderLine{}, fmt.Errorf("orderItemId %s: product.price.unitPrice.amount %q is not a decimal number", textclip.Value(ai.OrderItemID), textclip.Value(p.Price.UnitPrice.Amount))
			}
			l.UnitPrice, l.Currency = p.Price.UnitPrice.Amount, p.Price.UnitPrice.CurrencyCode
		}
	}
	return l, nil
}
