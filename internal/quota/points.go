package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Some platforms meter requests by cost rather than by count: Shopify's
// GraphQL Admin API keeps a leaky bucket of points per app and shop, and a
// query may run only when the bucket holds its requested cost
// (https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits).
// The same cell rate algorithm books such a budget with a weight: a
// request of cost c moves the TAT by c·T (T = 1/rate per point) and may go
// once the bucket, as the TAT describes it, has room for c,
//
//	send at max(now, TAT - (capacity - c)·T)
//
// which for c = 1 and capacity = burst is exactly the request slot above.
// A platform that says afterwards what the request really cost (Shopify
// refunds the difference between requested and actual cost) is followed
// with SettlePoints, as is the deficit it reports: every process then books
// against the platform's own count.
//
// One row per budget is the shop's only bucket view, for every query of
// every worker: it holds the TAT, the T the TAT was booked in, and the
// bucket the platform last stated (its capacity and restore rate). Every
// booking paces at the lower of the caller's budget and the stated one,
// and a change of either re-expresses the TAT in the new T, keeping the
// points missing: a TAT booked at 100 points a second means twice the
// points at 50, and reading it as time alone sent 852-point queries into a
// bucket holding 803 (issue 23).
//
// The arithmetic is in float64 and clamped before it becomes µs, so no
// answer a platform sends (1e9 points, a restore rate of 1e-9) can
// overflow it, and no settlement moves the bucket further than empty now
// plus the refill time of one bucket (issue 24).

// Budget is a leaky bucket of points: at most Capacity, restored at Rate
// points a second.
type Budget struct {
	Rate     float64
	Capacity float64
	// UnstatedRate and UnstatedCapacity, when set, bound the bucket while
	// the platform has not stated its own (no answer settled on the row
	// yet): a platform's smallest documented bucket, say, so the first
	// queries of a shop never assume more. Once stated, the statement
	// applies instead, within Rate and Capacity.
	UnstatedRate, UnstatedCapacity float64
}

// The sane bounds of a budget: a rate or capacity outside is clamped to
// them, so a stated bucket cannot book centuries. Shopify's plans restore
// 50 to 2,000 points a second in buckets of 1,000 to 40,000 points.
const (
	MinRate     = 0.01
	MaxRate     = 1e6
	MinCapacity = 1.0
	MaxCapacity = 1e9
)

// horizon is the furthest ahead of now a TAT may lie beyond one bucket's
// refill time: bookings are made at most an attempt's wait (an hour without
// a deadline) ahead, so a row further out is damage (written by an older
// version from an absurd answer) and is brought back.
const horizon = 2 * time.Hour

// Points books cost-metered budgets. The SQLite and PostgreSQL slots
// implement it on a table of their own (ordersync_points_budgets);
// NewMemory implements it within one process.
type Points interface {
	// ReservePoints books cost points of key's budget and returns how long
	// to wait before sending the request. b is the caller's budget (its
	// configuration); the bucket the platform stated last, when lower,
	// applies instead. When the wait would be longer than maxWait nothing
	// is booked and a *NoRoomError (errors.Is ErrNoSlot) is returned.
	ReservePoints(ctx context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error)
	// SettlePoints corrects key's budget once the platform answered: b is
	// the bucket as the platform stated it (kept as the shop's view for
	// every later booking), delta more points spent (negative: refunded),
	// and at least deficit points missing from the bucket as of now (the
	// platform's own reading). It never waits.
	SettlePoints(ctx context.Context, key string, b Budget, delta, deficit float64) error
}

// NoRoomError is a booking refused because its wait is longer than allowed.
// It names the cost and the bucket, so a wait for points is readable in
// status and history.
type NoRoomError struct {
	Cost      float64
	Budget    Budget        // the bucket the booking paced at
	Available float64       // points in the bucket now, as the books have it (negative: booked ahead)
	Wait      time.Duration // until the booking could be sent
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("a query of %.0f points waits %s: bucket of %.0f points restoring %g a second, %.0f available",
		e.Cost, e.Wait.Round(time.Second), e.Budget.Capacity, e.Budget.Rate, e.Available)
}

// Is makes a NoRoomError an ErrNoSlot.
func (e *NoRoomError) Is(target error) bool { return target == ErrNoSlot }

// pointsRow is one budget's row. The TAT covers only the points of
// requests already sent; a booking sent later waits in pending until its
// send time, and joins the TAT then as the platform's bucket charges it:
// TAT = max(TAT, send) + c·T, so the bucket is full at most, as the
// platform's is. One TAT over both made a refund or the restore of a
// waiting spell count points the platform's full bucket never held, and
// queries went into a bucket 3 to 50 points short of them.
type pointsRow struct {
	tat      int64     // µs: when the bucket is full again, by the requests sent
	floor    int64     // µs: when the bucket is full by the newest reading alone
	pending  []booking // bookings to be sent, in send order
	perPoint float64   // the T tat, floor and pending were booked in, µs a point; 0: a new row
	stated   Budget    // the platform's last statement; zero fields: none
}

