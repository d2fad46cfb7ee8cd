package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/sim"
)

// fakePacer counts bookings; it never waits.
type fakePacer struct {
	waits    int
	reported float64
	slotOut  int // the first slotOut bookings find the slots booked out
}

func (p *fakePacer) Wait(_ context.Context, s api.Settings) error {
	p.waits++
	if p.slotOut > 0 {
		p.slotOut--
		return &activities.SlotWaitError{Platform: s.Name, What: "a request slot", Delay: 3 * time.Second, Err: quota.ErrNoSlot}
	}
	return nil
}
func (p *fakePacer) Meter(api.Settings) connectors.Meter { return nil }
func (p *fakePacer) Effective(s api.Settings) (float64, int) {
	if p.reported > 0 && p.reported < s.RateLimit.RPS {
		return p.reported, 1
	}
	return s.RateLimit.RPS, 1
}
func (p *fakePacer) Report(_ string, rps float64) {
	if rps > 0 {
		p.reported = rps
	}
}

// scriptConn answers ListOrders with next(n, req), n counting calls from 1.
type scriptConn struct {
	calls int
	next  func(n int, req connectors.PageRequest) (connectors.Page, error)
}

func (c *scriptConn) ListOrders(_ context.Context, req connectors.PageRequest) (connectors.Page, error) {
	c.calls++
	return c.next(c.calls, req)
}

// oneOrderPerWindow lists one order per window, updated at its start.
func oneOrderPerWindow(req connectors.PageRequest) connectors.Page {
	return connectors.Page{Orders: []connectors.Order{{ID: req.From.Format("15"), UpdatedAt: req.From}}}
}

var listT0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func testSettings() api.Settings {
	return api.Settings{Name: "shop", Interval: api.Duration(time.Hour), PageSize: 50,
		Retries: 1, RetryInterval: api.Duration(time.Second), RetryBackoff: 2, MaxRetryInterval: api.Duration(3 * time.Second),
		RateLimit: api.RateLimit{RPS: 4, Burst: 1}}
}

func newTestLister(conn connectors.Connector, pacer Pacer, slept *[]time.Duration) *Lister {
	return &Lister{Conn: conn, Settings: testSettings(), Pacer: pacer,
		Sleep: func(_ context.Context, d time.Duration) error { *slept = append(*slept, d); return nil }}
}

