package connectors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// The worst case Shopify documents, on the simulator: the standard bucket
// of 1,000 points restoring 50 a second, below the 2,000 and 100 the
// connector is configured with, pages of 50 orders with 4 lines each
// (852 points requested) and orders with more lines than the nested page
// holds, each needing 303-point follow-ups.

// startPacedShopify starts a simulator with the standard bucket behind
// wrap (nil: none) and returns it with a connector configured with the
// defaults (2,000 points restoring 100 a second).
func startPacedShopify(t *testing.T, clk *fakeClock, wrap func(http.Handler) http.Handler) (*sim.Simulator, connectors.Connector) {
	t.Helper()
	c := simConfig(11, clk)
	c.ShopifyCost = sim.ShopifyStandardBucket
	c.ShopifyLinePage = 2 // orders of 3 to 5 lines need follow-ups
	c.LiveRate = 0        // the world moves with the clock; keep it to the backlog
	s, err := sim.New(c)
	require.NoError(t, err)
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	f, err := config.Parse(fmt.Appendf(nil, shopifyOnSim, ts.URL+"/shops/acme", secretFile(t, "acme-token").File, 50, 4))
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	opts, err := config.KindOptions[connectors.ShopifyOptions](p)
	require.NoError(t, err)
	require.Equal(t, 2000.0, opts.MaxCostAvailable, "configured above the shop's real bucket")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	return s, conn
}

// scheduler runs simulated time for goroutines that sleep on the fake
// clock: the clock moves on, to the earliest wake-up asked for, only once
// every goroutine sleeps. So no query is in flight while time passes, and
// each is sent at the time it was booked for, as on a real clock.
type scheduler struct {
	mu     sync.Mutex
	cond   *sync.Cond
	clk    *fakeClock
	active int
	wakeAt []time.Time
}

func newScheduler(clk *fakeClock, goroutines int) *scheduler {
	s := &scheduler{clk: clk, active: goroutines}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// advance moves the clock to the earliest wake-up once nobody runs.
func (s *scheduler) advance() {
	if s.active > 0 || len(s.wakeAt) == 0 {
		return
	}
	next := s.wakeAt[0]
	for _, t := range s.wakeAt[1:] {
		if t.Before(next) {
			next = t
		}
	}
	s.clk.AdvanceTo(next)
	s.cond.Broadcast()
}

// sleepUntil sleeps the calling goroutine until the clock reaches t.
func (s *scheduler) sleepUntil(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.wakeAt = append(s.wakeAt, t)
	for s.clk.Now().Before(t) {
		s.advance()
		if s.clk.Now().Before(t) {
			s.cond.Wait()
		}
	}
	for i, w := range s.wakeAt {
		if w.Equal(t) {
			s.wakeAt = append(s.wakeAt[:i], s.wakeAt[i+1:]...)
			break
		}
	}
	s.active++
}

// done says the calling goroutine has finished.
func (s *scheduler) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.advance()
}

// attemptMeter is the activity's points meter on the simulator's clock: it
// books on shared books, refuses a booking further away than one attempt
// may wait (the activity's slot wait), and sleeps on the scheduler until
// the booked time.
type attemptMeter struct {
	sched   *scheduler
	books   quota.Points
	maxWait time.Duration
	refused atomic.Int64
}

func (m *attemptMeter) Book(ctx context.Context, b connectors.CostBudget, cost float64) error {
	now := m.sched.clk.Now() // it stands still while this goroutine runs
	d, err := m.books.ReservePoints(ctx, "points/shopify-acme", quota.Budget(b), cost, m.maxWait)
	if err != nil {
		m.refused.Add(1)
		return err
	}
	m.sched.sleepUntil(now.Add(d))
	return nil
}

func (m *attemptMeter) Settle(ctx context.Context, b connectors.CostBudget, delta, deficit float64) error {
	return m.books.SettlePoints(ctx, "points/shopify-acme", quota.Budget(b), delta, deficit)
}

// progressStore is a SQLite store's page progress, as the activity keeps it.
func progressStore(t *testing.T) store.PageProgress {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st.(store.PageProgress)
}

