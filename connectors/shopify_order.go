package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// orderNotFound is a platform's "no such order" for GetOrder.
func orderNotFound(platform, id, said string) error {
	return fmt.Errorf("%s: order %s: %s: %w", platform, textclip.Value(id), said, ErrOrderNotFound)
}

// shopifyOrderNumber is the numeric id of an order as GetOrder takes it:
// the Order.ID a page returned ("450789469") or its global id.
func shopifyOrderNumber(platform, id string) (string, error) {
	n := strings.TrimPrefix(id, shopifyOrderGIDPrefix)
	if !allDigits(n) {
		return "", &PermanentError{Platform: platform, Msg: fmt.Sprintf("order id %s is not a Shopify order id (digits, or gid://shopify/Order/<digits>)", textclip.Value(id))}
	}
	return n, nil
}

// GetOrder fetches one order by order(id:) with the page query's Order
// selection, then its further lines, shipping lines and discount
// applications and any list Shopify truncated, every query booked on
// req.Meter as a page's are. An order(id:) of null is ErrOrderNotFound.
func (c *shopifyGraphQL) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	n, err := shopifyOrderNumber(c.platform, req.ID)
	if err != nil {
		return Order{}, err
	}
	cost := c.fields.orderCost()
	if cost > ShopifyMaxQueryCost {
		return Order{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf(
			"one order costs %d points as selected, more than a query may request (%d); lower options.line_items_page_size, order_fields or order_fragment",
			cost, ShopifyMaxQueryCost)}
	}
	pr := PageRequest{Meter: req.Meter}
	body, err := c.query(ctx, pr, shopifyOrderOperation, c.fields.orderQuery(), map[string]any{"id": shopifyOrderGIDPrefix + n, "lines": c.lines}, cost)
	if err != nil {
		return Order{}, err
	}
	var env struct {
		Data struct {
			Order json.RawMessage `json:"order"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return Order{}, err
	}
	if len(env.Data.Order) == 0 || string(env.Data.Order) == "null" {
		return Order{}, orderNotFound(c.platform, n, "order(id:) is null")
	}
	var node shopifyNode
	if err := json.Unmarshal(env.Data.Order, &node); err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("order(id:): %w", describeFieldError(err))}
	}
	o, more, err := c.pagedOrder(node, env.Data.Order)
	if err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("order(id:): %w", err)}
	}
	if o.ID != n {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("asked for order %s, got %s", n, textclip.Value(o.ID))}
	}
	for i := range more {
		if err := c.restOfLines(ctx, pr, &o, &more[i]); err != nil {
			return Order{}, err
		}
	}
	return o, nil
}

// GetOrder fetches one order: GET orders/<id>.json
// (https://shopify.dev/docs/api/admin-rest/latest/resources/order#get-orders-order-id),
// the same order resource a page lists. A 404 is ErrOrderNotFound.
func (c *shopifyConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	n, err := shopifyOrderNumber(c.platform, req.ID)
	if err != nil {
		return Order{}, err
	}
	u := strings.TrimSuffix(c.url, ".json") + "/" + n + ".json"
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetHeader("X-Shopify-Access-Token", token).Get(u)
	})
	if err != nil {
		return Order{}, asTransportError(c.platform, err)
	}
	if resp.StatusCode() == http.StatusNotFound {
		return Order{}, orderNotFound(c.platform, n, "HTTP 404")
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Order{}, err
	}
	items, err := decodeArrayPath(c.platform, 0, wrapAsArray(resp.Body()), []string{"orders"})
	if err != nil {
		return Order{}, err
	}
	orders, err := decodeOrders(c.platform, 0, items, c.order)
	if err != nil {
		return Order{}, err
	}
	if len(orders) != 1 || orders[0].ID != n {
		return Order{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("asked for order %s, the answer holds another", n)}
	}
	return orders[0], nil
}

// wrapAsArray turns {"order": X} into {"orders": [X]}, so one order
// decodes as a page's do; anything else is left for the decoder to refuse.
func wrapAsArray(body []byte) []byte {
	var env struct {
		Order json.RawMessage `json:"order"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Order) == 0 || string(env.Order) == "null" {
		return []byte(`{"orders":null}`)
	}
	return append(append([]byte(`{"orders":[`), env.Order...), []byte(`]}`)...)
}