// TestListWaitsOutRateLimits: a 429 with Retry-After, Shopify's THROTTLED
// (its wait derived from the bucket) and a 429 without a wait but with the
// platform's stated rate are waited out, as is a slot booked out; none is
// an attempt, and every request booked a slot first.
func TestListWaitsOutRateLimits(t *testing.T) {
	conn := &scriptConn{next: func(n int, req connectors.PageRequest) (connectors.Page, error) {
		switch n {
		case 1:
			return connectors.Page{}, &connectors.RateLimitError{Platform: "shop", RetryAfter: 7 * time.Second}
		case 2:
			return connectors.Page{}, fmt.Errorf("page: %w", &connectors.RateLimitError{Platform: "shop", RetryAfter: 300 * time.Millisecond,
				Msg: "THROTTLED: a query of 852 points, 800 available, restoring 50 a second"})
		case 4:
			return connectors.Page{}, &connectors.RateLimitError{Platform: "shop", Limit: 0.5}
		}
		return oneOrderPerWindow(req), nil
	}}
	pacer := &fakePacer{slotOut: 1}
	var slept []time.Duration
	l := newTestLister(conn, pacer, &slept)
	listed, err := l.List(context.Background(), Range{listT0, listT0.Add(3 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, Range{listT0, listT0.Add(3 * time.Hour)}, listed.Covered)
	require.Len(t, listed.Expected, 3)
	// The booked-out slot's 3s, then Retry-After, the THROTTLED wait, and one
	// request's spacing at the 0.5/s the platform stated.
	require.Equal(t, []time.Duration{3 * time.Second, 7 * time.Second, 300 * time.Millisecond, 2 * time.Second}, slept)
	require.Equal(t, 3, listed.Progress.RateLimited)
	require.Equal(t, 1, listed.Progress.SlotWaits)
	require.Equal(t, 0, listed.Progress.Retries)
	require.Equal(t, 6, conn.calls)
	require.Equal(t, 7, pacer.waits, "a booking before every request, and the one booked out")
	require.Equal(t, 6, listed.Progress.Requests)
}

// TestListRateLimitWaitIsBounded: a platform that keeps answering 429
// is waited on up to rate_limit_wait per page, as a worker's page is.
func TestListRateLimitWaitIsBounded(t *testing.T) {
	conn := &scriptConn{next: func(int, connectors.PageRequest) (connectors.Page, error) {
		return connectors.Page{}, &connectors.RateLimitError{Platform: "shop", RetryAfter: 4 * time.Second}
	}}
	var slept []time.Duration
	l := newTestLister(conn, &fakePacer{}, &slept)
	l.Settings.RateLimitWait = api.Duration(10 * time.Second)
	listed, err := l.List(context.Background(), Range{listT0, listT0.Add(time.Hour)})
	require.ErrorContains(t, err, "still rate limited after waiting 12s")
	require.Equal(t, []time.Duration{4 * time.Second, 4 * time.Second}, slept)
	require.Equal(t, Range{listT0, listT0}, listed.Covered, "nothing covered")
}

// TestListRetriesTransientThenStops: a transient failure is retried
// max(retries, MinRetries) times with back-off, then the listing stops and
// returns the windows it completed.
func TestListRetriesTransientThenStops(t *testing.T) {
	conn := &scriptConn{next: func(n int, req connectors.PageRequest) (connectors.Page, error) {
		if n == 1 {
			return oneOrderPerWindow(req), nil
		}
		return connectors.Page{}, &connectors.TransientError{Platform: "shop", Msg: "HTTP 503"}
	}}
	var slept []time.Duration
	l := newTestLister(conn, &fakePacer{}, &slept)
	listed, err := l.List(context.Background(), Range{listT0, listT0.Add(3 * time.Hour)})
	require.ErrorContains(t, err, "4 attempts")
	require.ErrorContains(t, err, "HTTP 503")
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, slept, "retry_interval doubling, at most max_retry_interval")
	require.Equal(t, Range{listT0, listT0.Add(time.Hour)}, listed.Covered)
	require.Len(t, listed.Expected, 1)
	require.Equal(t, 3, listed.Progress.Retries)
	require.Equal(t, 5, conn.calls)
}

// TestListPermanentStopsAtOnce: retrying cannot mend a refused request.
func TestListPermanentStopsAtOnce(t *testing.T) {
	conn := &scriptConn{next: func(int, connectors.PageRequest) (connectors.Page, error) {
		return connectors.Page{}, &connectors.PermanentError{Platform: "shop", Status: 401, Msg: "bad token"}
	}}
	var slept []time.Duration
	_, err := newTestLister(conn, &fakePacer{}, &slept).List(context.Background(), Range{listT0, listT0.Add(time.Hour)})
	var perm *connectors.PermanentError
	require.True(t, errors.As(err, &perm), "%v", err)
	require.Empty(t, slept)
	require.Equal(t, 1, conn.calls)
}

// TestListInterruptedKeepsCompleteWindows: interrupted in the third
// window, on its second page, the listing covers the first two; the third
// window's first page is dropped (pages need not come in update order).
func TestListInterruptedKeepsCompleteWindows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := &scriptConn{next: func(n int, req connectors.PageRequest) (connectors.Page, error) {
		switch n {
		case 3:
			pg := oneOrderPerWindow(req)
			pg.NextToken = "more"
			return pg, nil
		case 4:
			cancel()
			return connectors.Page{}, fmt.Errorf("shop: %w", context.Canceled)
		}
		return oneOrderPerWindow(req), nil
	}}
	var slept []time.Duration
	var seen []Progress
	l := newTestLister(conn, &fakePacer{}, &slept)
	l.OnPage = func(p Progress) { seen = append(seen, p) }
	listed, err := l.List(ctx, Range{listT0, listT0.Add(5 * time.Hour)})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, Range{listT0, listT0.Add(2 * time.Hour)}, listed.Covered)
	require.Len(t, listed.Expected, 2)
	require.Equal(t, 3, listed.Progress.Pages)
	require.Equal(t, listT0.Add(2*time.Hour), seen[len(seen)-1].Reached, "progress shows the window reached")
}

// countingSlots records every booking on the store-backed slots.
type countingSlots struct {
	quota.Slots
	mu     sync.Mutex
	slots  []string // key rps/burst
	points []string // key
}

func (c *countingSlots) Reserve(ctx context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error) {
	c.mu.Lock()
	c.slots = append(c.slots, fmt.Sprintf("%s %v/%d", key, rps, burst))
	c.mu.Unlock()
	return c.Slots.Reserve(ctx, key, rps, burst, maxWait)
}

