package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
)

// Limiters pace each platform's requests. With Shared set (the worker sets
// it from the store's DSN) every request books a slot in the database all
// workers share, so the platform's rate holds across any number of worker
// processes without bursts (package quota). Without it, one token bucket
// per platform paces this process only, and the task queue's activity rate
// (see package worker) is what holds the workers together.
type Limiters struct {
	mu       sync.Mutex
	m        map[string]*rate.Limiter
	reported map[string]float64
	points   *quota.Memory // in-process points budgets, made on first use
	// Shared books request slots across processes; nil paces in-process.
	// When it implements quota.Points (the database's slots do), the
	// points budgets of cost-metered platforms are shared too.
	Shared quota.Slots
}

// NewLimiters returns an empty set.
func NewLimiters() *Limiters {
	return &Limiters{m: map[string]*rate.Limiter{}, reported: map[string]float64{}}
}

// slotMargin is kept free at the end of an attempt for the request itself:
// a slot booked so late that the request would time out is worse than a
// retry, which books a fresh one.
const slotMargin = 2 * time.Second

// Wait blocks until the platform may send one more request, following the
// platform's current rate_limit settings, lowered to what the platform
// itself last reported.
func (l *Limiters) Wait(ctx context.Context, p api.Settings) error {
	if l == nil {
		return nil
	}
	rps, burst := l.Effective(p)
	if l.Shared != nil {
		d, err := l.Shared.Reserve(ctx, p.Name, rps, burst, attemptWait(ctx))
		if errors.Is(err, quota.ErrNoSlot) {
			return &SlotWaitError{Platform: p.Name, What: fmt.Sprintf("a request slot (rate %v/s)", rps), Delay: slotRetryDelay(rps), Err: err}
		}
		if err != nil {
			return err
		}
		return sleep(ctx, d)
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*rate.Limiter{}
	}
	lim, ok := l.m[p.Name]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(rps), burst)
		l.m[p.Name] = lim
	} else if lim.Limit() != rate.Limit(rps) || lim.Burst() != burst {
		lim.SetLimit(rate.Limit(rps))
		lim.SetBurst(burst)
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if !r.OK() {
		return fmt.Errorf("rate limiter of %s: burst %d cannot hold one request", p.Name, burst)
	}
	d := r.Delay()
	if d > attemptWait(ctx) {
		r.Cancel()
		return &SlotWaitError{Platform: p.Name, What: fmt.Sprintf("a request slot (rate %v/s)", rps), Delay: d, Err: quota.ErrNoSlot}
	}
	return sleep(ctx, d)
}

// Effective is the rate and burst requests are paced at: the platform's
// settings, lowered to the limit the platform last reported in a response
// header (X-RateLimit-Limit and its kin), never raised above the settings.
func (l *Limiters) Effective(p api.Settings) (float64, int) {
	rps, burst := p.RateLimit.RPS, max(p.RateLimit.Burst, 1)
	if l == nil {
		return rps, burst
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.reported[p.Name]; r > 0 && r < rps {
		rps = r
	}
	return rps, burst
}

// Report records the request rate a platform announced (0: none), so the
// next requests follow a limit the platform lowered on its side.
func (l *Limiters) Report(platform string, rps float64) {
	if l == nil || rps <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reported == nil {
		l.reported = map[string]float64{}
	}
	l.reported[platform] = rps
}

// localSlotWait is the most a page's first attempt, a local activity, waits
// for its request slot. A local activity runs inside the slice's workflow
// task: a longer wait would hold that task (the SDK warns at 5 s), so the
// attempt hands the wait to the workflow as a durable timer instead.
const localSlotWait = 200 * time.Millisecond

// attemptWait is how long a booking may make the caller wait: until
// shortly before the attempt's deadline (an hour without one), and no more
// than localSlotWait in a local activity.
func attemptWait(ctx context.Context) time.Duration {
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
		return localSlotWait
	}
	if dl, ok := ctx.Deadline(); ok {
		return max(0, time.Until(dl)-slotMargin)
	}
	return time.Hour
}

