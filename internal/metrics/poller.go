package metrics

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
)

// queryTimeout bounds one query: a cursor whose worker is gone would
// otherwise hold the poll loop until the SDK's own deadline.
const queryTimeout = 5 * time.Second

// Start polls once at once (so the first scrape has data), then every
// Interval until ctx is done. It returns a channel closed when the loop ends.
func (p *StatusPoller) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			p.PollOnce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return done
}

// PollOnce queries every platform once and stores what it learned. A failed
// query keeps the previous status (marked down), so a blip does not make
// the gauges drop to zero.
func (p *StatusPoller) PollOnce(ctx context.Context) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	for _, name := range p.Platforms {
		if ctx.Err() != nil {
			return
		}
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		st, err := p.Source.CursorStatus(qctx, name)
		cancel()
		p.mu.Lock()
		prev := p.snaps[name]
		p.mu.Unlock()
		s := snapshot{status: prev.status, polledAt: prev.polledAt, deadLetters: prev.deadLetters}
		if err == nil {
			s.status, s.statusOK, s.polledAt = st, true, now()
		} else if ctx.Err() == nil {
			p.logger().Debug("metrics: cursor status query failed", "platform", name, "error", err)
		}

		qctx, cancel = context.WithTimeout(ctx, queryTimeout)
		list, err := p.Source.DeadLetters(qctx, name)
		cancel()
		var notFound *serviceerror.NotFound
		switch {
		case err == nil:
			s.deadLetters = len(list)
		case errors.As(err, &notFound):
			// The dead-letter workflow starts with its first entry.
			s.deadLetters = 0
		case ctx.Err() == nil:
			p.logger().Debug("metrics: dead-letter list query failed", "platform", name, "error", err)
		}
		p.mu.Lock()
		if p.snaps == nil {
			p.snaps = map[string]snapshot{}
		}
		p.snaps[name] = s
		p.mu.Unlock()
	}
}

func (p *StatusPoller) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}
