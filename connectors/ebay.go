package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// ebayMaxLimit is getOrders' largest limit ("If a requested limit is more
// than 200, the call fails").
const ebayMaxLimit = 200

// ebayConnector lists a seller's orders through the Sell Fulfillment API:
// GET <endpoint>/sell/fulfillment/v1/order with a User access token
// (https://developer.ebay.com/api-docs/sell/fulfillment/resources/order/methods/getOrders).
//
// getOrders pages by offset, and offsets drift while orders change: an order
// of the window modified during paging gets a lastModifiedDate after the
// window's end, drops out of the result set, and every later order moves one
// position up, so the order at the page boundary would be skipped (and one
// that appears late moves them down). ordersync freezes the window (the
// request always carries both bounds, the upper one in the settled past, so
// changed orders leave rather than move; they are picked up by the slice
// that holds their new time) and detects the shift: each later page starts
// one position early, at the last order already seen (the anchor). If that
// position holds another order, the set changed ahead of us and the window
// restarts from offset 0; orders read twice are harmless, since the store
// keeps the newest version. A window that keeps changing restarts until the
// slice reaches max_pages and is split into smaller, quieter slices.
type ebayConnector struct {
	platform string
	cred     config.CredentialRef
	url      string
	pageSize int
	http     *resty.Client
	tokens   authorizer
}

// newEbay builds the connector of kind "ebay". Endpoint is
// https://api.ebay.com (or https://api.sandbox.ebay.com); the credential is a
// JSON object {"client_id","client_secret","refresh_token"}: the app's keys
// and the seller's refresh token from the authorization code grant.
func newEbay(p config.Platform, o *EbayOptions, src credentials.Source) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts := *o
	fields := []string{"client_id", "client_secret", "refresh_token"}
	if err := checkStaticSecret(p, src, func(raw string) error {
		_, err := jsonSecret(p.Name, p.Credentials, raw, fields...)
		return err
	}); err != nil {
		return nil, err
	}
	c := &ebayConnector{platform: p.Name, cred: p.Credentials, url: base + "/sell/fulfillment/v1/order",
		pageSize: p.PageSize, http: newHTTPClient(p)}
	c.tokens = newAuthorizer(p, src, func(ctx context.Context, raw string) (string, time.Duration, error) {
		secret, err := jsonSecret(p.Name, p.Credentials, raw, fields...)
		if err != nil {
			return "", 0, err
		}
		// https://developer.ebay.com/api-docs/static/oauth-refresh-token-request.html:
		// the client authenticates with HTTP Basic; scopes may narrow the grant.
		return fetchToken(ctx, c.http, p.Name, tokenRequest{url: opts.TokenURL, credential: p.Credentials,
			basicUser: secret["client_id"], basicPass: secret["client_secret"],
			form: map[string]string{"grant_type": "refresh_token", "refresh_token": secret["refresh_token"], "scope": strings.Join(opts.Scopes, " ")}})
	})
	return c, nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
// The filter's bounds are inclusive with milliseconds, so it covers
// [From, last millisecond before To]. The token is "<offset>:<anchor id>".
func (c *ebayConnector) runtimeSecrets() []string { return c.tokens.issuedTokens() }

func (c *ebayConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	offset, anchor := 0, ""
	if req.Token != "" {
		o, a, _ := strings.Cut(req.Token, ":")
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || (n == 0) != (a == "") {
			return Page{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("page token %q is not an ebay connector token", textclip.Value(req.Token))}
		}
		offset, anchor = n, a
	}
	limit := min(max(pageSize(req, c.pageSize), 1), ebayMaxLimit)
	if anchor != "" {
		offset, limit = offset-1, min(limit+1, ebayMaxLimit)
	}
	const ms = "2006-01-02T15:04:05.000Z07:00"
	q := map[string]string{
		"filter": fmt.Sprintf("lastmodifieddate:[%s..%s]", req.From.UTC().Truncate(time.Millisecond).Format(ms),
			lastInstantBefore(req.To.UTC(), time.Millisecond).Format(ms)),
		"limit":  strconv.Itoa(limit),
		"offset": strconv.Itoa(offset),
	}
	resp, err := c.tokens.do(ctx, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetAuthToken(token).SetQueryParams(q).Get(c.url)
	})
	if err != nil {
		return Page{}, asTransportError(c.platform, err)
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Page{}, err
	}
	orders, err := c.decodePage(resp.Body(), req.Page)
	if err != nil {
		return Page{}, err
	}
	got := len(orders)
	if anchor != "" {
		if got == 0 || orders[0].ID != anchor {
			return Page{Orders: orders, NextToken: "0:"}, nil // the set shifted: restart the window
		}
		orders = orders[1:]
	}
	page := Page{Orders: orders}
	if got == limit && len(orders) > 0 {
		page.NextToken = fmt.Sprintf("%d:%s", offset+got, orders[len(orders)-1].ID)
	}
	return page, nil
}

// ebayOrder is the part of a Fulfillment API order the connector reads.
type ebayOrder struct {
	OrderID                string `json:"orderId"`
	CreationDate           string `json:"creationDate"`
	LastModifiedDate       string `json:"lastModifiedDate"`
	OrderFulfillmentStatus string `json:"orderFulfillmentStatus"`
	CancelStatus           struct {
		CancelState string `json:"cancelState"`
	} `json:"cancelStatus"`
	PricingSummary struct {
		Total struct {
			Value    string `json:"value"`
			Currency string `json:"currency"`
		} `json:"total"`
	} `json:"pricingSummary"`
	// LineItems is nil when the order came without lineItems (the API
	// always sends them): its lines are then unknown, not empty.
	LineItems *[]ebayLineItem `json:"lineItems"`
}

