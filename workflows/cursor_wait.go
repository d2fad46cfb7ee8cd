package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// computeWait says what the cursor waits for and returns when to wake up on
// its own (zero: only a signal or a finishing slice can move it on).
func (c *cursor) computeWait() time.Time {
	c.waiting, c.waitUntil = "", time.Time{}
	switch {
	case c.st.Paused && c.st.BreakerOpen:
		c.waiting = api.WaitBreaker
		return time.Time{}
	case c.st.Paused:
		c.waiting = api.WaitPaused
		return time.Time{}
	case c.draining:
		c.waiting = api.WaitDraining
		return c.lagAlertDue()
	case c.running() >= c.platform.Concurrency:
		c.waiting = api.WaitConcurrency
		return c.lagAlertDue()
	}
	open := c.windows.OpenAt(c.now)
	var wake time.Time
	earliest := func(t time.Time) {
		if t.After(c.now) && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	earliest(c.lagAlertDue())
	for _, list := range c.lists() {
		for _, r := range *list {
			if !r.Running && !r.Done && (open || r.Force) {
				earliest(r.NotBefore)
			}
		}
	}
	if !open {
		opens := c.windows.NextOpen(c.now)
		c.waiting, c.waitUntil = api.WaitWindow, opens
		earliest(opens)
		return wake
	}
	settled := c.st.Next.Add(c.platform.Interval.D() + c.platform.Settle.D())
	if settled.After(c.now) && (wake.IsZero() || !settled.After(wake)) {
		c.waiting, c.waitUntil = api.WaitSettling, settled
	}
	earliest(settled)
	return wake
}

// ensureTimer keeps one timer for the wanted wake-up time instead of a new
// timer per loop turn, which would fill history with started and cancelled
// timers.
func (c *cursor) ensureTimer(ctx workflow.Context, at time.Time) workflow.Future {
	if c.timer != nil && c.timerAt.Equal(at) {
		return c.timer
	}
	if c.cancelTimer != nil {
		c.cancelTimer()
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	c.timer = workflow.NewTimer(timerCtx, max(at.Sub(c.now), time.Millisecond))
	c.timerAt, c.cancelTimer = at, cancel
	return c.timer
}