// sliceResult is what one slice of the backfill listed.
type sliceResult struct {
	orders   []connectors.Order
	pages    int
	attempts int
	err      error
}

// runSlice pages through [from, to) as the slice workflow does: an attempt
// refused for want of points is a slot wait (the clock moves on, the same
// page is asked again, no attempt counted); any other error is retried
// like an activity attempt, up to retries times per page.
func runSlice(ctx context.Context, conn connectors.Connector, sched *scheduler, meter connectors.Meter, progress store.PageProgress, name string, from, to time.Time, retries int) sliceResult {
	var res sliceResult
	defer sched.done()
	token, failures := "", 0
	for page := 1; ; {
		res.attempts++
		if res.attempts > 2000 {
			res.err = fmt.Errorf("slice %s: page %d never completed in %d attempts: a livelock", name, page, res.attempts)
			return res
		}
		req := connectors.PageRequest{From: from, To: to, Token: token, Page: page, Meter: meter}
		if progress != nil {
			req.Progress = activities.StoreProgress(progress, fmt.Sprintf("%s/%d/%s", name, page, token))
		}
		p, err := conn.ListOrders(ctx, req)
		if errors.Is(err, quota.ErrNoSlot) {
			sched.sleepUntil(sched.clk.Now().Add(time.Second)) // the slice's durable timer
			continue
		}
		if err != nil {
			if failures++; failures > retries {
				res.err = fmt.Errorf("slice %s page %d: %w", name, page, err)
				return res
			}
			continue
		}
		failures = 0
		res.pages++
		res.orders = append(res.orders, p.Orders...)
		if p.NextToken == "" {
			return res
		}
		token, page = p.NextToken, page+1
	}
}

// TestShopifyBackfillUnderTheStandardBucketWithConcurrency4: four slices
// page at once through one shop whose bucket holds 1,000 points (issue 23:
// the backfill livelocked, each page fetched from scratch again and again
// because its follow-ups could not all be booked within one attempt while
// the other slices' pages queued ahead). Every page query is sent once,
// nothing is THROTTLED, and every order arrives with all its lines.
func TestShopifyBackfillUnderTheStandardBucketWithConcurrency4(t *testing.T) {
	clk := newFakeClock()
	s, conn := startPacedShopify(t, clk, nil)
	const slices = 4
	sched := newScheduler(clk, slices)
	meter := &attemptMeter{sched: sched, books: quota.NewMemory(clk.Now), maxWait: 20 * time.Second}
	progress := progressStore(t)
	start := clk.Now()
	from := start.Add(-25 * time.Hour)

	span := start.Sub(from) / slices
	results := make([]sliceResult, slices)
	var wg sync.WaitGroup
	for i := range slices {
		wg.Go(func() {
			lo, hi := from.Add(time.Duration(i)*span), from.Add(time.Duration(i+1)*span)
			if i == slices-1 {
				hi = start
			}
			results[i] = runSlice(context.Background(), conn, sched, meter, progress, fmt.Sprintf("slice-%d", i), lo, hi, 0)
		})
	}
	wg.Wait()

	listed := map[string]connectors.Order{}
	pages, attempts := 0, 0
	for _, r := range results {
		require.NoError(t, r.err)
		pages += r.pages
		attempts += r.attempts
		for _, o := range r.orders {
			listed[o.ID] = o
		}
	}
	st := s.Stats().Shops["acme"]
	t.Logf("%d pages in %d attempts (%d refused for points), %d queries, %d points used, %s of simulated time",
		pages, attempts, meter.refused.Load(), st.Requests, st.PointsUsed, clk.Now().Sub(start).Round(time.Second))
	require.Zero(t, st.Throttled, "no query was sent into a bucket that could not hold it")
	require.Equal(t, int64(pages), st.Pages, "every page query was sent once: a retry resumes its page, never restarts it")
	require.Greater(t, st.Requests, 3*st.Pages, "the pages needed follow-ups")

	// An order updated while the backfill ran moved past its window; every
	// other one must have been listed.
	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	followUps := 0
	for _, tr := range truth.Orders {
		if tr.UpdatedAt.Before(from) || !tr.UpdatedAt.Before(start) {
			continue
		}
		o, ok := listed[tr.ID]
		require.True(t, ok, "order %s updated at %s is in the backfill: not listed", tr.ID, tr.UpdatedAt)
		lines, err := s.LineItems("acme", o.ID)
		require.NoError(t, err)
		require.Len(t, o.Lines, len(lines), "order %s has all its lines, none twice", o.ID)
		if len(lines) > 4 {
			followUps++
		}
		for i, l := range lines {
			require.Equal(t, l.ID, o.Lines[i].ID, "order %s line %d", o.ID, i)
		}
	}
	require.Positive(t, followUps, "orders with more lines than the nested page were listed")
}

