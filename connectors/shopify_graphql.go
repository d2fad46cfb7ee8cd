package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
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
	src      credentials.Source // the access token, asked per request
	url      string
	pageSize int
	lines    int // line_items_page_size
	fields   shopifyFields
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

func newShopifyGraphQL(p config.Platform, opts ShopifyOptions, base string, src credentials.Source) *shopifyGraphQL {
	return &shopifyGraphQL{
		platform:  p.Name,
		cred:      p.Credentials,
		src:       src,
		url:       base + "/admin/api/" + opts.APIVersion + "/graphql.json",
		pageSize:  p.PageSize,
		lines:     opts.LineItemsPageSize,
		fields:    newShopifyFields(opts),
		budget:    CostBudget{Rate: opts.RestoreRate, Capacity: opts.MaxCostAvailable},
		http:      newHTTPClient(p).SetHeader("Content-Type", "application/json"),
		files:     newBulkFileClient(p, opts),
		listsBulk: opts.APIVersion == "unstable" || opts.APIVersion >= "2026-01",
		bulkLimit: opts.BulkConcurrency,
	}
}

// The connector's operations: the page query and order(id:) select the
// order as shopifyFields says (shopify_fields.go); the follow-ups list the
// rest of one order's connection or list.
const (
	shopifyOrdersOperation = "OrdersUpdatedInWindow"
	shopifyOrderOperation  = "OrderByID"
	shopifyLinesOperation  = "OrderLineItems"
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
	if listed >= ShopifyPaginationLimit {
		return Page{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf(
			"the window [%s, %s) holds more than %d orders, as many as Shopify pages through in one query, and is too short to split",
			req.From.UTC().Format(time.RFC3339Nano), req.To.UTC().Format(time.RFC3339Nano), ShopifyPaginationLimit)}
	}
	st, resumed := c.resume(ctx, req)
	if st == nil {
		if st, err = c.listPage(ctx, req, listed, cursor); err != nil {
			return Page{}, err
		}
	}
	// The follow-ups, one at a time; a failure keeps what is done (the
	// page and every follow-up before it) for the next attempt, which
	// resumes with the failed follow-up alone.
	for len(st.More) > 0 {
		m := &st.More[0]
		if m.Index < 0 || m.Index >= len(st.Orders) {
			c.forget(ctx, req)
			return Page{}, &TransientError{Platform: c.platform, Msg: "the page's kept progress does not fit its orders; the page is listed again"}
		}
		if err := c.restOfLines(ctx, req, &st.Orders[m.Index], m); err != nil {
			return Page{}, c.keep(ctx, req, st, resumed, err)
		}
		st.More = st.More[1:]
	}
	if resumed {
		c.forget(ctx, req)
	}
	return Page{Orders: st.Orders, NextToken: st.Next}, nil
}

