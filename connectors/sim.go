package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// simConnector lists one shop of the ordersync simulator (package sim):
// GET <endpoint>/orders?updated_from&updated_to&limit&page_token with a
// bearer token.
type simConnector struct {
	platform string
	src      credentials.Source // the bearer token, asked per request
	url      string
	pageSize int
	http     *resty.Client
}

// newSim builds the connector of kind "sim". Endpoint is the shop's base URL,
// e.g. http://127.0.0.1:8780/shops/acme. The bearer token is asked of src
// per request; it is never logged or returned.
func newSim(p config.Platform, _ *NoOptions, src credentials.Source) (Connector, error) {
	u, err := url.Parse(p.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &PermanentError{Platform: p.Name, Msg: fmt.Sprintf("endpoint %q is not an http(s) URL", p.Endpoint)}
	}
	if err := checkStaticSecret(p, src, nil); err != nil {
		return nil, err
	}
	return &simConnector{
		platform: p.Name,
		src:      src,
		url:      strings.TrimRight(p.Endpoint, "/") + "/orders",
		pageSize: p.PageSize,
		http:     newHTTPClient(p),
	}, nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
func (c *simConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if !req.From.Before(req.To) {
		return Page{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("empty window [%s, %s)", req.From.Format(time.RFC3339Nano), req.To.Format(time.RFC3339Nano))}
	}
	q := map[string]string{
		"updated_from": req.From.UTC().Format(time.RFC3339Nano),
		"updated_to":   req.To.UTC().Format(time.RFC3339Nano),
	}
	size := req.PageSize
	if size <= 0 {
		size = c.pageSize
	}
	if size > 0 { // else the simulator's default
		q["limit"] = strconv.Itoa(size)
	}
	if req.Token != "" {
		q["page_token"] = req.Token
	}
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetAuthToken(token).SetQueryParams(q).Get(c.url)
	})
	if err != nil {
		return Page{}, asTransportError(c.platform, err)
	}
	if err := statusError(c.platform, resp); err != nil {
		return Page{}, err
	}
	page, err := c.decodePage(resp.Body(), req.Page)
	if err != nil {
		return Page{}, err
	}
	page.RateLimit = headerFloat(resp.Header(), "X-RateLimit-Limit")
	return page, nil
}

// simOrder is the part of the simulator's order JSON the connector reads;
// the rest (customer) travels in Order.Raw.
type simOrder struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	Currency  string `json:"currency"`
	Total     string `json:"total"`
	// LineItems is nil when the order has no line_items (or null): its
	// lines are then unknown, not empty.
	LineItems *[]simLineItem `json:"line_items"`
}

// simLineItem is one of the simulator's line items. They have no id: a
// line's id is its position (PositionLineID), stable because the
// simulator never reorders an order's items.
type simLineItem struct {
	SKU   string `json:"sku"`
	Title string `json:"title"`
	Qty   int64  `json:"qty"`
	Price string `json:"price"`
}

func (c *simConnector) decodePage(body []byte, page int) (Page, error) {
	items, err := decodeArrayField(c.platform, page, body, "orders")
	if err != nil {
		return Page{}, err
	}
	var env struct {
		NextPageToken string `json:"next_page_token"`
	}
	if err := decodeJSON(c.platform, page, body, &env); err != nil {
		return Page{}, err
	}
	orders := make([]Order, 0, len(items))
	for i, it := range items {
		o, err := c.order(it.Raw)
		if err != nil {
			off := it.Offset
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			if errors.As(err, &se) || errors.As(err, &te) {
				off += jsonErrorOffset(err, len(it.Raw))
			}
			return Page{}, &MalformedError{Platform: c.platform, Page: page, Offset: off, Err: fmt.Errorf("order %d: %w", i, err)}
		}
		orders = append(orders, o)
	}
	return Page{Orders: orders, NextToken: env.NextPageToken}, nil
}

// order validates and normalises one order: it must have an id and an
// RFC3339 updated_at (the slicing key), a decimal total, times in UTC.
// Each of line_items becomes a line: id its 1-based position, sku, title,
// quantity qty, unit price price, currency the order's.
func (c *simConnector) order(raw json.RawMessage) (Order, error) {
	var so simOrder
	if err := json.Unmarshal(raw, &so); err != nil {
		return Order{}, describeFieldError(err)
	}
	if so.ID == "" {
		return Order{}, errors.New("missing id")
	}
	updated, err := time.Parse(time.RFC3339Nano, so.UpdatedAt)
	if err != nil {
		return Order{}, fmt.Errorf("id %s: updated_at %q is not an RFC3339 time", textclip.Value(so.ID), textclip.Value(so.UpdatedAt))
	}
	var created time.Time
	if so.CreatedAt != "" {
		if created, err = time.Parse(time.RFC3339Nano, so.CreatedAt); err != nil {
			return Order{}, fmt.Errorf("id %s: created_at %q is not an RFC3339 time", textclip.Value(so.ID), textclip.Value(so.CreatedAt))
		}
		created = created.UTC()
	}
	if !ValidDecimal(so.Total) {
		return Order{}, fmt.Errorf("id %s: total %q is not a decimal number", textclip.Value(so.ID), textclip.Value(so.Total))
	}
	o := Order{
		Platform:  c.platform,
		ID:        so.ID,
		Status:    so.Status,
		CreatedAt: created,
		UpdatedAt: updated.UTC(),
		Currency:  so.Currency,
		Total:     so.Total,
		Raw:       raw,
	}
	if so.LineItems == nil {
		return o, nil
	}
	o.Lines, err = linesFrom("line_items", *so.LineItems, func(i int, it simLineItem) (OrderLine, error) {
		l := OrderLine{ID: PositionLineID(i), SKU: it.SKU, Title: it.Title, Quantity: it.Qty, UnitPrice: it.Price, Currency: so.Currency}
		return l, checkLineValues(l, "line", "qty", "price")
	})
	if err != nil {
		return Order{}, fmt.Errorf("id %s: %w", textclip.Value(so.ID), err)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}

// GetOrder fetches one order: GET <endpoint>/orders/<id> (sim/get.go),
// answered 404 when the shop shows no order with the id.
func (c *simConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	if err := checkGetID(c.platform, req.ID); err != nil {
		return Order{}, err
	}
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetAuthToken(token).Get(orderPath(c.url, req.ID))
	})
	if err != nil {
		return Order{}, asTransportError(c.platform, err)
	}
	if is404(resp) {
		return Order{}, refetchNotFound(c.platform, req.ID)
	}
	if err := statusError(c.platform, resp); err != nil {
		return Order{}, err
	}
	o, err := c.order(resp.Body())
	if err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Page: 1, Offset: -1, Err: fmt.Errorf("order %s: %w", textclip.Value(req.ID), err)}
	}
	return o, nil
}