// booking is a request booked to be sent at a later time.
type booking struct {
	Send int64 `json:"s"` // µs
	Cost int64 `json:"c"` // µs: the points times T
}

// maxPending bounds the bookings waiting to be sent (one per request in
// flight, in practice a few).
const maxPending = 1000

// clone is a copy that shares nothing with r.
func (r *pointsRow) clone() pointsRow {
	c := *r
	c.pending = slices.Clone(r.pending)
	return c
}

// encodePending and decodePending store the pending bookings as JSON text.
func (r *pointsRow) encodePending() string {
	if len(r.pending) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(r.pending)
	return string(b)
}

func (r *pointsRow) decodePending(s string) {
	r.pending = nil
	if json.Unmarshal([]byte(s), &r.pending) != nil {
		r.pending = nil // unreadable: the bookings are forgotten, the readings correct it
	}
}

// due moves the bookings sent by now into the TAT.
func (r *pointsRow) due(now int64) {
	i := 0
	for ; i < len(r.pending) && r.pending[i].Send <= now; i++ {
		r.tat = max(r.tat, r.pending[i].Send) + r.pending[i].Cost
	}
	r.pending = r.pending[i:]
}

// projected is the TAT once every pending booking is sent.
func (r *pointsRow) projected() int64 {
	tat := r.tat
	for _, p := range r.pending {
		tat = max(tat, p.Send) + p.Cost
	}
	return tat
}

// sane clamps a budget into the sane bounds; NaN and non-positive values
// are errors.
func sane(b Budget) (Budget, error) {
	if !(b.Rate > 0) || math.IsInf(b.Rate, 0) {
		return b, fmt.Errorf("points budget: rate must be positive, got %v", b.Rate)
	}
	if !(b.Capacity > 0) || math.IsInf(b.Capacity, 0) {
		return b, fmt.Errorf("points budget: capacity must be positive, got %v", b.Capacity)
	}
	b.Rate, b.Capacity = min(max(b.Rate, MinRate), MaxRate), min(max(b.Capacity, MinCapacity), MaxCapacity)
	return b, nil
}

// effective is b lowered to the bucket the platform stated, or to b's
// unstated bounds while it has stated none.
func (r *pointsRow) effective(b Budget) Budget {
	limit := r.stated
	if limit.Rate <= 0 && limit.Capacity <= 0 {
		limit = Budget{Rate: b.UnstatedRate, Capacity: b.UnstatedCapacity}
	}
	if s := limit.Rate; s > 0 && s < b.Rate {
		b.Rate = s
	}
	if s := limit.Capacity; s > 0 && s < b.Capacity {
		b.Capacity = s
	}
	return Budget{Rate: min(max(b.Rate, MinRate), MaxRate), Capacity: min(max(b.Capacity, MinCapacity), MaxCapacity)}
}

// perPointUs is T, the µs one point takes to restore, widened by the
// jitter allowance.
func perPointUs(b Budget) float64 { return 1e6 * (1 + JitterAllowance) / b.Rate }

// us turns a float of µs into int64 without overflow.
func us(f float64) int64 {
	const lim = float64(1 << 62)
	if math.IsNaN(f) {
		return 0
	}
	return int64(math.Round(min(max(f, -lim), lim)))
}

// rebase expresses the TAT in T, keeping the points it says are missing,
// and brings back a TAT beyond the horizon.
func (r *pointsRow) rebase(now int64, b Budget, T float64) {
	if r.perPoint > 0 && r.perPoint != T {
		if r.tat > now {
			r.tat = now + us(float64(r.tat-now)/r.perPoint*T)
		}
		if r.floor > now {
			r.floor = now + us(float64(r.floor-now)/r.perPoint*T)
		}
		for i := range r.pending {
			r.pending[i].Cost = us(float64(r.pending[i].Cost) / r.perPoint * T)
		}
	}
	r.perPoint = T
	if limit := now + us(b.Capacity*T) + horizon.Microseconds(); r.tat > limit {
		r.tat = limit
	}
	r.floor = min(r.floor, now+us(b.Capacity*T))
}