// listPage sends the page's orders query: its orders with their first
// lines, the orders whose lines go on, and the next-page token.
func (c *shopifyGraphQL) listPage(ctx context.Context, req PageRequest, listed int, cursor string) (*shopifyPageState, error) {
	size := pageSize(req, c.pageSize)
	if size <= 0 {
		size = shopifySpec.Defaults.PageSize
	}
	size = min(size, ShopifyMaxConnectionSize, ShopifyPaginationLimit-listed)
	// The page is lowered to what the single-query maximum and the
	// smallest bucket in view hold: a full order costs far more than a
	// header did, and a query over either is refused or never runs.
	orderCost := c.fields.orderCost()
	if ShopifyPageFit(orderCost, ShopifyMaxQueryCost) < 1 {
		return nil, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf(
			"one order costs %d points as selected, more than a query may request (%d); lower options.line_items_page_size, order_fields or order_fragment",
			orderCost, ShopifyMaxQueryCost)}
	}
	// A bucket Shopify lowered below one order's cost for a while still
	// gets pages of one: THROTTLED is a wait, the limit may come back.
	size = min(size, max(1, ShopifyPageFit(orderCost, c.queryLimit())))
	vars := map[string]any{"first": size, "query": shopifySearchWindow(req.From, req.To), "lines": c.lines, "after": nil}
	if cursor != "" {
		vars["after"] = cursor
	}
	body, err := c.query(ctx, req, shopifyOrdersOperation, c.fields.ordersQuery(), vars, ShopifyOrdersQueryCost(size, orderCost))
	if err != nil {
		return nil, err
	}
	items, err := decodeArrayPath(c.platform, req.Page, body, []string{"data", "orders", "nodes"})
	if err != nil {
		return nil, err
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
		return nil, err
	}
	st := &shopifyPageState{}
	if pi := env.Data.Orders.PageInfo; pi.HasNextPage {
		if pi.EndCursor == "" || pi.EndCursor == cursor {
			return nil, &MalformedError{Platform: c.platform, Page: req.Page, Offset: -1,
				Err: fmt.Errorf("orders.pageInfo has a next page but endCursor %q does not move on", textclip.Value(pi.EndCursor))}
		}
		st.Next = shopifyGraphQLTokenPrefix + strconv.Itoa(listed+len(items)) + ":" + pi.EndCursor
	}
	index := 0
	st.Orders, err = decodeOrders(c.platform, req.Page, items, func(n shopifyNode, raw json.RawMessage) (Order, error) {
		o, more, err := c.pagedOrder(n, raw)
		for _, m := range more {
			m.Index, m.Offset = index, items[index].Offset
			st.More = append(st.More, m)
		}
		index++
		return o, err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
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
// nested page: where the next follow-up starts, and how many ran.
type moreLines struct {
	// Conn is the connection or list that goes on ("" and "lineItems":
	// the lines); a list's After is shopifyWholeList.
	Conn   string `json:"conn,omitempty"`
	Index  int    `json:"index"`  // in the page
	Offset int64  `json:"offset"` // of the order in the page's body
	GID    string `json:"gid"`
	After  string `json:"after"`
	Done   int    `json:"done"` // follow-up queries answered so far
}

// shopifyWholeList is the After of a list's follow-up: a list has no
// cursor, its follow-up asks for as much of it as one query may hold.
const shopifyWholeList = "*"

// restOfLines completes one connection or list of an order: the further
// lines (appended to its Lines and its Raw), shipping lines or discount
// applications (to its Raw), one follow-up query per nested page, moving m
// on after each so a failure keeps what came; or a list Shopify truncated
// (refunds, fulfillments), asked for again at the most one query holds.
// An order gone meanwhile fails the page as transient: the retry lists the
// shop as it is then.
func (c *shopifyGraphQL) restOfLines(ctx context.Context, req PageRequest, o *Order, m *moreLines) error {
	conn := m.Conn
	if conn == "" {
		conn = "lineItems"
	}
	nested, ok := nestedField(conn)
	if !ok {
		return &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("kept progress names %s, which is no connection of an order", textclip.Value(conn))}
	}
	what := conn
	if conn == "lineItems" {
		what = "lines"
	}
	bad := func(off int64, err error) error {
		return &MalformedError{Platform: c.platform, Page: req.Page, Offset: off, Err: fmt.Errorf("order %d (id %s): %s: %w", m.Index, textclip.Value(o.ID), what, err)}
	}
	query, cost := followUpQuery(nested, c.queryLimit())
	for m.After != "" {
		if m.Done >= maxShopifyLinePages {
			return bad(m.Offset, fmt.Errorf("still more after %d follow-up queries", m.Done))
		}
		vars := map[string]any{"id": m.GID}
		if !nested.list {
			vars["first"], vars["after"] = followUpFirst(nested, c.queryLimit()), m.After
		}
		body, err := c.query(ctx, req, nested.op, query, vars, cost)
		if err != nil {
			return err
		}
		var env struct {
			Data struct {
				Order map[string]json.RawMessage `json:"order"`
			} `json:"data"`
		}
		if err := decodeJSON(c.platform, req.Page, body, &env); err != nil {
			return err
		}
		if env.Data.Order == nil {
			return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("order %s vanished while its %s were listed; the page is listed again", textclip.Value(o.ID), what), Err: errVanished}
		}
		path := []string{"data", "order", conn}
		if !nested.list {
			path = append(path, "nodes")
		}
		items, err := decodeArrayPath(c.platform, req.Page, body, path)
		if err != nil {
			return err
		}
		raws := make([]json.RawMessage, 0, len(items))
		var lines []OrderLine // appended once all decode: a retry never doubles a line
		for i, it := range items {
			raws = append(raws, it.Raw)
			if conn != "lineItems" {
				continue
			}
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
				return bad(off, fmt.Errorf("follow-up %d, line %d: %w", m.Done+1, i, err))
			}
			lines = append(lines, l)
		}
		next := ""
		if !nested.list {
			var pc struct {
				PageInfo shopifyPageInfo `json:"pageInfo"`
			}
			if err := json.Unmarshal(env.Data.Order[conn], &pc); err != nil {
				return bad(m.Offset, describeFieldError(err))
			}
			if pi := pc.PageInfo; pi.HasNextPage {
				if pi.EndCursor == "" || pi.EndCursor == m.After {
					return bad(m.Offset, fmt.Errorf("%s.pageInfo has a next page but endCursor %q does not move on", conn, textclip.Value(pi.EndCursor)))
				}
				next = pi.EndCursor
			}
		}
		raw, err := extendRaw(o.Raw, conn, nested.list, raws)
		if err != nil {
			return bad(m.Offset, err)
		}
		o.Raw = raw
		o.Lines = append(o.Lines, lines...)
		o.LineCount = len(o.Lines)
		m.After, m.Done = next, m.Done+1
	}
	return nil
}

