package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// wooTime is how WooCommerce writes and reads GMT times: no zone suffix.
const wooTime = "2006-01-02T15:04:05"

// wooConnector lists a store's orders through the WooCommerce REST API v3:
// GET <site>/wp-json/wc/v3/orders, authenticated with a REST API consumer key
// and secret (https://woocommerce.github.io/woocommerce-rest-api-docs/#list-all-orders).
type wooConnector struct {
	platform string
	cred     config.CredentialRef
	src      credentials.Source // the JSON keys, asked per request
	url      string
	pageSize int
	http     *resty.Client
	inQuery  bool // consumer_key/consumer_secret go in the query (options.auth: query), else Basic auth
}

var wooFields = []string{"consumer_key", "consumer_secret"}

// newWooCommerce builds the connector of kind "woocommerce". Endpoint is the
// site, e.g. https://shop.example.com; the credential is a JSON object
// {"consumer_key":"ck_...","consumer_secret":"cs_..."}.
func newWooCommerce(p config.Platform, o *WooCommerceOptions, src credentials.Source) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts := *o
	if err := checkStaticSecret(p, src, func(raw string) error {
		_, err := jsonSecret(p.Name, p.Credentials, raw, wooFields...)
		return err
	}); err != nil {
		return nil, err
	}
	return &wooConnector{platform: p.Name, cred: p.Credentials, src: src, url: base + "/wp-json/wc/v3/orders", pageSize: p.PageSize,
		http: newHTTPClient(p), inQuery: opts.Auth == "query"}, nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
//
// modified_after and modified_before are exclusive (a WP date_query without
// "inclusive") and GMT with whole seconds given dates_are_gmt=true, so the
// request covers (floor(From) - 1s, ceil(To)), exactly the seconds of the window.
//
// Pages are numbered, so they drift like offsets when an order leaves the
// window during paging (it was modified again: the upper bound is frozen
// in the past, so it moves to a later slice) and every later order moves up
// one place. The token "<page>:<X-WP-Total>" remembers the count the paging
// started with; when it changes, the window restarts from page 1 (orders
// read twice are harmless). Orders are sorted by id, not modified: WordPress
// adds no tiebreaker to orderby=modified, and orders modified in the same
// second could swap places between two page requests.
func (c *wooConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	pageNo, total := 1, -1
	if req.Token != "" {
		p, t, ok := strings.Cut(req.Token, ":")
		n, err1 := strconv.Atoi(p)
		m, err2 := strconv.Atoi(t)
		if !ok || err1 != nil || err2 != nil || n < 1 || m < 0 {
			return Page{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("page token %q is not a woocommerce connector token", textclip.Value(req.Token))}
		}
		pageNo, total = n, m
	}
	size := min(max(pageSize(req, c.pageSize), 1), 100)
	q := map[string]string{
		"modified_after":  req.From.UTC().Truncate(time.Second).Add(-time.Second).Format(wooTime),
		"modified_before": ceilTime(req.To.UTC(), time.Second).Format(wooTime),
		"dates_are_gmt":   "true",
		"orderby":         "id",
		"order":           "asc",
		"per_page":        strconv.Itoa(size),
		"page":            strconv.Itoa(pageNo),
	}
	resp, err := c.get(ctx, c.url, q)
	if err != nil {
		return Page{}, err
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Page{}, err
	}
	orders, err := c.decodePage(resp.Body(), req.Page)
	if err != nil {
		return Page{}, err
	}
	now := headerInt(resp.Header().Get("X-WP-Total"))
	if total >= 0 && now >= 0 && now != total {
		return Page{Orders: orders, NextToken: fmt.Sprintf("1:%d", now)}, nil // the set changed: restart
	}
	more := len(orders) == size
	if pages := headerInt(resp.Header().Get("X-WP-TotalPages")); pages >= 0 {
		more = pageNo < pages
	}
	page := Page{Orders: orders}
	if more && len(orders) > 0 {
		page.NextToken = fmt.Sprintf("%d:%d", pageNo+1, max(now, 0))
	}
	return page, nil
}

