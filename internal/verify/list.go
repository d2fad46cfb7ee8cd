package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Range is the span of update times verify judges: [From, To).
type Range struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Contains says whether t lies in [From, To).
func (r Range) Contains(t time.Time) bool { return !t.Before(r.From) && t.Before(r.To) }

func (r Range) String() string {
	return "[" + r.From.UTC().Format(time.RFC3339) + ", " + r.To.UTC().Format(time.RFC3339) + ")"
}

// Pacer is the account's rate limit as the workers keep it
// (activities.Limiters): Wait books a request slot, Meter books query
// points of cost-metered platforms. With the store-backed slots every
// worker books from, verify and the fleet together stay inside the
// platform's limit.
type Pacer interface {
	Wait(ctx context.Context, p api.Settings) error
	Meter(p api.Settings) connectors.Meter
	Effective(p api.Settings) (float64, int)
	Report(platform string, rps float64)
}

var _ Pacer = (*activities.Limiters)(nil)

// Progress is how far a listing got.
type Progress struct {
	// Reached: every window before it is listed completely.
	Reached time.Time `json:"reached"`
	Windows int       `json:"windows"`
	Pages   int       `json:"pages"`
	// Requests counts ListOrders calls, each after booking a request slot.
	Requests int `json:"requests"`
	// Orders counts distinct orders listed in complete windows.
	Orders int `json:"orders"`
	// RateLimited counts the platform's rate-limit answers (429,
	// THROTTLED) waited out; SlotWaits the times the account's slots or
	// points were booked out for longer than one booking may wait.
	RateLimited int `json:"rate_limited"`
	SlotWaits   int `json:"slot_waits"`
	// Retries counts transient failures retried.
	Retries int `json:"retries"`
	// Pace is the request rate (per second) the slots were booked at last:
	// the platform's rate_limit, or the lower rate it stated.
	Pace float64 `json:"pace"`
}

// Lister lists a platform's orders for verify, one window at a time,
// paced like the workers' pages: a request slot before every request, the
// points meter on every cost-metered query, a wait (never a stop) at the
// platform's rate-limit answers, and a bounded retry with back-off of
// transient failures.
type Lister struct {
	Conn     connectors.Connector
	Settings api.Settings
	Pacer    Pacer
	// Lines keeps each version's lines where the platform lists them.
	Lines bool
	// OnPage, when set, is called after every page with the progress.
	OnPage func(Progress)
	// Sleep waits d or until ctx ends (nil: a real timer).
	Sleep func(ctx context.Context, d time.Duration) error
}

// MinRetries is the fewest retries verify gives a failing request: a
// platform configured with fewer (retries: 0 stops a worker's page at
// once and lets the dead-letter retry mend it) still gets a few, since
// verify has no dead-letter workflow behind it.
const MinRetries = 3

// Listed is what a listing found in Covered, the part of the asked range
// it listed completely (the whole range unless it stopped early).
type Listed struct {
	Expected []Expected
	Covered  Range
	Progress Progress
}

// List pages through r one window at a time (nextSpan), keeping each
// order's newest version. When it stops early (ctx ends, a permanent
// error, retries or the rate-limit wait run out) it returns the windows
// listed completely so far with the error; the orders of the window it was
// in are dropped, as pages need not come in update order.
func (l *Lister) List(ctx context.Context, r Range) (Listed, error) {
	span, maxSpan := l.Settings.Interval.D(), max(l.Settings.Interval.D(), l.Settings.BackfillMaxSpan.D())
	if span <= 0 {
		return Listed{Covered: Range{From: r.From, To: r.From}}, fmt.Errorf("verify %s: interval must be positive, got %s", l.Settings.Name, span)
	}
	latest := map[string]Expected{}
	prog := Progress{Reached: r.From}
	for from := r.From; from.Before(r.To); {
		to := from.Add(span)
		if to.After(r.To) {
			to = r.To
		}
		window := map[string]Expected{}
		token, pages := "", 0
		for page := 1; ; page++ {
			pg, err := l.page(ctx, connectors.PageRequest{From: from, To: to, Token: token, PageSize: l.Settings.PageSize, Page: page}, &prog)
			if err != nil {
				return l.listed(latest, r.From, prog), fmt.Errorf("list %s %s page %d: %w", l.Settings.Name, Range{from, to}, page, err)
			}
			prog.Pages++
			pages++
			for _, o := range pg.Orders {
				keepNewest(window, o, l.Lines)
			}
			if l.OnPage != nil {
				l.OnPage(prog)
			}
			if pg.NextToken == "" {
				break
			}
			token = pg.NextToken
		}
		for _, e := range window {
			if old, ok := latest[e.ID]; !ok || e.UpdatedAt.After(old.UpdatedAt) {
				latest[e.ID] = e
			}
		}
		prog.Windows++
		prog.Reached = to
		from = to
		span = nextSpan(span, pages, l.Settings.Interval.D(), maxSpan, l.Settings.MaxPages)
		prog.Orders = len(latest)
		if l.OnPage != nil {
			l.OnPage(prog)
		}
	}
	return l.listed(latest, r.From, prog), nil
}