// pagedOrder normalises an Order node of a page or order(id:) answer: Raw
// in its one shape, and the follow-ups its connections and lists need.
func (c *shopifyGraphQL) pagedOrder(n shopifyNode, raw json.RawMessage) (Order, []moreLines, error) {
	o, _, err := c.order(n, raw)
	if err != nil {
		return Order{}, nil, err
	}
	reshaped, more, full, err := c.fields.reshape(raw)
	if err != nil {
		return Order{}, nil, fmt.Errorf("id %s: %w", textclip.Value(o.ID), err)
	}
	o.Raw = reshaped
	var out []moreLines
	for _, nf := range c.fields.nested() {
		if after, ok := more[nf.field]; ok {
			out = append(out, moreLines{Conn: nf.field, GID: n.ID, After: after})
		} else if slices.Contains(full, nf.field) {
			out = append(out, moreLines{Conn: nf.field, GID: n.ID, After: shopifyWholeList})
		}
	}
	return o, out, nil
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
		Cost json.RawMessage `json:"cost"` // read by cost(): a bad cost is no bad page
	} `json:"extensions"`
}

// cost is the answer's extensions.cost, nil when absent or not an object.
func (r *shopifyResponse) cost() *shopifyCost {
	var qc shopifyCost
	if len(r.Extensions.Cost) == 0 || json.Unmarshal(r.Extensions.Cost, &qc) != nil {
		return nil
	}
	return &qc
}

// shopifyCost is extensions.cost: the requested and actual cost of the
// query and the bucket after it. The numbers are the platform's word and
// read leniently: a value that is not a finite number (a string, 1e400)
// counts as not stated, never as a broken page.
type shopifyCost struct {
	RequestedQueryCost statedNumber `json:"requestedQueryCost"`
	ActualQueryCost    statedNumber `json:"actualQueryCost"` // null when throttled
	ThrottleStatus     struct {
		MaximumAvailable   statedNumber `json:"maximumAvailable"`
		CurrentlyAvailable statedNumber `json:"currentlyAvailable"`
		RestoreRate        statedNumber `json:"restoreRate"`
	} `json:"throttleStatus"`
}

