package sim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The Shopify surface plays the part of Shopify's GraphQL Admin API that
// ordersync's shopify connector uses, over the same orders as the list
// endpoint, so a platform of kind shopify with endpoint
// http://127.0.0.1:8780/shops/<shop> runs against the simulator:
//
//	POST /shops/{shop}/admin/api/{version}/graphql.json
//	     X-Shopify-Access-Token: <shop token>
//	     {"query": "...", "operationName": "...", "variables": {...}}
//
// The query is read (shopify_gql.go) and answered with exactly the fields
// it selects from the full order (shopify_order.go); a field Order does
// not have, or a selection over the single-query maximum, is refused as
// Shopify refuses it. Two root fields are served:
//
//   - orders($first, $after, $query, sortKey: UPDATED_AT): $query is
//     Shopify search syntax limited to updated_at ranges with quoted dates
//     (>=, >, <, <=, joined by AND), compared in whole seconds as Shopify
//     keeps updatedAt; each order's lineItems list at most
//     min(first, ShopifyLinePage) lines a page.
//   - order(id:): one order (null when the shop has none by that id), with
//     the same selection, or one of its connections from a cursor on (the
//     connector's follow-ups).
//
// Ids are global ids (gid://shopify/Order/<the list endpoint's id>), times
// whole seconds, amounts Decimal strings. Each shop has a bucket of points
// (Config.ShopifyCost) charged as Shopify does
// (https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits): a
// query needs its requested cost in the bucket (else HTTP 200 with a
// THROTTLED error and actualQueryCost null), is refunded down to its actual
// cost (what was returned), and every answer carries extensions.cost. A
// query requesting more than 1,000 points is refused (MAX_COST_EXCEEDED,
// Shopify's text). The documented worst case is ShopifyStandardBucket
// (1,000 points restoring 50 a second) with a small ShopifyLinePage, so
// full pages of up to 1,000 points need follow-ups of 503; SetShopifyCost
// lowers a bucket meanwhile, as Shopify may.

const (
	shopifyMaxFirst  = 250
	shopifyMaxCost   = 1000
	shopifyOrdersOp  = "OrdersUpdatedInWindow"
	shopifyLinesOp   = "OrderLineItems"
	shopifyOrderGID  = "gid://shopify/Order/"
	shopifyLineGID   = "gid://shopify/LineItem/"
	shopifyMaxBody   = 1 << 20
	shopifyBadCursor = "Invalid cursor"
)

// ShopifyStandardBucket is the documented worst case of a shop's bucket:
// the long-standing standard plan's 1,000 points restoring 50 a second.
// Shopify documents restore rates rather than bucket sizes and may lower
// limits temporarily, so a client configured for more must follow what
// throttleStatus says; tests set Config.ShopifyCost to this.
var ShopifyStandardBucket = CostLimit{RestoreRate: 50, MaxAvailable: 1000}

// SetShopifyCost changes every shop's bucket of points at once, as Shopify
// lowering (or restoring) a shop's limits does: points already in the
// bucket are kept up to the new size.
func (s *Simulator) SetShopifyCost(c CostLimit) error {
	if c.RestoreRate < 0 || c.RestoreRate != c.RestoreRate || c.MaxAvailable < 0 || c.MaxAvailable != c.MaxAvailable {
		return fmt.Errorf("shopify cost needs RestoreRate >= 0 and MaxAvailable >= 0, got %v/%v", c.RestoreRate, c.MaxAvailable)
	}
	if c.MaxAvailable == 0 {
		c.MaxAvailable = 20 * c.RestoreRate
	}
	now := s.now()
	for _, sh := range s.byName {
		sh.mu.Lock()
		sh.points.restore(now)
		sh.points.limit = c
		sh.points.available = min(sh.points.available, c.MaxAvailable)
		sh.mu.Unlock()
	}
	return nil
}

var shopifyVersionRE = regexp.MustCompile(`^(20\d\d-(01|04|07|10)|unstable)$`)

// pointBucket is a shop's bucket of query cost points on the simulator's clock.
type pointBucket struct {
	limit     CostLimit
	available float64
	last      int64 // µs of the last restore
	primed    bool
}

