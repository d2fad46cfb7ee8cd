package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// shopifyGraphQL lists a shop's orders through the GraphQL Admin API:
// POST <shop>/admin/api/<version>/graphql.json with the orders query
// (https://shopify.dev/docs/api/admin-graphql/latest/queries/orders), the
// app's access token in X-Shopify-Access-Token.
//
// Each page is one orders query, sorted by UPDATED_AT and filtered on
// updated_at, with the first line_items_page_size lines of every order.
// An order with more lines gets the rest from follow-up queries on that
// order before the page is returned, so no order is ever stored with part
// of its lines.
//
// Shopify meters the API in points per app and shop
// (https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits): a
// query runs only if the bucket holds its requested cost, and the
// difference to its actual cost is refunded. Every query therefore books
// its requested cost on the request's Meter (shared by all workers) before
// it is sent, and settles the booking with the actual cost and the bucket
// Shopify reports. A THROTTLED answer is a RateLimitError whose wait is the
// time the bucket needs to hold the query.
type shopifyGraphQL struct {
	platform string
	cred     config.CredentialRef
	url      string
	pageSize int
	lines    int        // line_items_page_size
	budget   CostBudget // from the options: the plan's restore rate and bucket
	http     *resty.Client
	files    *http.Client // bulk result files: signed URLs, no credential
	// listsBulk says the API version has the bulkOperations query
	// (2026-01 on); bulkLimit is options.bulk_concurrency.
	listsBulk bool
	bulkLimit int

	mu       sync.Mutex
	reported CostBudget // Shopify's last throttleStatus; zero fields: not reported
}

// shopifyGraphQLTokenPrefix marks this connector's next-page tokens, so a
// slice that moves between the REST and the GraphQL API (options.api
// changed while it ran) starts its window over instead of sending one
// API's cursor to the other.
const shopifyGraphQLTokenPrefix = "gql:"

// shopifyLinesFollowUp is the page size of the follow-up queries for an
// order's further lines: 100 lines request 303 points, refunded down to
// what the order really has.
const shopifyLinesFollowUp = 100

// maxShopifyLinePages bounds the follow-up queries of one order, so a shop
// that keeps answering hasNextPage does not hold the page forever.
const maxShopifyLinePages = 1000

func newShopifyGraphQL(p config.Platform, opts config.ShopifyOptions, base, token string) *shopifyGraphQL {
	return &shopifyGraphQL{
		platform: p.Name,
		cred:     p.Credentials,
		url:      base + "/admin/api/" + opts.APIVersion + "/graphql.json",
		pageSize: p.PageSize,
		lines:    opts.LineItemsPageSize,
		budget:   CostBudget{Rate: opts.RestoreRate, Capacity: opts.MaxCostAvailable},
		http: newHTTPClient(p).SetHeader("X-Shopify-Access-Token", token).
			SetHeader("Content-Type", "application/json"),
		files:     newBulkFileClient(p),
		listsBulk: opts.APIVersion == "unstable" || opts.APIVersion >= "2026-01",
		bulkLimit: opts.BulkConcurrency,
	}
}

// The connector's two operations. The line fields are a fragment, so an
// order's first lines and its follow-up lines are one shape.
const (
	shopifyOrdersOperation = "OrdersUpdatedInWindow"
	shopifyLinesOperation  = "OrderLineItems"
	shopifyLineFragment    = `
fragment OrderLine on LineItem {
  id
  sku
  name
  title
  quantity
  originalUnitPriceSet { shopMoney { amount currencyCode } }
}`
	shopifyOrdersQuery = `query OrdersUpdatedInWindow($first: Int!, $after: String, $query: String!, $lines: Int!) {
  orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes {
      id
      name
      createdAt
      updatedAt
      cancelledAt
      displayFinancialStatus
      displayFulfillmentStatus
      currencyCode
      totalPriceSet { shopMoney { amount currencyCode } }
      lineItems(first: $lines) {
        nodes { ...OrderLine }
        pageInfo { hasNextPage endCursor }
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}` + shopifyLineFragment
	shopifyLinesQuery = `query OrderLineItems($id: ID!, $first: Int!, $after: String) {
  order(id: $id) {
    lineItems(first: $first, after: $after) {
      nodes { ...OrderLine }
      pageInfo { hasNextPage endCursor }
    }
  }
}` + shopifyLineFragment
)

