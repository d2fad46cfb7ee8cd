package quota

import (
	"context"
	"fmt"
	"math"
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

// Budget is a leaky bucket of points: at most Capacity, restored at Rate
// points a second.
type Budget struct {
	Rate     float64
	Capacity float64
}

// Points books cost-metered budgets. The SQLite and PostgreSQL slots
// implement it on the same table as the request slots (each budget is a
// row of its own key); NewMemory implements it within one process.
type Points interface {
	// ReservePoints books cost points of key's budget and returns how long
	// to wait before sending the request. When that would be longer than
	// maxWait nothing is booked and ErrNoSlot is returned.
	ReservePoints(ctx context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error)
	// SettlePoints corrects key's budget once the platform answered: delta
	// more points spent (negative: refunded), and at least deficit points
	// missing from the bucket as of now (the platform's own reading). It
	// never waits.
	SettlePoints(ctx context.Context, key string, b Budget, delta, deficit float64) error
}

// pointParams turns a budget and a cost into the algorithm's integers (µs):
// the TAT increment, the tolerance and the longest wait allowed. The 5%
// jitter allowance applies as it does to request slots.
func pointParams(b Budget, cost float64, maxWait time.Duration) (inc, tolerance, limit int64, err error) {
	perPoint, err := pointInterval(b)
	if err != nil {
		return 0, 0, 0, err
	}
	switch {
	case cost < 0 || math.IsNaN(cost) || math.IsInf(cost, 0):
		return 0, 0, 0, fmt.Errorf("points budget: cost must be a non-negative number, got %v", cost)
	case cost > b.Capacity:
		return 0, 0, 0, fmt.Errorf("points budget: a request of cost %v can never fit a bucket of %v points", cost, b.Capacity)
	}
	inc = int64(math.Round(cost * perPoint))
	tolerance = int64(math.Round((b.Capacity - cost) * perPoint))
	return inc, tolerance, max(0, maxWait.Microseconds()), nil
}

// pointInterval is T, the µs one point takes to restore, widened by the
// jitter allowance.
func pointInterval(b Budget) (float64, error) {
	if b.Rate <= 0 || math.IsNaN(b.Rate) || math.IsInf(b.Rate, 0) {
		return 0, fmt.Errorf("points budget: rate must be positive, got %v", b.Rate)
	}
	if b.Capacity <= 0 || math.IsNaN(b.Capacity) || math.IsInf(b.Capacity, 0) {
		return 0, fmt.Errorf("points budget: capacity must be positive, got %v", b.Capacity)
	}
	return 1e6 * (1 + JitterAllowance) / b.Rate, nil
}

// settleParams turns a correction into µs: the TAT moves by delta, and to
// at least now + deficit.
func settleParams(b Budget, delta, deficit float64) (deltaUs, deficitUs int64, err error) {
	perPoint, err := pointInterval(b)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(delta) || math.IsInf(delta, 0) || math.IsNaN(deficit) || math.IsInf(deficit, 0) {
		return 0, 0, fmt.Errorf("points budget: correction must be finite, got %v and %v", delta, deficit)
	}
	deficit = min(max(deficit, 0), b.Capacity) // a reading beyond the bucket is the bucket
	return int64(math.Round(delta * perPoint)), int64(math.Round(deficit * perPoint)), nil
}

// Memory books request slots and points budgets within one process, with
// the same arithmetic as the shared table: for library use and tests, and
// for workers without a shared database.
type Memory struct {
	mu  sync.Mutex
	tat map[string]int64
	now func() time.Time
}

// NewMemory returns empty in-process books on the given clock (nil: time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{tat: map[string]int64{}, now: now}
}

// Reserve implements Slots.
func (m *Memory) Reserve(_ context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error) {
	interval, tolerance, limit, err := params(rps, burst, maxWait)
	if err != nil {
		return 0, err
	}
	return m.reserve(key, interval, tolerance, limit)
}

// ReservePoints implements Points.
func (m *Memory) ReservePoints(_ context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	inc, tolerance, limit, err := pointParams(b, cost, maxWait)
	if err != nil {
		return 0, err
	}
	return m.reserve(key, inc, tolerance, limit)
}

// SettlePoints implements Points.
func (m *Memory) SettlePoints(_ context.Context, key string, b Budget, delta, deficit float64) error {
	d, floor, err := settleParams(b, delta, deficit)
	if err != nil {
		return err
	}
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tat[key] = max(max(m.tat[key], now)+d, now+floor)
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