// SlotWaitError says the platform's request rate (or points budget) is
// booked out for longer than this attempt may wait. It is waiting, not a
// failure: FetchPage reports it as ErrSlotWait, which the slice workflow
// waits out on a durable timer and which never counts as an attempt.
type SlotWaitError struct {
	Platform string
	What     string
	// Delay is when to ask again.
	Delay time.Duration
	// Err is the booking's own error (quota.ErrNoSlot), if any.
	Err error
}

func (e *SlotWaitError) Unwrap() error { return e.Err }

func (e *SlotWaitError) Error() string {
	return fmt.Sprintf("%s: no %s free within this attempt; ask again in %s", e.Platform, e.What, e.Delay.Round(time.Millisecond))
}

// slotRetryDelay is when to ask again for a slot at rps: one request's
// spacing, at least a second (the shared slots are booked through the
// database) and at most 5 minutes.
func slotRetryDelay(rps float64) time.Duration {
	if rps <= 0 {
		return time.Minute
	}
	return min(max(time.Duration(float64(time.Second)/rps), time.Second), 5*time.Minute)
}

// pointsRetryDelay is when to ask again for points the books refused: a
// little before the booking's turn (half the wait this attempt was
// allowed, which the next attempt may wait too), at least a second; one
// query's spacing at rps when the books gave no turn. Asking at one
// query's spacing instead made a 961-point page on a bucket restoring 50
// a second ask every 19 s when its turn was 3 s away.
func pointsRetryDelay(err error, rps float64, allowed time.Duration) time.Duration {
	var nr *quota.NoRoomError
	if !errors.As(err, &nr) {
		return slotRetryDelay(rps)
	}
	return min(max(nr.Wait-allowed/2, time.Second), 5*time.Minute)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Meter is the points meter of p's requests, for platforms that meter them
// by cost (Shopify's GraphQL Admin API; see connectors.Meter): their
// connectors book each query's cost on it. The budget is a row of its own
// ("points/<platform>"), apart from the platform's request slots, and is
// shared by every worker process when Shared books points; otherwise it
// paces this process only.
func (l *Limiters) Meter(p api.Settings) connectors.Meter {
	if l == nil {
		return nil
	}
	return pointsMeter{l: l, platform: p.Name}
}

type pointsMeter struct {
	l        *Limiters
	platform string
}

func (m pointsMeter) books() quota.Points {
	if pts, ok := m.l.Shared.(quota.Points); ok {
		return pts
	}
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.points == nil {
		m.l.points = quota.NewMemory(nil)
	}
	return m.l.points
}

func (m pointsMeter) key() string { return "points/" + m.platform }

// Book implements connectors.Meter: it books cost points and waits until
// they may be spent, within the attempt.
func (m pointsMeter) Book(ctx context.Context, b connectors.CostBudget, cost float64) error {
	allowed := attemptWait(ctx)
	d, err := m.books().ReservePoints(ctx, m.key(), quota.Budget(b), cost, allowed)
	if errors.Is(err, quota.ErrNoSlot) {
		what := fmt.Sprintf("%v query points (%v a second)", cost, b.Rate)
		var nr *quota.NoRoomError
		if errors.As(err, &nr) {
			// The cost and the bucket, for status and history.
			what = fmt.Sprintf("room for a query of %.0f points in the points bucket (%.0f points restoring %g a second, %.0f available; the booking waits %s)",
				nr.Cost, nr.Budget.Capacity, nr.Budget.Rate, nr.Available, nr.Wait.Round(time.Second))
		}
		return &SlotWaitError{Platform: m.platform, What: what, Delay: pointsRetryDelay(err, b.Rate/max(cost, 1), allowed), Err: err}
	}
	if err != nil {
		return err
	}
	return sleep(ctx, d)
}

// Settle implements connectors.Meter.
func (m pointsMeter) Settle(ctx context.Context, b connectors.CostBudget, delta, deficit float64) error {
	return m.books().SettlePoints(ctx, m.key(), quota.Budget(b), delta, deficit)
}
