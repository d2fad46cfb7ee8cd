package metrics

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"golang.org/x/time/rate"
)

// queryTimeout bounds one query: a cursor whose worker is gone would
// otherwise hold the poll loop until the SDK's own deadline.
const queryTimeout = 5 * time.Second

// Query names and results of ordersync_status_queries_total.
const (
	queryCursorStatus = "cursor_status"
	queryDeadLetters  = "dead_letters"
	resultOK          = "ok"
	resultError       = "error"
)

// Start polls once at once (so the first scrape has data), then starts a
// pass every Interval, or as soon as the last one ended when it took longer
// (its queries are paced by QueryRate), until ctx is done. It returns a
// channel closed when the loop ends.
func (p *StatusPoller) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	go func() {
		defer close(done)
		for {
			started := p.now()
			p.PollOnce(ctx)
			if p.sleep(ctx, interval-p.now().Sub(started)) != nil {
				return
			}
		}
	}()
	return done
}

// PollOnce queries every platform once, within the query budget, and
// stores what it learned. A failed query keeps the previous status (marked
// down), so a blip does not make the gauges drop to zero.
func (p *StatusPoller) PollOnce(ctx context.Context) {
	started := p.now()
	p.mu.Lock()
	p.passes++
	pass := p.passes
	p.mu.Unlock()
	names := p.names(ctx)
	for _, name := range names {
		p.mu.Lock()
		s := p.snaps[name]
		p.mu.Unlock()
		if p.pace(ctx) != nil {
			return
		}
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		st, err := p.Source.CursorStatus(qctx, name)
		cancel()
		p.count(queryCursorStatus, err)
		s.statusOK = err == nil
		if err == nil {
			s.status, s.polledAt = st, p.now()
		} else if ctx.Err() == nil {
			p.logger().Debug("metrics: cursor status query failed", "platform", name, "error", err)
		}
		if p.deadLettersDue(s, pass) && p.pace(ctx) == nil {
			p.readDeadLetters(ctx, name, &s, pass)
		}
		p.mu.Lock()
		if p.snaps == nil {
			p.snaps = map[string]snapshot{}
		}
		p.snaps[name] = s
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
	p.mu.Lock()
	p.lastPass = max(p.now().Sub(started), time.Nanosecond) // 0 means "no pass yet"
	p.mu.Unlock()
}

// names lists this pass's platforms. With List, a platform no longer
// listed loses its snapshot, so a removed account (or one paused in the
// registry) leaves the gauges.
func (p *StatusPoller) names(ctx context.Context) []string {
	if p.List == nil {
		return p.Platforms
	}
	listing, err := p.List(ctx)
	names := listing.Names
	if err != nil {
		p.logger().Warn("metrics: listing the registered platforms failed; polling the last list", "error", err)
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.Platforms
	}
	keep := make(map[string]bool, len(names))
	for _, n := range names {
		keep[n] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Platforms, p.paused = names, listing.Paused
	for n := range p.snaps {
		if !keep[n] {
			delete(p.snaps, n)
		}
	}
	return names
}

// deadLettersDue says whether this pass must read the platform's dead-letter
// count, given its snapshot with this pass's status in it. Entries arrive
// only with a failed slice, which the cursor counts after the entry was
// recorded; they leave (discard, reprocess) and multiply (a reprocessed
// slice split) without the cursor, which the periodic re-read catches.
func (p *StatusPoller) deadLettersDue(s snapshot, pass int64) bool {
	switch {
	case s.deadLettersAt.IsZero() || s.deadLettersStale:
		return true // never read, or the last read failed
	case s.statusOK && (!s.failedKnown || s.status.Counts.SlicesFailed != s.failedAt):
		return true // a failure since the last read, or unknown whether there was one
	}
	refresh := p.DeadLetterRefresh
	if refresh <= 0 {
		refresh = DefaultDeadLetterRefresh
	}
	return p.now().Sub(s.deadLettersAt) >= refresh && pass-s.deadLetterPass >= deadLetterRefreshPasses
}

// readDeadLetters queries the dead-letter count into s.
func (p *StatusPoller) readDeadLetters(ctx context.Context, name string, s *snapshot, pass int64) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	n, err := p.Source.DeadLetterCount(qctx, name)
	cancel()
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// The dead-letter workflow starts with its first entry.
		n, err = 0, nil
	}
	p.count(queryDeadLetters, err)
	if err != nil {
		s.deadLettersStale = true
		if ctx.Err() == nil {
			p.logger().Debug("metrics: dead-letter query failed", "platform", name, "error", err)
		}
		return
	}
	s.deadLetters, s.deadLettersAt, s.deadLettersStale, s.deadLetterPass = n, p.now(), false, pass
	s.failedAt, s.failedKnown = s.status.Counts.SlicesFailed, s.statusOK
}

// pace waits for the next query's turn within QueryRate. The limiter holds
// one token: queries are spaced 1/QueryRate apart, never in bursts.
func (p *StatusPoller) pace(ctx context.Context) error {
	p.limiterOnce.Do(func() {
		r := p.QueryRate
		if r <= 0 {
			r = DefaultQueryRate
		}
		p.limiter = rate.NewLimiter(rate.Limit(r), 1)
	})
	now := p.now()
	return p.sleep(ctx, p.limiter.ReserveN(now, 1).DelayFrom(now))
}

func (p *StatusPoller) count(query string, err error) {
	result := resultOK
	if err != nil {
		result = resultError
	}
	p.mu.Lock()
	if p.queries == nil {
		p.queries = map[queryKey]int64{}
	}
	p.queries[queryKey{query, result}]++
	p.mu.Unlock()
}

func (p *StatusPoller) now() time.Time { return clockNow(p.Now) }

func (p *StatusPoller) sleep(ctx context.Context, d time.Duration) error {
	return clockSleep(ctx, p.Sleep, d)
}

func (p *StatusPoller) logger() *slog.Logger { return loggerOr(p.Logger) }

// clockNow is a poller's Now, time.Now when unset.
func clockNow(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

// clockSleep is a poller's Sleep, when unset a timer: it waits d (nothing
// when d <= 0) and returns ctx's error if it ended.
func clockSleep(ctx context.Context, sleep func(context.Context, time.Duration) error, d time.Duration) error {
	if sleep != nil {
		return sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// loggerOr is a poller's Logger, slog.Default when unset.
func loggerOr(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