// restore refills the bucket to now and says whether it is limited at all.
func (b *pointBucket) restore(now int64) bool {
	if b.limit.RestoreRate <= 0 {
		return false
	}
	if !b.primed {
		b.available, b.last, b.primed = b.limit.MaxAvailable, now, true
	}
	if now > b.last {
		b.available = min(b.limit.MaxAvailable, b.available+float64(now-b.last)/1e6*b.limit.RestoreRate)
		b.last = now
	}
	return true
}

// shopifyCost is extensions.cost.
type shopifyCost struct {
	RequestedQueryCost int                   `json:"requestedQueryCost"`
	ActualQueryCost    *int                  `json:"actualQueryCost"`
	ThrottleStatus     shopifyThrottleStatus `json:"throttleStatus"`
}

type shopifyThrottleStatus struct {
	MaximumAvailable   float64 `json:"maximumAvailable"`
	CurrentlyAvailable float64 `json:"currentlyAvailable"`
	RestoreRate        float64 `json:"restoreRate"`
}

type shopifyError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

type shopifyAnswer struct {
	Data       any             `json:"data,omitempty"`
	Errors     []shopifyError  `json:"errors,omitempty"`
	Extensions *shopifyCostExt `json:"extensions,omitempty"`
}

type shopifyCostExt struct {
	Cost shopifyCost `json:"cost"`
}

func shopifyErrors(code, format string, args ...any) shopifyAnswer {
	return shopifyAnswer{Errors: []shopifyError{{Message: fmt.Sprintf(format, args...), Extensions: map[string]any{"code": code}}}}
}

// shopifyRequest is a parsed, valid request of one of the two operations.
type shopifyRequest struct {
	op       string
	first    int
	lines    int    // orders: the nested page size asked for
	lo, hi   int64  // orders: the window in µs
	after    string // the cursor, "" for the first page
	orderSeq uint32 // lines: the order
	cost     int    // requested
	root     string // the query's root field: orders or order
	sel      []gqlSel
	vars     map[string]any
	bulk     bulkRequest
	version  string // the API version in the path
	base     string // scheme and host the request came to, for result URLs
}