func (c *countingSlots) ReservePoints(ctx context.Context, key string, b quota.Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	c.mu.Lock()
	c.points = append(c.points, key)
	c.mu.Unlock()
	return c.Slots.(quota.Points).ReservePoints(ctx, key, b, cost, maxWait)
}

func (c *countingSlots) SettlePoints(ctx context.Context, key string, b quota.Budget, delta, deficit float64) error {
	return c.Slots.(quota.Points).SettlePoints(ctx, key, b, delta, deficit)
}

// TestListBooksTheAccountsSharedBudget lists a Shopify shop on the
// simulator through the workers' limiters on the store-backed slots (the
// ones every worker books from): every request books one slot of the
// platform's row at its configured rate, and every GraphQL query its
// points on the platform's points row, so verify's requests count against
// the account's limit with the fleet's. The simulator holds the shop to
// the same rate and never had to refuse a request.
func TestListBooksTheAccountsSharedBudget(t *testing.T) {
	s, err := sim.New(sim.Config{Seed: 5, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}, AdminToken: "admin-token",
		History: 24 * time.Hour, HistoryOrders: 40, MaxUpdates: 2, UpdateSpread: 6 * time.Hour, Late: time.Second,
		RateLimit: sim.RateLimit{RPS: 20, Burst: 5}})
	require.NoError(t, err)
	var posts atomic.Int64
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Setenv("ORDERSYNC_TEST_SHOPIFY_TOKEN", "acme-token")
	f, err := config.Parse(fmt.Appendf(nil, `
platforms:
  shopify-acme:
    kind: shopify
    endpoint: %s/shops/acme
    credentials: {env: ORDERSYNC_TEST_SHOPIFY_TOKEN}
    page_size: 10
    interval: 6h
    rate_limit: {rps: 20, burst: 1}
`, ts.URL))
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)

	shared, err := quota.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = shared.Close() })
	slots := &countingSlots{Slots: shared}
	lim := activities.NewLimiters()
	lim.Shared = slots

	now := time.Now().UTC()
	l := &Lister{Conn: conn, Settings: p.Settings(), Pacer: lim, Lines: true}
	listed, err := l.List(context.Background(), Range{now.Add(-25 * time.Hour), now.Add(-time.Minute)})
	require.NoError(t, err)
	require.NotEmpty(t, listed.Expected)
	require.Greater(t, listed.Progress.Requests, listed.Progress.Windows, "several pages")

	require.Len(t, slots.slots, listed.Progress.Requests, "one slot per request")
	for _, b := range slots.slots {
		require.Equal(t, "shopify-acme 20/1", b, "the platform's row, at its configured rate")
	}
	require.Len(t, slots.points, int(posts.Load()), "points booked for every query sent")
	for _, k := range slots.points {
		require.Equal(t, "points/shopify-acme", k)
	}
	st := s.Stats().Shops["acme"]
	require.Equal(t, posts.Load(), st.Requests)
	require.Zero(t, st.RateLimited+st.Throttled, "the shop never had to refuse one")
	require.Zero(t, listed.Progress.RateLimited)
}

// TestListWindowsFollowTheHistory: windows double while each fits in one
// page, up to backfill_max_span, and halve (not below interval) after one
// that took more than half of max_pages.
func TestListWindowsFollowTheHistory(t *testing.T) {
	var windows []time.Duration
	conn := &scriptConn{next: func(_ int, req connectors.PageRequest) (connectors.Page, error) {
		if req.Token == "" {
			windows = append(windows, req.To.Sub(req.From))
		}
		pg := oneOrderPerWindow(req)
		// The window starting at 15h is dense: three pages.
		if req.From.Equal(listT0.Add(15*time.Hour)) && req.Page < 3 {
			pg.NextToken = "more"
		}
		return pg, nil
	}}
	var slept []time.Duration
	l := newTestLister(conn, &fakePacer{}, &slept)
	l.Settings.BackfillMaxSpan, l.Settings.MaxPages = api.Duration(8*time.Hour), 4
	listed, err := l.List(context.Background(), Range{listT0, listT0.Add(30 * time.Hour)})
	require.NoError(t, err)
	h := time.Hour
	require.Equal(t, []time.Duration{h, 2 * h, 4 * h, 8 * h, 8 * h, 4 * h, 3 * h}, windows)
	require.Equal(t, Range{listT0, listT0.Add(30 * time.Hour)}, listed.Covered)
	require.Equal(t, 7, listed.Progress.Windows)
	require.Equal(t, 9, listed.Progress.Pages)
}