// nextSpan sizes the next window as the workers size backfill slices
// (backfill_max_span): twice as long after a window that fit in one page,
// so sparse history costs few requests (on Amazon's plan each is
// minutes), half as long after one that took more than half of max_pages,
// between interval and backfill_max_span. Windows stay short enough for a
// useful progress line and an interrupted run's covered range.
func nextSpan(span time.Duration, pages int, interval, maxSpan time.Duration, maxPages int) time.Duration {
	switch {
	case pages <= 1:
		return min(span*2, maxSpan)
	case maxPages > 0 && pages > maxPages/2:
		return max(span/2, interval)
	}
	return span
}

func (l *Lister) listed(latest map[string]Expected, from time.Time, prog Progress) Listed {
	prog.Pace, _ = l.Pacer.Effective(l.Settings)
	return Listed{Expected: slices.Collect(maps.Values(latest)), Covered: Range{From: from, To: prog.Reached}, Progress: prog}
}

func keepNewest(m map[string]Expected, o connectors.Order, lines bool) {
	if e, ok := m[o.ID]; ok && !o.UpdatedAt.After(e.UpdatedAt) {
		return
	}
	e := Expected{ID: o.ID, UpdatedAt: o.UpdatedAt}
	if lines && o.HasLines {
		e.HasLines, e.Lines = true, o.Lines
	}
	m[o.ID] = e
}

// page sends one request as FetchPage does (activities/fetch.go): a slot
// from the account's shared rate, then ListOrders with the points meter.
// Waits are not attempts: a slot booked out, a 429 or THROTTLED is waited
// out (the rate-limit waits of one page at most rate_limit_wait, as a
// worker's page); transient failures are retried, at most
// max(retries, MinRetries) times, waiting retry_interval growing by
// retry_backoff up to max_retry_interval.
func (l *Lister) page(ctx context.Context, req connectors.PageRequest, prog *Progress) (connectors.Page, error) {
	s := l.Settings
	req.Meter = l.Pacer.Meter(s)
	retries := max(s.Retries, MinRetries)
	var limitedFor time.Duration
	for attempt := 1; ; {
		err := l.Pacer.Wait(ctx, s)
		var pg connectors.Page
		if err == nil {
			prog.Requests++
			pg, err = l.Conn.ListOrders(ctx, req)
		}
		if err == nil {
			l.Pacer.Report(s.Name, pg.RateLimit)
			return pg, nil
		}
		if ctx.Err() != nil {
			return pg, ctx.Err()
		}
		var slot *activities.SlotWaitError
		var rl *connectors.RateLimitError
		var perm *connectors.PermanentError
		var wait time.Duration
		switch {
		case errors.As(err, &slot):
			prog.SlotWaits++
			wait = slot.Delay
		case errors.As(err, &rl):
			prog.RateLimited++
			l.Pacer.Report(s.Name, rl.Limit)
			wait = rl.RetryAfter
			if wait <= 0 {
				rps, _ := l.Pacer.Effective(s)
				wait = spacing(rps)
			}
			if limitedFor += wait; limitedFor > s.RateLimitWaitOrDefault() {
				return pg, fmt.Errorf("still rate limited after waiting %s (rate_limit_wait %s): %w",
					limitedFor.Round(time.Second), s.RateLimitWaitOrDefault(), err)
			}
		case errors.As(err, &perm):
			return pg, err
		default:
			if attempt > retries {
				return pg, fmt.Errorf("%d attempts: %w", attempt, err)
			}
			prog.Retries++
			wait = backoff(s, attempt)
			attempt++
		}
		if err := l.sleep(ctx, wait); err != nil {
			return pg, err
		}
	}
}

// spacing is one request's spacing at rps, at least a second (a platform
// that stated no wait wants one), at most 5 minutes.
func spacing(rps float64) time.Duration {
	if rps <= 0 {
		return time.Minute
	}
	return min(max(time.Duration(float64(time.Second)/rps), time.Second), 5*time.Minute)
}

// backoff is the wait before retry n (1: the first): retry_interval times
// retry_backoff^(n-1), at most max_retry_interval when set.
func backoff(s api.Settings, n int) time.Duration {
	d := float64(s.RetryInterval.D()) * math.Pow(max(s.RetryBackoff, 1), float64(n-1))
	if m := s.MaxRetryInterval.D(); m > 0 {
		d = min(d, float64(m))
	}
	return time.Duration(min(d, float64(time.Hour)))
}

func (l *Lister) sleep(ctx context.Context, d time.Duration) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Clip keeps an error that may quote the platform short enough for a
// terminal line.
func Clip(err error) string { return textclip.Message(err.Error()) }
