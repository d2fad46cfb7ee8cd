package activities

import (
	"context"
	"sync"

	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync/config"
)

// Limiters hold one token bucket per platform in this process. The limit
// across all workers is enforced by the task queue's activity rate (see the
// worker package); this bucket smooths bursts inside one process.
type Limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// NewLimiters returns an empty set.
func NewLimiters() *Limiters { return &Limiters{m: map[string]*rate.Limiter{}} }

// Wait blocks until the platform may send one more request, following the
// platform's current rate_limit settings.
func (l *Limiters) Wait(ctx context.Context, p config.Platform) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	lim, ok := l.m[p.Name]
	limit := rate.Limit(p.RateLimit.RPS)
	if !ok {
		lim = rate.NewLimiter(limit, max(p.RateLimit.Burst, 1))
		l.m[p.Name] = lim
	} else if lim.Limit() != limit || lim.Burst() != p.RateLimit.Burst {
		lim.SetLimit(limit)
		lim.SetBurst(max(p.RateLimit.Burst, 1))
	}
	l.mu.Unlock()
	return lim.Wait(ctx)
}
