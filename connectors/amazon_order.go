package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/ordersync/ordersync/internal/textclip"
)

// amazonOrderIDPattern is what an order id may look like in a request
// path: Amazon's are 3-7-7 digits, a simulator's plain digits.
var amazonOrderIDPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

func (a *amazonAPI) checkOrderID(id string) error {
	if !amazonOrderIDPattern.MatchString(id) {
		return &PermanentError{Platform: a.platform, Msg: fmt.Sprintf("order id %s is not an Amazon order id (like 902-3159896-1390916)", textclip.Value(id))}
	}
	return nil
}

// getOne sends a get-one-order request: 404 is ErrOrderNotFound (both
// versions answer an unknown order id so, "The resource specified does
// not exist."), any other error is classified as a page's are.
func (a *amazonAPI) getOne(ctx context.Context, id, u string, q map[string]string, what string) ([]byte, error) {
	resp, err := a.get(ctx, u, q)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode() == http.StatusNotFound {
		return nil, orderNotFound(a.platform, id, what+": HTTP 404")
	}
	if err := responseError(a.platform, a.cred, resp, amazonRateHeader); err != nil {
		return nil, err
	}
	return resp.Body(), nil
}

// GetOrder fetches one order by getOrder of Orders API v2026-01-01
// (GET orders/2026-01-01/orders/{orderId}) with the includedData searchOrders
// asks for, so the order has the shape a page gives it.
func (c *amazon2026) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	if err := c.checkOrderID(req.ID); err != nil {
		return Order{}, err
	}
	body, err := c.getOne(ctx, req.ID, c.url+"/"+url.PathEscape(req.ID), map[string]string{"includedData": c.included}, "getOrder")
	if err != nil {
		return Order{}, err
	}
	items, err := decodeArrayPath(c.platform, 0, amazonWrap(body, "order"), []string{"orders"})
	if err != nil {
		return Order{}, err
	}
	orders, err := decodeOrders(c.platform, 0, items, c.order)
	if err != nil {
		return Order{}, err
	}
	if len(orders) != 1 || orders[0].ID != req.ID {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrder for %s answered another order", textclip.Value(req.ID))}
	}
	return orders[0], nil
}

// amazonWrap turns {"<key>": X} into {"orders": [X]}, so one order decodes
// as a page's do; an answer without it decodes as no array.
func amazonWrap(body []byte, key string) []byte {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil || len(env[key]) == 0 || string(env[key]) == "null" {
		return []byte(`{"orders":null}`)
	}
	return append(append([]byte(`{"orders":[`), env[key]...), []byte(`]}`)...)
}

// amazonV0MaxItemPages bounds getOrderItems' pages for one order.
const amazonV0MaxItemPages = 100