// statedNumber is a number the platform may or may not have stated.
type statedNumber struct {
	V  float64
	OK bool // a finite number was stated
}

func (n *statedNumber) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	*n = statedNumber{V: f, OK: err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)}
	return nil
}

// The plausible bucket: a statement outside these bounds is ignored, so
// one absurd answer cannot make the connector wait for centuries (a
// restore rate of 1e-9) or run unpaced. Shopify's plans restore 50 to
// 2,000 points a second, in buckets of 1,000 points and more; the bounds
// leave room for temporary reductions.
const (
	shopifyMinRestoreRate = 1.0
	shopifyMaxRestoreRate = 100_000.0
	shopifyMinBucket      = 50.0
	shopifyMaxBucket      = 10_000_000.0
)

// shopifyStandardBucket is the bucket assumed until a shop states its own:
// the long-standing standard plan's 1,000 points restoring 50 a second.
// Shopify documents restore rates, not bucket sizes, and may lower limits
// temporarily, so the first queries of a shop never assume more (issue 23:
// pages sent against the configured 2,000 points were THROTTLED).
var shopifyStandardBucket = CostBudget{Rate: 50, Capacity: 1000}

// stated is the bucket of a throttleStatus within the plausible bounds;
// a zero field was not stated plausibly.
func (qc *shopifyCost) stated() CostBudget {
	var b CostBudget
	st := qc.ThrottleStatus
	if r := st.RestoreRate; r.OK && r.V >= shopifyMinRestoreRate && r.V <= shopifyMaxRestoreRate {
		b.Rate = r.V
	}
	if m := st.MaximumAvailable; m.OK && m.V >= shopifyMinBucket && m.V <= shopifyMaxBucket {
		b.Capacity = m.V
	}
	return b
}

