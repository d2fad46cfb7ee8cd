package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Truth is the ground truth of one shop: every order's newest version
// visible at AsOf, which is exactly what the list endpoint shows at that time.
type Truth struct {
	Shop   string       `json:"shop"`
	AsOf   time.Time    `json:"as_of"`
	Orders []TruthOrder `json:"orders"` // by id
}

// TruthOrder is one order's visible version.
type TruthOrder struct {
	ID        string    `json:"id"`
	UpdatedAt time.Time `json:"updated_at"`
	Status    string    `json:"status"`
	Total     string    `json:"total"`
	// Lines are the version's line items, in the list's order; only in a
	// truth asked for with lines (TruthWithLines, ?lines=true).
	Lines []TruthLine `json:"lines,omitempty"`
}

// Stats are the counters of every shop.
type Stats struct {
	AsOf  time.Time            `json:"as_of"`
	Shops map[string]ShopStats `json:"shops"`
}

// ShopStats counts what one shop served and holds.
type ShopStats struct {
	// Requests counts every list request (and Shopify GraphQL query) to the
	// shop, whatever its answer.
	Requests int64 `json:"requests"`
	// RateLimited counts 429 answers.
	RateLimited int64 `json:"rate_limited"`
	// Throttled counts THROTTLED answers of the Shopify GraphQL surface.
	Throttled    int64 `json:"throttled"`
	Unauthorized int64 `json:"unauthorized"`
	BadRequests  int64 `json:"bad_requests"`
	// Pages and OrdersServed count successful pages and the orders in them.
	Pages        int64      `json:"pages"`
	OrdersServed int64      `json:"orders_served"`
	Faults       FaultStats `json:"faults"`
	// PointsUsed sums the actual cost of the Shopify surface's answered
	// queries.
	PointsUsed int64 `json:"points_used,omitempty"`
	// Bulk operations of the Shopify surface: started, ended FAILED,
	// cancelled; result downloads, those cut off, and refused for an
	// expired URL.
	BulkOperations int64 `json:"bulk_operations,omitempty"`
	BulkFailed     int64 `json:"bulk_failed,omitempty"`
	BulkCanceled   int64 `json:"bulk_canceled,omitempty"`
	BulkDownloads  int64 `json:"bulk_downloads,omitempty"`
	BulkDropped    int64 `json:"bulk_dropped,omitempty"`
	BulkURLExpired int64 `json:"bulk_url_expired,omitempty"`
	// Orders is the number of orders created so far (visible or not yet).
	Orders int `json:"orders"`
	// VisibleOrders is the number of orders the list endpoint can show.
	VisibleOrders int `json:"visible_orders"`
	// Versions is the number of order versions that have become visible
	// (a version superseded before it became visible still counts).
	Versions int64 `json:"versions"`
	// PeakRequestsPerSecond is the largest number of list requests (any
	// answer) that arrived within one second (t-1s, t] on the simulator's
	// clock, over all t: the rate a client really inflicted.
	PeakRequestsPerSecond int `json:"peak_requests_per_second"`
}

// FaultStats counts injected faults by type.
type FaultStats struct {
	Err5xx    int64 `json:"err_5xx"`
	Hang      int64 `json:"hang"`
	Malformed int64 `json:"malformed"`
	EmptyPage int64 `json:"empty_page"`
}

// Stats returns every shop's counters, with the world advanced to now.
func (s *Simulator) Stats() Stats {
	now := s.now()
	st := Stats{AsOf: time.UnixMicro(now).UTC(), Shops: make(map[string]ShopStats, len(s.shops))}
	for _, sh := range s.shops {
		sh.mu.Lock()
		sh.world.advance(now)
		ss := sh.stats
		ss.Orders = len(sh.world.orders)
		ss.VisibleOrders = sh.world.visible
		ss.Versions = sh.world.versions
		ss.PeakRequestsPerSecond = sh.peak.peak
		sh.mu.Unlock()
		st.Shops[sh.name] = ss
	}
	return st
}

// Truth returns a shop's ground truth as of asOf; the zero time means now.
// asOf may lie in the past (the truth is re-derived), not in the future.
func (s *Simulator) Truth(shopName string, asOf time.Time) (*Truth, error) {
	return s.truth(shopName, asOf, false)
}

// TruthWithLines is Truth with every order's line items, for checking the
// lines a store holds (ordersync verify).
func (s *Simulator) TruthWithLines(shopName string, asOf time.Time) (*Truth, error) {
	return s.truth(shopName, asOf, true)
}

func (s *Simulator) truth(shopName string, asOf time.Time, withLines bool) (*Truth, error) {
	t := &Truth{Shop: shopName, Orders: []TruthOrder{}}
	err := s.eachTruth(shopName, asOf, withLines, func(at time.Time) { t.AsOf = at }, func(o TruthOrder) { t.Orders = append(t.Orders, o) })
	if err != nil {
		return nil, err
	}
	return t, nil
}