// GetOrder fetches one order by v0 getOrder (GET orders/v0/orders/{orderId})
// and its lines by getOrderItems (GET .../orderItems, paged by NextToken).
// getOrders lists no items, so an order fetched this way is the one v0
// order with lines: Raw is the Order with its items added as "OrderItems"
// (getOrderItems' own name for them).
func (c *amazonV0) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	if err := c.checkOrderID(req.ID); err != nil {
		return Order{}, err
	}
	u := c.url + "/" + url.PathEscape(req.ID)
	body, err := c.getOne(ctx, req.ID, u, nil, "getOrder")
	if err != nil {
		return Order{}, err
	}
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return Order{}, err
	}
	var items []json.RawMessage
	token := ""
	for page := 0; ; page++ {
		if page >= amazonV0MaxItemPages {
			return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrderItems of %s still has more after %d pages", textclip.Value(req.ID), page)}
		}
		var q map[string]string
		if token != "" {
			q = map[string]string{"NextToken": token}
		}
		b, err := c.getOne(ctx, req.ID, u+"/orderItems", q, "getOrderItems")
		if err != nil {
			return Order{}, err
		}
		var ie struct {
			Payload struct {
				OrderItems []json.RawMessage `json:"OrderItems"`
				NextToken  string            `json:"NextToken"`
			} `json:"payload"`
		}
		if err := decodeJSON(c.platform, 0, b, &ie); err != nil {
			return Order{}, err
		}
		items = append(items, ie.Payload.OrderItems...)
		if ie.Payload.NextToken == "" || ie.Payload.NextToken == token {
			break
		}
		token = ie.Payload.NextToken
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(env.Payload, &raw); err != nil || raw == nil {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrder of %s: payload is not an order", textclip.Value(req.ID))}
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	raw["OrderItems"], _ = json.Marshal(items)
	full, err := json.Marshal(raw)
	if err != nil {
		return Order{}, err
	}
	var ao amazonOrder
	if err := json.Unmarshal(full, &ao); err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: describeFieldError(err)}
	}
	o, err := c.order(ao, full)
	if err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: err}
	}
	if o.ID != req.ID {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrder for %s answered another order", textclip.Value(req.ID))}
	}
	o.Lines = make([]OrderLine, 0, len(items))
	for i, it := range items {
		var vi amazonV0Item
		if err := json.Unmarshal(it, &vi); err != nil {
			return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("OrderItems[%d]: %w", i, describeFieldError(err))}
		}
		l, err := vi.line(o.Currency)
		if err != nil {
			return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("id %s: OrderItems[%d]: %w", textclip.Value(o.ID), i, err)}
		}
		o.Lines = append(o.Lines, l)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}

// amazonV0Money is v0's Money.
type amazonV0Money struct {
	CurrencyCode string `json:"CurrencyCode"`
	Amount       string `json:"Amount"`
}

// amazonV0Item is the part of a v0 OrderItem a line takes. ItemPrice is
// the line's price, the unit price times the quantity.
type amazonV0Item struct {
	OrderItemID     string         `json:"OrderItemId"`
	SellerSKU       string         `json:"SellerSKU"`
	Title           string         `json:"Title"`
	QuantityOrdered int64          `json:"QuantityOrdered"`
	ItemPrice       *amazonV0Money `json:"ItemPrice"`
}

func (vi amazonV0Item) line(currency string) (OrderLine, error) {
	if vi.OrderItemID == "" {
		return OrderLine{}, fmt.Errorf("missing OrderItemId")
	}
	if vi.QuantityOrdered < 0 {
		return OrderLine{}, fmt.Errorf("OrderItemId %s: QuantityOrdered %d is negative", textclip.Value(vi.OrderItemID), vi.QuantityOrdered)
	}
	l := OrderLine{ID: vi.OrderItemID, SKU: vi.SellerSKU, Title: vi.Title, Quantity: vi.QuantityOrdered, Currency: currency}
	if p := vi.ItemPrice; p != nil {
		if !ValidDecimal(p.Amount) {
			return OrderLine{}, fmt.Errorf("OrderItemId %s: ItemPrice.Amount %q is not a decimal number", textclip.Value(vi.OrderItemID), textclip.Value(p.Amount))
		}
		l.UnitPrice, l.Currency = divideDecimal(p.Amount, vi.QuantityOrdered), p.CurrencyCode
	}
	return l, nil
}

// divideDecimal is amount / n as a decimal string with amount's number of
// decimals, or "" when that is not exact (7.00 / 3): a unit price is never
// rounded.
func divideDecimal(amount string, n int64) string {
	if n <= 0 {
		return ""
	}
	if n == 1 {
		return amount
	}
	scale := 0
	if _, frac, ok := strings.Cut(amount, "."); ok {
		scale = len(frac)
	}
	r, ok := new(big.Rat).SetString(amount)
	if !ok {
		return ""
	}
	r.Quo(r, new(big.Rat).SetInt64(n))
	if !new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))).IsInt() {
		return ""
	}
	return r.FloatString(scale)
}