// query sends one GraphQL operation, paced by its estimated cost, and
// returns the body of a successful answer. Errors are classified: THROTTLED
// is a RateLimitError, MAX_COST_EXCEEDED, ACCESS_DENIED and a rejected
// query are permanent, INTERNAL_SERVER_ERROR is transient.
func (c *shopifyGraphQL) query(ctx context.Context, req PageRequest, operation, query string, vars map[string]any, estimate int) ([]byte, error) {
	budget := c.bookingBudget()
	cost := min(float64(estimate), c.currentBudget().Capacity)
	if req.Meter != nil {
		if err := req.Meter.Book(ctx, budget, cost); err != nil {
			// Not a TransientError: no room within the attempt is a wait
			// (the activity's slot wait, found by errors.As), not a failure.
			return nil, fmt.Errorf("%s: %s query: %w", c.platform, operation, err)
		}
	}
	body := map[string]any{"query": query, "operationName": operation, "variables": vars}
	// A 401/403 is answered before the query runs: a retry with the
	// source's new token is the query the booking is for.
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetHeader("X-Shopify-Access-Token", token).SetBody(body).Post(c.url)
	})
	if err != nil {
		return nil, asTransportError(c.platform, err)
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return nil, err
	}
	answer := resp.Body()
	var r shopifyResponse
	if err := decodeJSON(c.platform, req.Page, answer, &r); err != nil {
		return nil, err
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
	qc := r.cost()
	if qc != nil {
		c.settle(ctx, req.Meter, budget, cost, qc, code == "THROTTLED")
	}
	if len(r.Errors) == 0 {
		return answer, nil
	}
	msg := textclip.Line(strings.Join(msgs, "; "))
	switch code {
	case "THROTTLED":
		return nil, c.throttled(qc, cost)
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
// it sent a plausible one.
func (c *shopifyGraphQL) throttled(qc *shopifyCost, booked float64) *RateLimitError {
	b := c.currentBudget()
	need, rate := booked, b.Rate
	msg := fmt.Sprintf("THROTTLED: a query of %v points", booked)
	if qc != nil {
		st := qc.ThrottleStatus
		if s := qc.stated(); s.Rate > 0 {
			rate = s.Rate
		}
		if r := qc.RequestedQueryCost; r.OK && r.V > 0 && r.V <= ShopifyMaxQueryCost {
			need = r.V
		}
		avail := 0.0
		if a := st.CurrentlyAvailable; a.OK {
			avail = min(max(a.V, 0), need)
		}
		need -= avail
		msg = fmt.Sprintf("THROTTLED: a query of %v points, %v available, restoring %v a second", need+avail, avail, rate)
	}
	wait := time.Duration(math.Ceil(max(need, 1)/rate*10)) * 100 * time.Millisecond // whole tenths, never early
	return &RateLimitError{Platform: c.platform, RetryAfter: min(max(wait, 100*time.Millisecond), maxDerivedWait), Msg: msg}
}

// settle tells the meter what the query cost (nothing when throttled) and
// how empty Shopify's bucket is, and follows a smaller bucket or restore
// rate than configured. Every number is clamped to what is possible: the
// actual cost to [0, booked], the deficit to [0, bucket]; a statement
// outside the plausible bounds is ignored. A failed settlement is not the
// page's failure: the next booking on the same books reports the problem.
func (c *shopifyGraphQL) settle(ctx context.Context, m Meter, budget CostBudget, booked float64, qc *shopifyCost, throttled bool) {
	stated := qc.stated()
	c.mu.Lock()
	if stated.Rate > 0 {
		c.reported.Rate = stated.Rate
	}
	if stated.Capacity > 0 {
		c.reported.Capacity = stated.Capacity
	}
	c.mu.Unlock()
	if m == nil {
		return
	}
	actual := booked // not stated: nothing refunded
	switch a := qc.ActualQueryCost; {
	case throttled:
		actual = 0 // nothing ran, nothing was taken
	case a.OK:
		actual = min(max(a.V, 0), booked)
	}
	view := c.currentBudget() // the bucket as stated, within the configuration
	deficit := 0.0
	st := qc.ThrottleStatus
	if st.CurrentlyAvailable.OK && stated.Capacity > 0 {
		deficit = min(max(stated.Capacity-st.CurrentlyAvailable.V, 0), stated.Capacity)
	}
	_ = m.Settle(ctx, view, actual-booked, deficit)
}

// queryLimit is the most one query may request: the single-query maximum,
// or the bucket in view when that is smaller (a query the bucket cannot
// hold never runs).
func (c *shopifyGraphQL) queryLimit() float64 {
	return min(float64(ShopifyMaxQueryCost), c.currentBudget().Capacity)
}

// currentBudget is the configured budget, lowered to what Shopify last
// stated to this connector (a plan downgraded, a temporary reduction),
// never raised above the configuration; until the shop has stated its
// bucket, lowered to the standard bucket. The standard bucket also goes to
// the meter as the bound while no worker has had a statement, so the
// shared books follow another worker's statement instead once there is
// one.
func (c *shopifyGraphQL) currentBudget() CostBudget {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.budget
	r := c.reported
	if r.Rate <= 0 {
		r.Rate = shopifyStandardBucket.Rate
	}
	if r.Capacity <= 0 {
		r.Capacity = shopifyStandardBucket.Capacity
	}
	b.Rate, b.Capacity = min(b.Rate, r.Rate), min(b.Capacity, r.Capacity)
	return b
}

// bookingBudget is what a query books against: the configuration lowered
// to this connector's own statement, with the standard bucket as the bound
// until any worker's statement is on the shared books.
func (c *shopifyGraphQL) bookingBudget() CostBudget {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.budget
	if r := c.reported.Rate; r > 0 {
		b.Rate = min(b.Rate, r)
	}
	if r := c.reported.Capacity; r > 0 {
		b.Capacity = min(b.Capacity, r)
	}
	b.UnstatedRate, b.UnstatedCapacity = shopifyStandardBucket.Rate, shopifyStandardBucket.Capacity
	return b
}