// handleShopifyGraphQL serves the Shopify surface. The checks run in
// Shopify's order: route, authentication, the query itself, cost, then
// (for valid orders queries only) injected faults.
func (s *Simulator) handleShopifyGraphQL(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.byName[r.PathValue("shop")]
	if !ok || !shopifyVersionRE.MatchString(r.PathValue("version")) {
		writeJSON(w, http.StatusNotFound, map[string]string{"errors": "Not Found"})
		return
	}
	authed, _ := s.shopifyAuth(sh, r.Header.Get("X-Shopify-Access-Token"), s.now())
	var body struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	bodyErr := json.NewDecoder(http.MaxBytesReader(w, r.Body, shopifyMaxBody)).Decode(&body)
	now := s.now()

	sh.mu.Lock()
	sh.stats.Requests++
	sh.peak.add(now)
	if !authed {
		sh.stats.Unauthorized++
		sh.mu.Unlock()
		writeJSON(w, http.StatusUnauthorized, map[string]string{"errors": shopifyUnauthorized})
		return
	}
	if bodyErr != nil {
		sh.stats.BadRequests++
		sh.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{"query": "Required parameter missing or invalid"}})
		return
	}
	if ans, ok := s.shopifyWebhookOp(sh, body.OperationName, body.Query, body.Variables); ok { // shopify_webhooks_gql.go
		sh.mu.Unlock()
		writeJSON(w, http.StatusOK, ans)
		return
	}
	req, qerr := parseShopifyRequest(body.OperationName, body.Query, body.Variables, sh.hash)
	if qerr != nil {
		sh.stats.BadRequests++
		sh.mu.Unlock()
		writeJSON(w, http.StatusOK, *qerr)
		return
	}
	req.version, req.base = r.PathValue("version"), "http://"+r.Host
	limited := sh.points.restore(now)
	if limited && sh.points.available < float64(req.cost) {
		sh.stats.Throttled++
		ans := shopifyErrors("THROTTLED", "Throttled")
		ans.Errors[0].Extensions["documentation"] = "https://shopify.dev/api/usage/rate-limits"
		ans.Extensions = &shopifyCostExt{Cost: shopifyCost{RequestedQueryCost: req.cost, ThrottleStatus: sh.points.status()}}
		sh.mu.Unlock()
		writeJSON(w, http.StatusOK, ans)
		return
	}
	if limited {
		sh.points.available -= float64(req.cost)
	}
	plan := faultPlan{}
	if req.op == shopifyOrdersOp {
		plan = drawFault(sh.faults, &sh.faultRand)
	}
	hangFor := sh.faults.HangFor
	var ans shopifyAnswer
	actual := req.cost
	switch plan.kind {
	case fault5xx:
		sh.stats.Faults.Err5xx++
	case faultEmptyPage:
		sh.stats.Faults.EmptyPage++
		// The cursor resumes at the request's own position: following it loses nothing.
		cur := shopifyCursorAt(sh.hash, req)
		ans.Data = map[string]any{"orders": map[string]any{"nodes": []any{},
			"pageInfo": map[string]any{"hasNextPage": true, "endCursor": cur.encode()}}}
		actual = 2
	case faultNone:
		if isShopifyBulkOp(req.op) {
			sh.world.advance(now)
			if ans.Data = s.shopifyBulkData(sh, req, now); ans.Data == nil {
				ans = shopifyErrors("undefinedField", "Field 'bulkOperations' doesn't exist on type 'QueryRoot' before API version 2026-01")
				actual = 1
			}
			break
		}
		fallthrough
	default:
		sh.world.advance(now)
		var n int
		ans.Data, actual, n, qerr = s.shopifyData(sh, req)
		if qerr != nil {
			ans = *qerr
			actual = 1
			break
		}
		if req.op == shopifyOrdersOp || plan.kind != faultNone {
			sh.stats.countServed(plan, n)
		}
	}
	if limited {
		if plan.kind == fault5xx {
			actual = 0 // nothing ran
		}
		sh.points.available = min(sh.points.limit.MaxAvailable, sh.points.available+float64(req.cost-actual))
	}
	if plan.kind != fault5xx {
		sh.stats.PointsUsed += int64(actual)
		ans.Extensions = &shopifyCostExt{Cost: shopifyCost{RequestedQueryCost: req.cost, ActualQueryCost: &actual, ThrottleStatus: sh.points.status()}}
	}
	sh.mu.Unlock()

	if plan.kind == fault5xx {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"errors": "Service Unavailable (simulated fault), try again"})
		return
	}
	b, err := json.Marshal(ans)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"errors": "encoding the answer failed"})
		return
	}
	writeFaulted(w, r, plan, hangFor, b)
}

func (b *pointBucket) status() shopifyThrottleStatus {
	return shopifyThrottleStatus{MaximumAvailable: b.limit.MaxAvailable, CurrentlyAvailable: b.available, RestoreRate: b.limit.RestoreRate}
}