// ebayLineItem is the part of a LineItem a line takes.
type ebayLineItem struct {
	LineItemID   string `json:"lineItemId"`
	SKU          string `json:"sku"`
	Title        string `json:"title"`
	Quantity     int64  `json:"quantity"`
	LineItemCost struct {
		Value    string `json:"value"`
		Currency string `json:"currency"`
	} `json:"lineItemCost"`
}

func (c *ebayConnector) decodePage(body []byte, page int) ([]Order, error) {
	items, err := decodeArrayField(c.platform, page, body, "orders")
	if err != nil {
		return nil, err
	}
	orders, err := decodeOrders(c.platform, page, items, c.order)
	if err != nil {
		return nil, err
	}
	return orders, nil
}

// order normalises one eBay order: status is CANCELED for a cancelled
// order, else its orderFulfillmentStatus (NOT_STARTED, IN_PROGRESS, FULFILLED).
// Each of lineItems becomes a line: id lineItemId, sku, title, quantity,
// and the unit price from lineItemCost, which eBay documents as the unit
// price times the quantity, before discounts (see ebayUnitPrice).
func (c *ebayConnector) order(eo ebayOrder, raw json.RawMessage) (Order, error) {
	updated, created, err := orderHead(platformField{"orderId", eo.OrderID}, platformField{"lastModifiedDate", eo.LastModifiedDate}, platformField{"creationDate", eo.CreationDate})
	if err != nil {
		return Order{}, err
	}
	total := eo.PricingSummary.Total
	if !ValidDecimal(total.Value) {
		return Order{}, fmt.Errorf("id %s: pricingSummary.total.value %q is not a decimal number", textclip.Value(eo.OrderID), textclip.Value(total.Value))
	}
	status := eo.OrderFulfillmentStatus
	if eo.CancelStatus.CancelState == "CANCELED" {
		status = "CANCELED"
	}
	o := Order{Platform: c.platform, ID: eo.OrderID, Status: status, CreatedAt: created, UpdatedAt: updated,
		Currency: total.Currency, Total: total.Value, Raw: raw}
	if eo.LineItems == nil {
		return o, nil
	}
	o.Lines, err = linesFrom("lineItems", *eo.LineItems, func(_ int, it ebayLineItem) (OrderLine, error) {
		l := OrderLine{ID: it.LineItemID, SKU: it.SKU, Title: it.Title, Quantity: it.Quantity, Currency: it.LineItemCost.Currency}
		if err := checkLineValues(l, "lineItemId", "quantity", ""); err != nil {
			return OrderLine{}, err
		}
		if cost := it.LineItemCost.Value; cost != "" && !ValidDecimal(cost) {
			return OrderLine{}, fmt.Errorf("lineItemId %s: lineItemCost.value %q is not a decimal number", textclip.Value(l.ID), textclip.Value(cost))
		}
		l.UnitPrice = ebayUnitPrice(it.LineItemCost.Value, it.Quantity)
		if l.Currency == "" {
			l.Currency = total.Currency
		}
		return l, nil
	})
	if err != nil {
		return Order{}, fmt.Errorf("id %s: %w", textclip.Value(eo.OrderID), err)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}

// ebayUnitPrice is lineItemCost divided by quantity when the quotient is
// an exact decimal ("30.00" for 3 is "10.00", "5.5" for 2 is "2.75"),
// else "" ("10.00" for 3): the Fulfillment API has no unit price of its
// own, and a rounded one would be a price nobody charged. lineItemCost
// stays in Raw either way.
func ebayUnitPrice(cost string, quantity int64) string {
	if quantity <= 0 || !ValidDecimal(cost) {
		return ""
	}
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(cost, "-"), ".")
	v, _ := new(big.Int).SetString(intPart+frac, 10)
	n, ten := big.NewInt(quantity), big.NewInt(10)
	// A quotient that terminates needs at most as many more decimals as
	// the larger power of 2 or 5 in the quantity: six are enough for every
	// quantity below 128.
	for scale := len(frac); scale <= len(frac)+6; scale++ {
		q, r := new(big.Int).QuoRem(v, n, new(big.Int))
		if r.Sign() == 0 {
			return formatScaled(q, scale, strings.HasPrefix(cost, "-"))
		}
		v.Mul(v, ten)
	}
	return ""
}

// formatScaled writes q / 10^scale as a plain decimal.
func formatScaled(q *big.Int, scale int, negative bool) string {
	out := q.String()
	if scale > 0 {
		if len(out) <= scale {
			out = strings.Repeat("0", scale-len(out)+1) + out
		}
		out = out[:len(out)-scale] + "." + out[len(out)-scale:]
	}
	if negative && q.Sign() != 0 {
		out = "-" + out
	}
	return out
}

// GetOrder fetches one order through the Fulfillment API's getOrder:
// GET /sell/fulfillment/v1/order/{orderId}
// (https://developer.ebay.com/api-docs/sell/fulfillment/resources/order/methods/getOrder),
// the same order resource a page lists. eBay answers an unknown id 404
// (errorId 32100, "Invalid order ID").
func (c *ebayConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	if err := checkGetID(c.platform, req.ID); err != nil {
		return Order{}, err
	}
	resp, err := c.tokens.do(ctx, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetAuthToken(token).Get(orderPath(c.url, req.ID))
	})
	if err != nil {
		return Order{}, asTransportError(c.platform, err)
	}
	return decodeGotOrder(c.platform, c.cred, req.ID, resp, c.order)
}
