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

// shopifyConnector lists a shop's orders through the legacy REST Admin API
// (options.api: rest):
// GET <shop>/admin/api/<version>/orders.json with the app's access token in
// X-Shopify-Access-Token
// (https://shopify.dev/docs/api/admin-rest/latest/resources/order#get-orders).
type shopifyConnector struct {
	platform string
	cred     config.CredentialRef
	src      credentials.Source // the access token, asked per request
	url      string
	origin   origin // the shop's; a Link header pointing elsewhere is refused
	pageSize int
	http     *resty.Client
}

// newShopify builds the connector of kind "shopify". Endpoint is the shop,
// e.g. https://acme.myshopify.com; the credential is the Admin API access
// token (shpat_...); options.api picks the GraphQL Admin API (the default,
// shopify_graphql.go) or the legacy REST Admin API, options.api_version
// the API version.
func newShopify(p config.Platform, o *ShopifyOptions, src credentials.Source) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts := *o
	if err := checkStaticSecret(p, src, nil); err != nil {
		return nil, err
	}
	if opts.API == ShopifyGraphQL {
		return newShopifyGraphQL(p, opts, base, src), nil
	}
	u, _ := url.Parse(base)
	return &shopifyConnector{
		platform: p.Name,
		cred:     p.Credentials,
		src:      src,
		url:      base + "/admin/api/" + opts.APIVersion + "/orders.json",
		origin:   originOf(u),
		pageSize: p.PageSize,
		http:     newHTTPClient(p),
	}, nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
//
// The first page filters with status=any (the default lists only open
// orders) and updated_at_min/updated_at_max, both inclusive with whole
// seconds: [floor(From), last second before To]. Later pages follow the
// Link header's page_info, which is the token; with page_info Shopify
// rejects every parameter but limit and fields, so only limit goes with it
// (https://shopify.dev/docs/api/admin-rest/usage/pagination). The cursor
// continues after the last order seen, so orders changing meanwhile do not
// shift pages.
func (c *shopifyConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	q := map[string]string{}
	if size := pageSize(req, c.pageSize); size > 0 {
		q["limit"] = strconv.Itoa(size)
	}
	if strings.HasPrefix(req.Token, shopifyGraphQLTokenPrefix) {
		// A slice the GraphQL API began before the platform moved back to
		// REST: its window starts over, which refetches but loses nothing.
		req.Token = ""
	}
	if req.Token != "" {
		q["page_info"] = req.Token
	} else {
		q["status"] = "any"
		q["updated_at_min"] = req.From.UTC().Truncate(time.Second).Format(time.RFC3339)
		q["updated_at_max"] = lastInstantBefore(req.To.UTC(), time.Second).Format(time.RFC3339)
	}
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetHeader("X-Shopify-Access-Token", token).SetQueryParams(q).Get(c.url)
	})
	if err != nil {
		return Page{}, asTransportError(c.platform, err)
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Page{}, err
	}
	page, err := c.decodePage(resp.Body(), req.Page)
	if err != nil {
		return Page{}, err
	}
	if next := relNextLink(resp.Header()); next != "" {
		// Only page_info is taken from the link, and it goes to the shop;
		// still, a link to another origin is refused like any other.
		u, err := sameOriginLink(c.platform, req.Page, c.origin, resp.RawResponse.Request.URL, next)
		if err != nil {
			return Page{}, err
		}
		if u.Query().Get("page_info") == "" {
			return Page{}, &MalformedError{Platform: c.platform, Page: req.Page, Offset: -1, Err: fmt.Errorf("the Link header's rel=next %q has no page_info", textclip.Value(next))}
		}
		page.NextToken = u.Query().Get("page_info")
	}
	return page, nil
}

// shopifyOrder is the part of a Shopify order the connector reads.
type shopifyOrder struct {
	ID              json.Number `json:"id"`
	CreatedAt       string      `json:"created_at"`
	UpdatedAt       string      `json:"updated_at"`
	CancelledAt     *string     `json:"cancelled_at"`
	Currency        string      `json:"currency"`
	TotalPrice      string      `json:"total_price"`
	FinancialStatus *string     `json:"financial_status"`
	// LineItems is nil when the order came without line_items (a fields=
	// filter): its lines are unknown, not empty.
	LineItems *[]shopifyLineItem `json:"line_items"`
}

// shopifyLineItem is the part of a line item a line takes.
type shopifyLineItem struct {
	ID       json.Number `json:"id"`
	SKU      string      `json:"sku"` // null for a product without one
	Title    string      `json:"title"`
	Quantity int64       `json:"quantity"`
	Price    string      `json:"price"`
}

func (c *shopifyConnector) decodePage(body []byte, page int) (Page, error) {
	items, err := decodeArrayField(c.platform, page, body, "orders")
	if err != nil {
		return Page{}, err
	}
	orders, err := decodeOrders(c.platform, page, items, c.order)
	if err != nil {
		return Page{}, err
	}
	return Page{Orders: orders}, nil
}

// order normalises one Shopify order. Shopify has no single status: a
// cancelled order is "cancelled", any other has its financial_status
// (pending, paid, refunded, ...); fulfilment stays in Raw. Each of
// line_items becomes a line: id, sku, title, quantity, unit price price
// (in the shop's currency, the order's currency).
func (c *shopifyConnector) order(so shopifyOrder, raw json.RawMessage) (Order, error) {
	if so.ID == "" {
		return Order{}, errors.New("missing id")
	}
	updated, err := time.Parse(time.RFC3339, so.UpdatedAt)
	if err != nil {
		return Order{}, fmt.Errorf("id %s: updated_at %q is not an ISO 8601 time", textclip.Value(so.ID.String()), textclip.Value(so.UpdatedAt))
	}
	var created time.Time
	if so.CreatedAt != "" {
		if created, err = time.Parse(time.RFC3339, so.CreatedAt); err != nil {
			return Order{}, fmt.Errorf("id %s: created_at %q is not an ISO 8601 time", textclip.Value(so.ID.String()), textclip.Value(so.CreatedAt))
		}
	}
	if !ValidDecimal(so.TotalPrice) {
		return Order{}, fmt.Errorf("id %s: total_price %q is not a decimal number", textclip.Value(so.ID.String()), textclip.Value(so.TotalPrice))
	}
	status := ""
	switch {
	case so.CancelledAt != nil:
		status = "cancelled"
	case so.FinancialStatus != nil:
		status = *so.FinancialStatus
	}
	o := Order{Platform: c.platform, ID: so.ID.String(), Status: status, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(),
		Currency: so.Currency, Total: so.TotalPrice, Raw: raw}
	if so.LineItems == nil {
		return o, nil
	}
	o.Lines, err = linesFrom("line_items", *so.LineItems, func(_ int, it shopifyLineItem) (OrderLine, error) {
		l := OrderLine{ID: it.ID.String(), SKU: it.SKU, Title: it.Title, Quantity: it.Quantity, UnitPrice: it.Price, Currency: so.Currency}
		return l, checkLineValues(l, "id", "quantity", "price")
	})
	if err != nil {
		return Order{}, fmt.Errorf("id %s: %w", textclip.Value(so.ID.String()), err)
	}
	o.HasLines, o.LineCount = true, len(o.Lines)
	return o, nil
}