// parseShopifyRequest recognises the connector's two operations and checks
// their variables as Shopify would; a problem is the GraphQL error answer.
func parseShopifyRequest(op, query string, vars map[string]any, shop uint64) (shopifyRequest, *shopifyAnswer) {
	fail := func(code, format string, args ...any) (shopifyRequest, *shopifyAnswer) {
		a := shopifyErrors(code, format, args...)
		return shopifyRequest{}, &a
	}
	if op == "" {
		if name, ok := strings.CutPrefix(strings.TrimSpace(query), "query "); ok {
			op, _, _ = strings.Cut(name, "(")
		}
	}
	if isShopifyBulkOp(op) {
		q := strings.TrimSpace(query)
		if !strings.HasPrefix(q, "query "+op) && !strings.HasPrefix(q, "mutation "+op) {
			return fail("BAD_REQUEST", "the document does not define operation %q", op)
		}
		return parseShopifyBulk(op, query, vars)
	}
	doc, perr := parseGQL(query)
	if perr != nil {
		return fail("BAD_REQUEST", "%v", perr)
	}
	def, found := doc.operation(op)
	if !found || def.kind != "query" {
		return fail("BAD_REQUEST", "No operation named %q", op)
	}
	sel, eerr := doc.expand(def.sel, 0)
	if eerr != nil {
		return fail("BAD_REQUEST", "%v", eerr)
	}
	if len(sel) == 1 && sel[0].name == shopifyCountRoot {
		return parseShopifyCount(op, sel[0], vars) // shopify_count.go
	}
	if len(sel) != 1 || (sel[0].name != "orders" && sel[0].name != "order") {
		return fail("UNSUPPORTED", "the simulator serves queries of orders(...) or order(id:) alone, as ordersync's shopify connector sends them, got %q", op)
	}
	root := sel[0]
	req := shopifyRequest{op: op, root: root.name, sel: root.sub, vars: vars}
	intVar := func(name string) (int, bool) {
		f, ok := vars[name].(float64)
		return int(f), ok && f == float64(int(f)) && f >= 1 && f <= shopifyMaxFirst
	}
	var ok bool
	switch after := vars["after"].(type) {
	case nil:
	case string:
		req.after = after
	default:
		return fail("BAD_REQUEST", "Variable $after must be a string or null")
	}
	nodeSel := root.sub
	if root.name == "order" {
		idv, _ := root.args["id"]
		gid, _ := idv.resolve(vars).(string)
		n, isGID := strings.CutPrefix(gid, shopifyOrderGID)
		seq, err := strconv.ParseUint(n, 10, 64)
		if !isGID || err != nil || seq < 1_000_000_000 || seq-1_000_000_000 > 1<<32-1 {
			return fail("BAD_REQUEST", "Variable $id of type ID! was provided invalid value %q", gid)
		}
		req.orderSeq = uint32(seq - 1_000_000_000)
	} else {
		req.op = shopifyOrdersOp // faults and counts go to the orders query
		if req.first, ok = intVar("first"); !ok {
			return fail("BAD_REQUEST", "Variable $first must be an integer between 1 and %d, got %v", shopifyMaxFirst, vars["first"])
		}
		if _, asked := vars["lines"]; asked || strings.Contains(query, "$lines") {
			if req.lines, ok = intVar("lines"); !ok {
				return fail("BAD_REQUEST", "Variable $lines must be an integer between 1 and %d, got %v", shopifyMaxFirst, vars["lines"])
			}
		}
		search, _ := vars["query"].(string)
		lo, hi, err := parseShopifySearch(search)
		if err != nil {
			return fail("BAD_REQUEST", "%v", err)
		}
		req.lo, req.hi = lo, hi
		if req.after != "" {
			if _, err := decodeCursor(req.after, shop, lo*1000, hi*1000); err != nil {
				return fail("BAD_REQUEST", "%s: %v", shopifyBadCursor, err)
			}
		}
		nodeSel, _ = connectionNode(root.sub)
	}
	// Shopify checks the fields, then the cost, before anything runs.
	if err := checkShopifySelection(nodeSel); err != nil {
		var fe *shopifyFieldError
		if errors.As(err, &fe) {
			return fail(fe.code, "%s", fe.msg)
		}
		return fail("BAD_REQUEST", "%v", err)
	}
	cost, cerr := requestedCost(sel, vars)
	if cerr != nil {
		return fail("BAD_REQUEST", "%v", cerr)
	}
	req.cost = cost
	if req.cost > shopifyMaxCost {
		a := shopifyErrors("MAX_COST_EXCEEDED", shopifyMaxCostText, req.cost, shopifyMaxCost)
		a.Errors[0].Extensions["cost"], a.Errors[0].Extensions["maxCost"] = req.cost, shopifyMaxCost
		return shopifyRequest{}, &a
	}
	return req, nil
}

// shopifyMaxCostText is Shopify's answer to a query over the single-query
// maximum (https://shopify.dev/docs/api/usage/limits: "the maximum cost of
// a single query is 1,000 points").
const shopifyMaxCostText = "Query cost is %d, which exceeds the single query max cost limit (%d).\n\n" +
	"See https://shopify.dev/concepts/about-apis/rate-limits for more information on how the\n" +
	"cost of a query is calculated.\n\n" +
	"To query larger amounts of data with fewer limits, bulk operations should be used instead.\n" +
	"See https://shopify.dev/tutorials/perform-bulk-operations-with-admin-api for usage details.\n"

var shopifyTerm = regexp.MustCompile(`^updated_at:(>=|>|<=|<)(?:'([^']*)'|"([^"]*)")$`)