// eachTruth streams a shop's truth: asOf resolved, then the orders by id,
// with their lines when asked.
func (s *Simulator) eachTruth(shopName string, asOf time.Time, withLines bool, head func(time.Time), fn func(TruthOrder)) error {
	sh, ok := s.byName[shopName]
	if !ok {
		return fmt.Errorf("unknown shop %q", shopName)
	}
	now := s.now()
	at := now
	if !asOf.IsZero() {
		if at = asOf.UnixNano() / 1000; at > now { // floor: a version visible at µs v is visible at any ns >= v*1000
			return fmt.Errorf("as_of %s is after the simulator's now %s", asOf.UTC().Format(time.RFC3339Nano), formatMicros(now))
		}
	}
	sh.mu.Lock()
	sh.world.advance(now)
	tv := sh.world.truthView()
	sh.mu.Unlock()
	head(time.UnixMicro(at).UTC())
	tv.each(at, func(seq uint32, o *order, v version) {
		to := TruthOrder{ID: orderID(seq), UpdatedAt: time.UnixMicro(v.updated).UTC(), Status: v.status.String(), Total: formatCents(v.total)}
		if withLines {
			to.Lines = truthLines(o, sh.currency)
		}
		fn(to)
	})
	return nil
}

// TruthLine is one line item of an order. Line items never change across
// an order's versions; both the sim's API and the Amazon surface list them.
// They have no id: the sim's API lists them in a fixed order, and a line's
// id is its position.
type TruthLine struct {
	SKU       string `json:"sku"`
	Title     string `json:"title"`
	Quantity  int64  `json:"quantity"`
	UnitPrice string `json:"unit_price"`
	Currency  string `json:"currency"` // the shop's
}

// truthLines derives an order's line items, as render lists them.
func truthLines(o *order, currency string) []TruthLine {
	d := newDetails(o.seed)
	lines := make([]TruthLine, d.n)
	for i := range lines {
		it := d.items[i]
		lines[i] = TruthLine{SKU: "SKU-" + strconv.Itoa(int(it.sku)), Title: products[it.product], Quantity: it.qty,
			UnitPrice: formatCents(it.price), Currency: currency}
	}
	return lines
}

// OrderLines returns the line items of one of a shop's orders, by id, so a
// test can check the lines a connector stored against the ground truth.
func (s *Simulator) OrderLines(shopName, id string) ([]TruthLine, error) {
	sh, ok := s.byName[shopName]
	if !ok {
		return nil, fmt.Errorf("unknown shop %q", shopName)
	}
	n, err := strconv.ParseUint(id, 10, 64)
	seq := n - 1_000_000_000
	sh.mu.Lock()
	known := err == nil && n > 1_000_000_000 && seq <= uint64(len(sh.world.orders))
	var o order
	if known {
		o = sh.world.orders[seq-1]
	}
	sh.mu.Unlock()
	if !known {
		return nil, fmt.Errorf("shop %q has no order %q", shopName, id)
	}
	return truthLines(&o, sh.currency), nil
}

// adminAuth answers 403/401 unless the request carries the admin token.
func (s *Simulator) adminAuth(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.AdminToken == "" {
		writeError(w, http.StatusForbidden, "admin API disabled: no admin token configured")
		return false
	}
	if !bearerMatches(r, []byte(s.cfg.AdminToken)) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sim-admin"`)
		writeError(w, http.StatusUnauthorized, "invalid or missing admin bearer token")
		return false
	}
	return true
}

// handleTruth serves GET /admin/shops/{shop}/truth[?as_of=RFC3339][&lines=true].
// It streams, since a big shop's truth is many megabytes.
func (s *Simulator) handleTruth(w http.ResponseWriter, r *http.Request) {
	if !s.adminAuth(w, r) {
		return
	}
	shopName := r.PathValue("shop")
	if _, ok := s.byName[shopName]; !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown shop %q", shopName))
		return
	}
	var asOf time.Time
	if v := r.URL.Query().Get("as_of"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.Before(minTime) || !t.Before(maxTime) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("as_of %q is not an RFC3339 time between 1970 and 2200", v))
			return
		}
		asOf = t
	}
	withLines := false
	if v := r.URL.Query().Get("lines"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("lines %q is not true or false", v))
			return
		}
		withLines = b
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	first := true
	enc := json.NewEncoder(bw)
	err := s.eachTruth(shopName, asOf, withLines, func(at time.Time) {
		w.Header().Set("Content-Type", "application/json")
		shop, _ := json.Marshal(shopName)
		fmt.Fprintf(bw, `{"shop":%s,"as_of":%q,"orders":[`, shop, at.Format(time.RFC3339Nano))
	}, func(o TruthOrder) {
		if !first {
			_ = bw.WriteByte(',')
		}
		first = false
		_ = enc.Encode(o) // the trailing newline is valid JSON whitespace
	})
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	_, _ = bw.WriteString("]}\n")
	_ = bw.Flush()
}

// handleStats serves GET /admin/stats.
func (s *Simulator) handleStats(w http.ResponseWriter, r *http.Request) {
	if !s.adminAuth(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, s.Stats())
}