// shopifySearchWindow is the orders query's filter for [from, to): the
// search syntax wants dates quoted
// (https://shopify.dev/docs/api/usage/search-syntax), and Shopify keeps
// updatedAt in whole seconds, so the bounds are whole seconds rounded
// outwards: floor(from) inclusive, ceil(to) exclusive. Nothing updated
// inside the window is left out.
func shopifySearchWindow(from, to time.Time) string {
	return fmt.Sprintf("updated_at:>='%s' AND updated_at:<'%s'",
		from.UTC().Truncate(time.Second).Format(time.RFC3339), ceilTime(to.UTC(), time.Second).Format(time.RFC3339))
}

// ListOrders fetches one page of the orders updated in [req.From, req.To),
// every order with all its lines.
//
// The token is gql:<orders already listed>:<endCursor>. Shopify pages one
// query through at most 25,000 objects (https://shopify.dev/docs/api/usage/limits);
// load checks keep page_size × max_pages below that, so a slice splits
// before it gets there. A window that cannot split (a second with more
// orders) gets its last page shortened to the limit, then a PermanentError.
func (c *shopifyGraphQL) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	listed, cursor, err := c.parseToken(req.Token)
	if err != nil {
		return Page{}, err
	}
	if listed >= config.ShopifyPaginationLimit {
		return Page{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf(
			"the window [%s, %s) holds more than %d orders, as many as Shopify pages through in one query, and is too short to split",
			req.From.UTC().Format(time.RFC3339Nano), req.To.UTC().Format(time.RFC3339Nano), config.ShopifyPaginationLimit)}
	}
	size := pageSize(req, c.pageSize)
	if size <= 0 {
		size = config.KindDefaults("shopify").PageSize
	}
	size = min(size, config.ShopifyMaxConnectionSize, config.ShopifyPaginationLimit-listed)
	vars := map[string]any{"first": size, "query": shopifySearchWindow(req.From, req.To), "lines": c.lines, "after": nil}
	if cursor != "" {
		vars["after"] = cursor
	}
	body, err := c.query(ctx, req, shopifyOrdersOperation, shopifyOrdersQuery, vars, config.ShopifyOrdersQueryCost(size, c.lines))
	if err != nil {
		return Page{}, err
	}
	items, err := decodeArrayPath(c.platform, req.Page, body, []string{"data", "orders", "nodes"})
	if err != nil {
		return Page{}, err
	}
	// The page's own cursor is checked before any follow-up query is spent.
	var env struct {
		Data struct {
			Orders struct {
				PageInfo shopifyPageInfo `json:"pageInfo"`
			} `json:"orders"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, req.Page, body, &env); err != nil {
		return Page{}, err
	}
	next := ""
	if pi := env.Data.Orders.PageInfo; pi.HasNextPage {
		if pi.EndCursor == "" || pi.EndCursor == cursor {
			return Page{}, &MalformedError{Platform: c.platform, Page: req.Page, Offset: -1,
				Err: fmt.Errorf("orders.pageInfo has a next page but endCursor %q does not move on", textclip.Value(pi.EndCursor))}
		}
		next = shopifyGraphQLTokenPrefix + strconv.Itoa(listed+len(items)) + ":" + pi.EndCursor
	}
	var more []moreLines // the orders whose lines go on
	index := 0
	orders, err := decodeOrders(c.platform, req.Page, items, func(n shopifyNode, raw json.RawMessage) (Order, error) {
		o, after, err := c.order(n, raw)
		if err == nil && after != "" {
			more = append(more, moreLines{index: index, offset: items[index].Offset, gid: n.ID, after: after})
		}
		index++
		return o, err
	})
	if err != nil {
		return Page{}, err
	}
	for _, m := range more {
		if err := c.restOfLines(ctx, req, &orders[m.index], m); err != nil {
			return Page{}, err
		}
	}
	return Page{Orders: orders, NextToken: next}, nil
}

// parseToken reads a next-page token: the orders listed so far and the
// cursor. A token of the REST connector (the platform moved to GraphQL
// while the slice ran) starts the window over.
func (c *shopifyGraphQL) parseToken(token string) (int, string, error) {
	rest, ok := strings.CutPrefix(token, shopifyGraphQLTokenPrefix)
	if !ok {
		return 0, "", nil
	}
	n, cursor, ok := strings.Cut(rest, ":")
	listed, err := strconv.Atoi(n)
	if !ok || err != nil || listed < 0 || cursor == "" {
		return 0, "", &PermanentError{Platform: c.platform, Msg: "the next-page token is not one this connector issued"}
	}
	return listed, cursor, nil
}

// moreLines is an order of the page whose lines go on after its first
// nested page.
type moreLines struct {
	index  int   // in the page
	offset int64 // of the order in the page's body
	gid    string
	after  string
}

// restOfLines appends an order's further lines, one follow-up query per
// nested page. An order gone meanwhile fails the page as transient: the
// retry lists the shop as it is then.
func (c *shopifyGraphQL) restOfLines(ctx context.Context, req PageRequest, o *Order, m moreLines) error {
	bad := func(off int64, err error) error {
		return &MalformedError{Platform: c.platform, Page: req.Page, Offset: off, Err: fmt.Errorf("order %d (id %s): lines: %w", m.index, textclip.Value(o.ID), err)}
	}
	for after, n := m.after, 0; after != ""; n++ {
		if n == maxShopifyLinePages {
			return bad(m.offset, fmt.Errorf("still more after %d follow-up queries", n))
		}
		vars := map[string]any{"id": m.gid, "first": shopifyLinesFollowUp, "after": after}
		body, err := c.query(ctx, req, shopifyLinesOperation, shopifyLinesQuery, vars, config.ShopifyLinesQueryCost(shopifyLinesFollowUp))
		if err != nil {
			return err
		}
		var env struct {
			Data struct {
				Order *struct {
					LineItems struct {
						PageInfo shopifyPageInfo `json:"pageInfo"`
					} `json:"lineItems"`
				} `json:"order"`
			} `json:"data"`
		}
		if err := decodeJSON(c.platform, req.Page, body, &env); err != nil {
			return err
		}
		if env.Data.Order == nil {
			return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("order %s vanished while its lines were listed; the page is listed again", textclip.Value(o.ID))}
		}
		items, err := decodeArrayPath(c.platform, req.Page, body, []string{"data", "order", "lineItems", "nodes"})
		if err != nil {
			return err
		}
		for i, it := range items {
			var sl shopifyLine
			err := describeFieldError(json.Unmarshal(it.Raw, &sl))
			var l OrderLine
			if err == nil {
				l, err = sl.line()
			}
			if err != nil {
				off := it.Offset
				if jo := jsonErrorOffset(err, len(it.Raw)); jo >= 0 {
					off += jo // a JSON error points into the line
				}
				return bad(off, fmt.Errorf("follow-up %d, line %d: %w", n+1, i, err))
			}
			o.Lines = append(o.Lines, l)
		}
		pi := env.Data.Order.LineItems.PageInfo
		switch {
		case !pi.HasNextPage:
			after = ""
		case pi.EndCursor == "" || pi.EndCursor == after:
			return bad(m.offset, fmt.Errorf("lineItems.pageInfo has a next page but endCursor %q does not move on", textclip.Value(pi.EndCursor)))
		default:
			after = pi.EndCursor
		}
	}
	o.LineCount = len(o.Lines)
	return nil
}

// shopifyPageInfo is a connection's pageInfo.
type shopifyPageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

// shopifyMoney is a MoneyBag's shopMoney: the amount is a Decimal, which
// Shopify sends as a string.
type shopifyMoney struct {
	ShopMoney struct {
		Amount       string `json:"amount"`
		CurrencyCode string `json:"currencyCode"`
	} `json:"shopMoney"`
}

// shopifyNode is the part of an Order node the connector reads; Raw keeps
// all of it.
type shopifyNode struct {
	ID                     string        `json:"id"`
	CreatedAt              string        `json:"createdAt"`
	UpdatedAt              string        `json:"updatedAt"`
	CancelledAt            *string       `json:"cancelledAt"`
	DisplayFinancialStatus *string       `json:"displayFinancialStatus"`
	CurrencyCode           string        `json:"currencyCode"`
	TotalPriceSet          *shopifyMoney `json:"totalPriceSet"`
	LineItems              *struct {
		Nodes    []shopifyLine   `json:"nodes"`
		PageInfo shopifyPageInfo `json:"pageInfo"`
	} `json:"lineItems"`
}

// shopifyLine is a LineItem node.
type shopifyLine struct {
	ID                   string        `json:"id"`
	SKU                  *string       `json:"sku"`
	Name                 string        `json:"name"`
	Title                string        `json:"title"`
	Quantity             int64         `json:"quantity"`
	OriginalUnitPriceSet *shopifyMoney `json:"originalUnitPriceSet"`
}

func (sl shopifyLine) line() (OrderLine, error) {
	id, err := shopifyID(sl.ID, "LineItem")
	if err != nil {
		return OrderLine{}, err
	}
	l := OrderLine{ID: id, Title: sl.Name, Quantity: sl.Quantity}
	if l.Title == "" {
		l.Title = sl.Title
	}
	if sl.SKU != nil {
		l.SKU = *sl.SKU
	}
	if p := sl.OriginalUnitPriceSet; p != nil {
		if !ValidDecimal(p.ShopMoney.Amount) {
			return OrderLine{}, fmt.Errorf("id %s: originalUnitPriceSet amount %q is not a decimal number", textclip.Value(id), textclip.Value(p.ShopMoney.Amount))
		}
		l.UnitPrice, l.Currency = p.ShopMoney.Amount, p.ShopMoney.CurrencyCode
	}
	return l, nil
}

// shopifyID is the number of a global id (gid://shopify/Order/450789469 ->
// "450789469"): the REST Admin API's id of the same object, so orders keep
// their ids when a platform moves from REST to GraphQL.
func shopifyID(gid, typ string) (string, error) {
	if gid == "" {
		return "", errors.New("missing id")
	}
	n, ok := strings.CutPrefix(gid, "gid://shopify/"+typ+"/")
	if !ok || !allDigits(n) {
		return "", fmt.Errorf("id %q is not a global id like gid://shopify/%s/123", textclip.Value(gid), typ)
	}
	return n, nil
}

// order normalises one Order node, as the REST connector does a REST
// order: the id's number, "cancelled" for a cancelled order else the
// financial status in lower case (PARTIALLY_REFUNDED -> partially_refunded,
// REST's spelling), the total in the shop's currency. It returns the cursor
// of the order's further lines, "" when its lines are complete.
func (c *shopifyGraphQL) order(n shopifyNode, raw json.RawMessage) (Order, string, error) {
	id, err := shopifyID(n.ID, "Order")
	if err != nil {
		return Order{}, "", err
	}
	updated, err := time.Parse(time.RFC3339, n.UpdatedAt)
	if err != nil {
		return Order{}, "", fmt.Errorf("id %s: updatedAt %q is not an ISO 8601 time", textclip.Value(id), textclip.Value(n.UpdatedAt))
	}
	var created time.Time
	if n.CreatedAt != "" {
		if created, err = time.Parse(time.RFC3339, n.CreatedAt); err != nil {
			return Order{}, "", fmt.Errorf("id %s: createdAt %q is not an ISO 8601 time", textclip.Value(id), textclip.Value(n.CreatedAt))
		}
	}
	if n.TotalPriceSet == nil || !ValidDecimal(n.TotalPriceSet.ShopMoney.Amount) {
		total := ""
		if n.TotalPriceSet != nil {
			total = n.TotalPriceSet.ShopMoney.Amount
		}
		return Order{}, "", fmt.Errorf("id %s: totalPriceSet amount %q is not a decimal number", textclip.Value(id), textclip.Value(total))
	}
	if n.LineItems == nil {
		return Order{}, "", fmt.Errorf("id %s: lineItems is missing", textclip.Value(id))
	}
	status := ""
	switch {
	case n.CancelledAt != nil:
		status = "cancelled"
	case n.DisplayFinancialStatus != nil:
		status = strings.ToLower(*n.DisplayFinancialStatus)
	}
	o := Order{Platform: c.platform, ID: id, Status: status, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(),
		Currency: n.CurrencyCode, Total: n.TotalPriceSet.ShopMoney.Amount, Raw: raw,
		Lines: make([]OrderLine, 0, len(n.LineItems.Nodes)), HasLines: true}
	for i, sl := range n.LineItems.Nodes {
		l, err := sl.line()
		if err != nil {
			return Order{}, "", fmt.Errorf("id %s: line %d: %w", textclip.Value(id), i, err)
		}
		o.Lines = append(o.Lines, l)
	}
	o.LineCount = len(o.Lines)
	after := ""
	if pi := n.LineItems.PageInfo; pi.HasNextPage {
		if pi.EndCursor == "" {
			return Order{}, "", fmt.Errorf("id %s: lineItems.pageInfo has a next page but no endCursor", textclip.Value(id))
		}
		after = pi.EndCursor
	}
	return o, after, nil
}

// shopifyResponse is a GraphQL response: data, errors and the cost.
type shopifyResponse struct {
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
	Extensions struct {
		Cost *shopifyCost `json:"cost"`
	} `json:"extensions"`
}

// shopifyCost is extensions.cost: the requested and actual cost of the
// query and the bucket after it.
type shopifyCost struct {
	RequestedQueryCost float64  `json:"requestedQueryCost"`
	ActualQueryCost    *float64 `json:"actualQueryCost"` // null when throttled
	ThrottleStatus     struct {
		MaximumAvailable   float64 `json:"maximumAvailable"`
		CurrentlyAvailable float64 `json:"currentlyAvailable"`
		RestoreRate        float64 `json:"restoreRate"`
	} `json:"throttleStatus"`
}

// query sends one GraphQL operation, paced by its estimated cost, and
// returns the body of a successful answer. Errors are classified: THROTTLED
// is a RateLimitError, MAX_COST_EXCEEDED, ACCESS_DENIED and a rejected
// query are permanent, INTERNAL_SERVER_ERROR is transient.
func (c *shopifyGraphQL) query(ctx context.Context, req PageRequest, operation, query string, vars map[string]any, estimate int) ([]byte, error) {
	budget := c.currentBudget()
	cost := min(float64(estimate), budget.Capacity)
	if req.Meter != nil {
		if err := req.Meter.Book(ctx, budget, cost); err != nil {
			return nil, &TransientError{Platform: c.platform, Msg: fmt.Sprintf("no room for a query of %v points in the shop's budget within this attempt", cost), Err: err}
		}
	}
	resp, err := c.http.R().SetContext(ctx).
		SetBody(map[string]any{"query": query, "operationName": operation, "variables": vars}).
		Post(c.url)
	if err != nil {
		return nil, transportError(c.platform, err)
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return nil, err
	}
	body := resp.Body()
	var r shopifyResponse
	if err := decodeJSON(c.platform, req.Page, body, &r); err != nil {
		return nil, err
	}
	if qc := r.Extensions.Cost; qc != nil {
		c.settle(ctx, req.Meter, budget, cost, qc)
	}
	if len(r.Errors) == 0 {
		return body, nil
	}
	var msgs []string
	code := ""
	for _, e := range r.Errors {
		m := e.Message
		if e.Extensions.Code != "" {
			m = e.Extensions.Code + ": " + m
			if code == "" {
				code = e.Extensions.Code
			}
		} else if strings.EqualFold(e.Message, "Throttled") && code == "" {
			code = "THROTTLED" // the answer's older form
		}
		msgs = append(msgs, m)
	}
	msg := textclip.Line(strings.Join(msgs, "; "))
	switch code {
	case "THROTTLED":
		return nil, c.throttled(r.Extensions.Cost, cost)
	case "MAX_COST_EXCEEDED":
		return nil, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("%s (lower page_size or options.line_items_page_size)", msg)}
	case "ACCESS_DENIED":
		return nil, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf(
			"%s (the app needs the read_orders scope, and read_all_orders for orders older than 60 days; credentials in %s)", msg, c.cred)}
	case "INTERNAL_SERVER_ERROR":
		return nil, &TransientError{Platform: c.platform, Msg: "GraphQL " + msg}
	}
	return nil, &PermanentError{Platform: c.platform, Msg: "GraphQL " + msg}
}

// throttled is the RateLimitError of a THROTTLED answer: the wait is the
// time the bucket needs to hold the query, from Shopify's own reading when
// it sent one.
func (c *shopifyGraphQL) throttled(qc *shopifyCost, booked float64) *RateLimitError {
	need, rate := booked, c.currentBudget().Rate
	msg := fmt.Sprintf("THROTTLED: a query of %v points", booked)
	if qc != nil {
		st := qc.ThrottleStatus
		if qc.RequestedQueryCost > 0 {
			need = qc.RequestedQueryCost
		}
		if st.RestoreRate > 0 {
			rate = st.RestoreRate
		}
		need -= st.CurrentlyAvailable
		msg = fmt.Sprintf("THROTTLED: a query of %v points, %v of %v available, restoring %v a second",
			qc.RequestedQueryCost, st.CurrentlyAvailable, st.MaximumAvailable, rate)
	}
	wait := time.Duration(math.Ceil(max(need, 1)/rate*10)) * 100 * time.Millisecond // whole tenths, never early
	return &RateLimitError{Platform: c.platform, RetryAfter: min(wait, maxDerivedWait), Msg: msg}
}

// settle tells the meter what the query cost (nothing when throttled) and
// how empty Shopify's bucket is, and follows a smaller bucket or restore
// rate than configured. A failed settlement is not the page's failure: the
// next booking on the same books reports the problem.
func (c *shopifyGraphQL) settle(ctx context.Context, m Meter, budget CostBudget, booked float64, qc *shopifyCost) {
	st := qc.ThrottleStatus
	c.mu.Lock()
	if st.RestoreRate > 0 {
		c.reported.Rate = st.RestoreRate
	}
	if st.MaximumAvailable > 0 {
		c.reported.Capacity = st.MaximumAvailable
	}
	c.mu.Unlock()
	if m == nil {
		return
	}
	actual := 0.0
	if qc.ActualQueryCost != nil {
		actual = *qc.ActualQueryCost
	}
	deficit := 0.0
	if st.MaximumAvailable > 0 {
		deficit = st.MaximumAvailable - st.CurrentlyAvailable
	}
	_ = m.Settle(ctx, budget, actual-booked, deficit)
}

// currentBudget is the configured budget, lowered to what Shopify last
// reported (a plan downgraded, a temporary reduction), never raised above
// the configuration.
func (c *shopifyGraphQL) currentBudget() CostBudget {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.budget
	if r := c.reported.Rate; r > 0 && r < b.Rate {
		b.Rate = r
	}
	if r := c.reported.Capacity; r > 0 && r < b.Capacity {
		b.Capacity = r
	}
	return b
}