// reserve books cost on the row at now, if it can be sent within limit µs.
func (r *pointsRow) reserve(b Budget, cost float64, now, limit int64) (time.Duration, error) {
	b, err := sane(b)
	if err != nil {
		return 0, err
	}
	switch {
	case cost < 0 || math.IsNaN(cost) || math.IsInf(cost, 0):
		return 0, fmt.Errorf("points budget: cost must be a non-negative number, got %v", cost)
	case cost > b.Capacity:
		return 0, fmt.Errorf("points budget: a request of cost %v can never fit a bucket of %v points", cost, b.Capacity)
	}
	b = r.effective(b)
	cost = min(cost, b.Capacity) // the stated bucket is smaller: book all of it, the platform decides
	T := perPointUs(b)
	r.rebase(now, b, T)
	r.due(now)
	last := now
	if n := len(r.pending); n > 0 {
		last = r.pending[n-1].Send
	}
	projected := r.projected()
	send := max(last, projected-us((b.Capacity-cost)*T))
	if send-now > max(limit, 0) || len(r.pending) >= maxPending {
		return 0, &NoRoomError{Cost: cost, Budget: b, Available: b.Capacity - float64(max(projected-now, 0))/T,
			Wait: time.Duration(send-now) * time.Microsecond}
	}
	if send <= now {
		r.tat = max(r.tat, now) + us(cost*T)
	} else {
		r.pending = append(r.pending, booking{Send: send, Cost: us(cost * T)})
	}
	return time.Duration(send-now) * time.Microsecond, nil
}

// settle applies a platform's answer at now: stated is the bucket as the
// platform stated it, delta the points spent beyond the booking, deficit
// the points missing from its bucket.
func (r *pointsRow) settle(stated Budget, delta, deficit float64, now int64) error {
	stated, err := sane(stated)
	if err != nil {
		return err
	}
	if math.IsNaN(delta) || math.IsInf(delta, 0) || math.IsNaN(deficit) || math.IsInf(deficit, 0) {
		return fmt.Errorf("points budget: correction must be finite, got %v and %v", delta, deficit)
	}
	stated = Budget{Rate: stated.Rate, Capacity: stated.Capacity}
	r.stated = stated
	T := perPointUs(stated)
	r.rebase(now, stated, T)
	r.due(now)
	before := r.tat
	deficit = min(max(deficit, 0), stated.Capacity) // a reading beyond the bucket is the bucket
	// Readings of concurrent queries arrive in any order, and a reading
	// may already include the refund of a query that settles after it: a
	// refund applied against the TAT alone would then count twice (an
	// 852-point query sent with 803 available, issue 23). So the newest
	// reading is kept as a floor of its own that no refund goes below.
	r.floor = max(r.floor, now+us(deficit*T))
	r.tat = max(max(r.tat, now)+us(delta*T), r.floor)
	// A settlement never moves the bucket further than empty now, plus
	// what was already sent.
	r.tat = min(r.tat, max(before, now+us(stated.Capacity*T)))
	return nil
}

// Memory books request slots and points budgets within one process, with
// the same arithmetic as the shared table: for library use and tests, and
// for workers without a shared database.
type Memory struct {
	mu     sync.Mutex
	tat    map[string]int64
	points map[string]*pointsRow
	now    func() time.Time
}

// NewMemory returns empty in-process books on the given clock (nil: time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{tat: map[string]int64{}, points: map[string]*pointsRow{}, now: now}
}

// Reserve implements Slots.
func (m *Memory) Reserve(_ context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error) {
	interval, tolerance, limit, err := params(rps, burst, maxWait)
	if err != nil {
		return 0, err
	}
	return m.reserve(key, interval, tolerance, limit)
}

func (m *Memory) row(key string) *pointsRow {
	r, ok := m.points[key]
	if !ok {
		r = &pointsRow{}
		m.points[key] = r
	}
	return r
}

// ReservePoints implements Points.
func (m *Memory) ReservePoints(_ context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.row(key).clone()
	d, err := r.reserve(b, cost, now, maxWait.Microseconds())
	if err == nil {
		*m.row(key) = r
	}
	return d, err
}

// SettlePoints implements Points.
func (m *Memory) SettlePoints(_ context.Context, key string, b Budget, delta, deficit float64) error {
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.row(key).clone()
	if err := r.settle(b, delta, deficit, now); err != nil {
		return err
	}
	*m.row(key) = r
	return nil
}

// reserve is the statement of sqliteReserve in Go.
func (m *Memory) reserve(key string, inc, tolerance, limit int64) (time.Duration, error) {
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[key]
	if ok && max(now, tat-tolerance)-now > limit {
		return 0, ErrNoSlot
	}
	tat = max(tat, now) + inc
	m.tat[key] = tat
	return wait(tat, now, inc, tolerance), nil
}

// Close implements Slots.
func (m *Memory) Close() error { return nil }