// parseShopifySearch reads updated_at ranges of Shopify search syntax into
// a window [lo, hi) of µs, comparing at whole seconds as Shopify does: a
// bound with a fraction of a second selects what whole-second updatedAt
// values it admits.
func parseShopifySearch(q string) (lo, hi int64, err error) {
	lo, hi = minTime.UnixMicro(), maxTime.UnixMicro()
	if strings.TrimSpace(q) == "" {
		return lo, hi, nil
	}
	const sec = int64(time.Second / time.Microsecond)
	floor := func(t time.Time) int64 { return t.Truncate(time.Second).UnixMicro() }
	for _, term := range regexp.MustCompile(`\s+AND\s+`).Split(strings.TrimSpace(q), -1) {
		m := shopifyTerm.FindStringSubmatch(term)
		if m == nil {
			return 0, 0, fmt.Errorf("the simulator understands only updated_at ranges with quoted dates joined by AND (updated_at:>='2026-01-01T00:00:00Z'), got %q", term)
		}
		v := m[2] + m[3]
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil || t.Before(minTime) || !t.Before(maxTime) {
			return 0, 0, fmt.Errorf("%q is not an ISO 8601 time between 1970 and 2200", v)
		}
		ceil := floor(t)
		if !t.Equal(t.Truncate(time.Second)) {
			ceil += sec
		}
		switch m[1] {
		case ">=":
			lo = max(lo, ceil)
		case ">":
			lo = max(lo, floor(t)+sec)
		case "<":
			hi = min(hi, ceil)
		case "<=":
			hi = min(hi, floor(t)+sec)
		}
	}
	return lo, hi, nil
}

// shopifyCursorAt is the orders cursor a request starts at.
func shopifyCursorAt(shop uint64, req shopifyRequest) cursor {
	if req.after != "" {
		if c, err := decodeCursor(req.after, shop, req.lo*1000, req.hi*1000); err == nil {
			return c
		}
	}
	return cursor{shop: shop, from: req.lo * 1000, to: req.hi * 1000, after: entry{upd: req.lo}}
}

// shopifyData runs a valid request on the shop's world (locked, advanced):
// the answer's data, its actual cost and the number of orders listed.
func (s *Simulator) shopifyData(sh *shop, req shopifyRequest) (any, int, int, *shopifyAnswer) {
	proj := &shopifyProjector{vars: req.vars, linePage: s.cfg.ShopifyLinePage}
	failed := func(err error) (any, int, int, *shopifyAnswer) {
		a := shopifyErrors("BAD_REQUEST", "%v", err)
		var fe *shopifyFieldError
		if errors.As(err, &fe) {
			a = shopifyErrors(fe.code, "%s", fe.msg)
		}
		return nil, 0, 0, &a
	}
	if req.root == shopifyCountRoot {
		return s.shopifyCountData(sh, req)
	}
	if req.root == "order" {
		it, ok := shownOrder(sh.world, req.orderSeq)
		if !ok {
			return map[string]any{"order": nil}, 1, 0, nil
		}
		proj.actual = 1
		node, err := proj.object(req.sel, shopifyOrderTree(it.seq, &it.o, it.v, sh.currency, false))
		if err != nil {
			return failed(err)
		}
		return map[string]any{"order": node}, proj.actual, 1, nil
	}
	cur := shopifyCursorAt(sh.hash, req)
	items, more := sh.world.page(req.lo, req.hi, cur.after, req.first)
	nodeSel, _ := connectionNode(req.sel)
	nodes := make([]any, len(items))
	proj.actual = 2
	for i, it := range items {
		proj.actual++
		node, err := proj.object(nodeSel, shopifyOrderTree(it.seq, &it.o, it.v, sh.currency, false))
		if err != nil {
			return failed(err)
		}
		nodes[i] = node
	}
	pageInfo := shopifyPageInfo{HasNextPage: more}
	if len(items) > 0 {
		last := items[len(items)-1]
		cur.after = entry{upd: last.v.updated, seq: last.seq}
		c := cur.encode()
		pageInfo.EndCursor = &c
	}
	return map[string]any{"orders": map[string]any{"nodes": nodes, "pageInfo": pageInfo}}, proj.actual, len(items), nil
}

// shownOrder is order seq as the shop shows it now; false before its first
// version is visible, or for no such order.
func shownOrder(w *world, seq uint32) (listed, bool) {
	if seq == 0 || int(seq) > len(w.orders) || w.orders[seq-1].shown < 0 {
		return listed{}, false
	}
	o := w.orders[seq-1]
	var buf versionBuf
	vs := w.shape.versions(&o, w.stopAt, &buf)
	return listed{seq: seq, o: o, v: vs[o.shown]}, true
}

type shopifyPageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

type shopifyMoneyBag struct {
	ShopMoney shopifyMoney `json:"shopMoney"`
}

type shopifyMoney struct {
	Amount       string `json:"amount"`
	CurrencyCode string `json:"currencyCode"`
}

type shopifyLineNode struct {
	ID                   string          `json:"id"`
	SKU                  string          `json:"sku"`
	Name                 string          `json:"name"`
	Title                string          `json:"title"`
	Quantity             int64           `json:"quantity"`
	OriginalUnitPriceSet shopifyMoneyBag `json:"originalUnitPriceSet"`
}

type shopifyLineConn struct {
	Nodes    []shopifyLineNode `json:"nodes"`
	PageInfo shopifyPageInfo   `json:"pageInfo"`
}

// shopifyOrderFields are an Order node's own fields: the node of a page
// query without its lineItems, and a bulk result's order line as it is.
type shopifyOrderFields struct {
	ID                       string          `json:"id"`
	Name                     string          `json:"name"`
	CreatedAt                string          `json:"createdAt"`
	UpdatedAt                string          `json:"updatedAt"`
	CancelledAt              *string         `json:"cancelledAt"`
	DisplayFinancialStatus   string          `json:"displayFinancialStatus"`
	DisplayFulfillmentStatus string          `json:"displayFulfillmentStatus"`
	CurrencyCode             string          `json:"currencyCode"`
	TotalPriceSet            shopifyMoneyBag `json:"totalPriceSet"`
}

type shopifyNode struct {
	shopifyOrderFields
	LineItems shopifyLineConn `json:"lineItems"`
}

// shopifySeconds renders a µs time as Shopify does: whole seconds, UTC.
func shopifySeconds(us int64) string {
	return time.UnixMicro(us).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// ShopifyFinancialStatus is the displayFinancialStatus the Shopify surface
// shows for an order status of the list endpoint, and whether the order is
// cancelled (cancelledAt set).
func ShopifyFinancialStatus(status string) (financial string, cancelled bool) {
	switch status {
	case "pending":
		return "PENDING", false
	case "refunded":
		return "REFUNDED", false
	case "cancelled":
		return "VOIDED", true
	}
	return "PAID", false // paid, shipped, delivered
}

// LineItem is one line of an order, as both surfaces list it (the list
// endpoint without the id).
type LineItem struct {
	// ID is the line's number: the order's id and the line's two-digit
	// position (1000000001 -> 100000000101, ...).
	ID       string `json:"id"`
	SKU      string `json:"sku"`
	Title    string `json:"title"`
	Quantity int64  `json:"quantity"`
	Price    string `json:"price"` // unit price, a decimal string
}

func orderLines(seq uint32, o *order) []LineItem {
	d := newDetails(o.seed)
	out := make([]LineItem, d.n)
	for i := range out {
		it := d.items[i]
		out[i] = LineItem{ID: fmt.Sprintf("%s%02d", orderID(seq), i+1), SKU: "SKU-" + strconv.Itoa(int(it.sku)),
			Title: products[it.product], Quantity: it.qty, Price: formatCents(it.price)}
	}
	return out
}

// LineItems returns an order's lines: part of the ground truth, and the
// same in every version (only status and total change).
func (s *Simulator) LineItems(shopName, id string) ([]LineItem, error) {
	sh, ok := s.byName[shopName]
	if !ok {
		return nil, fmt.Errorf("unknown shop %q", shopName)
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n <= 1_000_000_000 {
		return nil, fmt.Errorf("%q is not an order id of the simulator", id)
	}
	seq := n - 1_000_000_000
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if seq > uint64(len(sh.world.orders)) {
		return nil, fmt.Errorf("shop %q has no order %s", shopName, id)
	}
	return orderLines(uint32(seq), &sh.world.orders[seq-1]), nil
}

// Line cursors name the order and the position after the last line listed.
func encodeLineCursor(id string, next int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("lines:" + id + ":" + strconv.Itoa(next)))
}

func decodeLineCursor(c, id string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, ok := strings.CutPrefix(string(b), "lines:"+id+":")
	next, err := strconv.Atoi(n)
	return next, ok && err == nil && next >= 0
}