// TestShopifyFailedFollowUpRetriesAlone: a follow-up that fails with a 5xx
// fails its attempt, and the next attempt resumes with that follow-up: the
// page query is not sent again and no other follow-up is repeated (issue
// 23: one failed follow-up made the retry redo the page and all 25 to 69
// of its follow-ups).
func TestShopifyFailedFollowUpRetriesAlone(t *testing.T) {
	clk := newFakeClock()
	var lineQueries, failAt atomic.Int64
	failAt.Store(3)
	s, conn := startPacedShopify(t, clk, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"operationName":"OrderLineItems"`)) && lineQueries.Add(1) == failAt.Load() {
				http.Error(w, `{"errors":"Service Unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	meter := &attemptMeter{sched: newScheduler(clk, 1), books: quota.NewMemory(clk.Now), maxWait: time.Hour}
	progress := progressStore(t)
	req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now(), Page: 1, Meter: meter,
		Progress: activities.StoreProgress(progress, "slice/1/")}
	_, err := conn.ListOrders(context.Background(), req)
	require.Error(t, err, "the third follow-up failed")
	require.False(t, connectors.IsPermanent(err))
	require.Equal(t, int64(1), s.Stats().Shops["acme"].Pages)

	p, err := conn.ListOrders(context.Background(), req)
	require.NoError(t, err, "the retry resumes")
	st := s.Stats().Shops["acme"]
	require.Equal(t, int64(1), st.Pages, "the page query was not sent again")
	needed := 0
	for _, o := range p.Orders {
		lines, err := s.LineItems("acme", o.ID)
		require.NoError(t, err)
		require.Len(t, o.Lines, len(lines), "order %s has all its lines, none twice", o.ID)
		for n := len(lines) - 2; n > 0; n -= 2 { // 2 lines a follow-up after the first 2
			needed++
		}
	}
	require.Equal(t, int64(needed+1), lineQueries.Load(), "each follow-up once, and the failed one once more")
	kept, err := progress.LoadPageProgress(context.Background(), "slice/1/")
	require.NoError(t, err)
	require.Nil(t, kept, "a finished page keeps nothing")
}

// TestShopifyAbsurdCostAnswersDoNotStall: a shop answers with absurd cost
// figures (an actual cost of 1e9, a restore rate of 1e-9, a bucket of
// 1e300, negative availability, numbers too large for a float, a cost that
// is no object at all). None of it fails a page or stalls the shop (issue
// 24: one actualQueryCost of 1e9 moved the shop's points 121 days ahead).
func TestShopifyAbsurdCostAnswersDoNotStall(t *testing.T) {
	for _, tc := range []struct{ name, cost string }{
		{"actual cost 1e9", `{"requestedQueryCost":852,"actualQueryCost":1e9,"throttleStatus":{"maximumAvailable":1000,"currentlyAvailable":0,"restoreRate":50}}`},
		{"restore rate 1e-9", `{"requestedQueryCost":852,"actualQueryCost":852,"throttleStatus":{"maximumAvailable":1000,"currentlyAvailable":0,"restoreRate":1e-9}}`},
		{"huge and negative", `{"requestedQueryCost":-5,"actualQueryCost":-1e308,"throttleStatus":{"maximumAvailable":1e300,"currentlyAvailable":-1e300,"restoreRate":1e300}}`},
		{"zero", `{"requestedQueryCost":0,"actualQueryCost":0,"throttleStatus":{"maximumAvailable":0,"currentlyAvailable":0,"restoreRate":0}}`},
		{"beyond float64", `{"requestedQueryCost":1e400,"actualQueryCost":1e400,"throttleStatus":{"maximumAvailable":1e400,"currentlyAvailable":-1e400,"restoreRate":1e-400}}`},
		{"not numbers", `{"requestedQueryCost":"NaN","actualQueryCost":"Infinity","throttleStatus":{"maximumAvailable":"x","currentlyAvailable":null,"restoreRate":true}}`},
		{"not an object", `"1e9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			var answers atomic.Int64
			s, conn := startPacedShopify(t, clk, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					rec := httptest.NewRecorder()
					next.ServeHTTP(rec, r)
					body := rec.Body.Bytes()
					if answers.Add(1) <= 3 { // the first answers lie about their cost
						i := bytes.Index(body, []byte(`"cost":`))
						require.Positive(t, i)
						body = append(append([]byte{}, body[:i]...), `"cost":`+tc.cost+`}}`...)
					}
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.WriteHeader(rec.Code)
					_, _ = w.Write(body)
				})
			})
			sched := newScheduler(clk, 1)
			meter := &attemptMeter{sched: sched, books: quota.NewMemory(clk.Now), maxWait: time.Hour}
			start := clk.Now()
			res := runSlice(context.Background(), conn, sched, meter, nil, "absurd", start.Add(-25*time.Hour), start, 0)
			require.NoError(t, res.err, "no page failed and no booking was refused within an hour")
			require.Zero(t, meter.refused.Load())
			st := s.Stats().Shops["acme"]
			require.Zero(t, st.Throttled)
			require.Less(t, clk.Now().Sub(start), 6*time.Hour, "hours at worst, never days")
			require.GreaterOrEqual(t, len(res.orders), 250)
		})
	}
}

// TestShopifyKeptCursorRefusedListsThePageAgain: a follow-up cursor kept
// from an earlier attempt that Shopify refuses (expired meanwhile) is no
// reason to dead-letter the slice: the kept progress is dropped and the
// attempt fails as transient, and the next one lists the page again.
func TestShopifyKeptCursorRefusedListsThePageAgain(t *testing.T) {
	clk := newFakeClock()
	var lineQueries atomic.Int64
	s, conn := startPacedShopify(t, clk, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"operationName":"OrderLineItems"`)) && lineQueries.Add(1) == 2 {
				http.Error(w, `{"errors":"Service Unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	meter := &attemptMeter{sched: newScheduler(clk, 1), books: quota.NewMemory(clk.Now), maxWait: time.Hour}
	progress := progressStore(t)
	ctx := context.Background()
	req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now(), Page: 1, Meter: meter,
		Progress: activities.StoreProgress(progress, "slice/1/")}
	_, err := conn.ListOrders(ctx, req)
	require.Error(t, err)
	kept, err := progress.LoadPageProgress(ctx, "slice/1/")
	require.NoError(t, err)
	require.NotNil(t, kept)
	var st map[string]any
	require.NoError(t, json.Unmarshal(kept, &st))
	st["more"].([]any)[0].(map[string]any)["after"] = "bm90LWEtY3Vyc29y" // a cursor Shopify no longer takes
	kept, err = json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, progress.SavePageProgress(ctx, "slice/1/", kept, time.Now().Add(time.Hour)))

	_, err = conn.ListOrders(ctx, req)
	var te *connectors.TransientError
	require.ErrorAs(t, err, &te, "a refused kept cursor is no permanent failure: %v", err)
	require.False(t, connectors.IsPermanent(err))
	kept, err = progress.LoadPageProgress(ctx, "slice/1/")
	require.NoError(t, err)
	require.Nil(t, kept, "the kept progress is dropped")

	_, err = conn.ListOrders(ctx, req)
	require.NoError(t, err, "the page is listed again")
	require.Equal(t, int64(2), s.Stats().Shops["acme"].Pages)
}