func headerInt(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// wooOrder is the part of a WooCommerce order the connector reads.
type wooOrder struct {
	ID              json.Number `json:"id"`
	Status          string      `json:"status"`
	Currency        string      `json:"currency"`
	DateCreatedGMT  *string     `json:"date_created_gmt"`
	DateModifiedGMT *string     `json:"date_modified_gmt"`
	Total           string      `json:"total"`
	// LineItems is nil when the order came without line_items (a _fields
	// filter): its lines are unknown, not empty.
	LineItems *[]wooLineItem `json:"line_items"`
}

// wooLineItem is the part of a line item a line takes. WooCommerce sends
// price as a JSON number (the line's total over its quantity, after
// discounts, before tax); its literal text is kept.
type wooLineItem struct {
	ID       json.Number `json:"id"`
	Name     string      `json:"name"`
	SKU      string      `json:"sku"`
	Quantity int64       `json:"quantity"`
	Price    json.Number `json:"price"`
}

func (c *wooConnector) decodePage(body []byte, page int) ([]Order, error) {
	items, err := decodeArrayPath(c.platform, page, body, nil)
	if err != nil {
		return nil, err
	}
	orders, err := decodeOrders(c.platform, page, items, c.order)
	if err != nil {
		return nil, err
	}
	return orders, nil
}

// parseWooTime reads a GMT time as WooCommerce writes it (no zone); a
// trailing zone is accepted too.
func parseWooTime(s string) (time.Time, error) {
	if t, err := time.Parse(wooTime, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// order normalises one WooCommerce order. An order never modified may have
// no date_modified_gmt; its creation time is then its update time. Each
// of line_items becomes a line: id, sku, title name, quantity, unit price
// price, currency the order's.
func (c *wooConnector) order(wo wooOrder, raw json.RawMessage) (Order, error) {
	if wo.ID == "" {
		return Order{}, errors.New("missing id")
	}
	var created time.Time
	if wo.DateCreatedGMT != nil {
		var err error
		if created, err = parseWooTime(*wo.DateCreatedGMT); err != nil {
			return Order{}, fmt.Errorf("id %s: date_created_gmt %q is not a time", textclip.Value(wo.ID.String()), textclip.Value(*wo.DateCreatedGMT))
		}
	}
	updated := created
	if wo.DateModifiedGMT != nil {
		var err error
		if updated, err = parseWooTime(*wo.DateModifiedGMT); err != nil {
			return Order{}, fmt.Errorf("id %s: date_modified_gmt %q is not a time", textclip.Value(wo.ID.String()), textclip.Value(*wo.DateModifiedGMT))
		}
	}
	if updated.IsZero() {
		return Order{}, fmt.Errorf("id %s: no date_modified_gmt nor date_created_gmt", textclip.Value(wo.ID.String()))
	}
	if !ValidDecimal(wo.Total) {
		return Order{}, fmt.Errorf("id %s: total %q is not a decimal number", textclip.Value(wo.ID.String()), textclip.Value(wo.Total))
	}
	o := Order{Platform: c.platform, ID: wo.ID.String(), Status: wo.Status, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(),
		Currency: wo.Currency, Total: wo.Total, Raw: raw}
	if wo.LineItems == nil {
		return o, nil
	}
	var err error
	o.Lines, err = linesFrom("line_items", *wo.LineItems, func(_ int, it wooLineItem) (OrderLine, error) {
		l := OrderLine{ID: it.ID.String(), SKU: it.SKU, Title: it.Name, Quantity: it.Quantity, UnitPrice: it.Price.String(), Currency: wo.Currency}
		return l, checkLineValues(l, "id", "quantity", "price")
	})
	if err != nil {
		return Order{}, fmt.Errorf("id %s: %w", textclip.Value(wo.ID.String()), err)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}

// GetOrder fetches one order: GET <site>/wp-json/wc/v3/orders/<id>
// (https://woocommerce.github.io/woocommerce-rest-api-docs/#retrieve-an-order),
// the same order resource a page lists, authenticated like a page.
// WooCommerce answers an unknown id 404
// (woocommerce_rest_shop_order_invalid_id), and a non-numeric one too
// (rest_no_route).
func (c *wooConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	if err := checkGetID(c.platform, req.ID); err != nil {
		return Order{}, err
	}
	resp, err := c.get(ctx, orderPath(c.url, req.ID), nil)
	if err != nil {
		return Order{}, err
	}
	return decodeGotOrder(c.platform, c.cred, req.ID, resp, c.order)
}

// get sends GET url?query authenticated with the account's consumer key
// and secret (in the query where the site needs it, else Basic auth), the
// secret read afresh per request; a transport failure comes back as the
// connector's error class.
func (c *wooConnector) get(ctx context.Context, url string, query map[string]string) (*resty.Response, error) {
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(raw string) (*resty.Response, error) {
		secret, err := jsonSecret(c.platform, c.cred, raw, wooFields...)
		if err != nil {
			return nil, err
		}
		r := c.http.R().SetContext(ctx).SetQueryParams(query)
		if c.inQuery {
			r.SetQueryParams(map[string]string{"consumer_key": secret["consumer_key"], "consumer_secret": secret["consumer_secret"]})
		} else {
			r.SetBasicAuth(secret["consumer_key"], secret["consumer_secret"])
		}
		return r.Get(url)
	})
	if err != nil {
		return nil, asTransportError(c.platform, err)
	}
	return resp, nil
}
