package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// waiting is why the cursor starts no more slices now.
type waiting struct {
	// reason is one of the api.Wait reasons, never empty.
	reason string
	// until is when the reason ends, where that is known.
	until time.Time
	// wake is when the loop must wake by itself (zero: only a message or a
	// finishing slice can move it on): the earliest of the lag and stall alerts, a
	// queued slice's due time, a work window opening and the next slice
	// settling.
	wake time.Time
}

// wait says why the cursor waits and when it wakes. The loop sets its
// timer by it and status reports it, so the two always agree.
func (c *cursor) wait() waiting {
	switch {
	case c.rec.Paused && c.rec.BreakerOpen:
		return waiting{reason: api.WaitBreaker + c.pauseReason()}
	case c.rec.Paused:
		return waiting{reason: api.WaitPaused + c.pauseReason()}
	case c.draining:
		return waiting{reason: api.WaitDraining, wake: c.alertDue()}
	case c.running() >= c.platform.Concurrency:
		return waiting{reason: api.WaitConcurrency, wake: c.alertDue()}
	}
	var w waiting
	earliest := func(t time.Time) {
		if t.After(c.now) && (w.wake.IsZero() || t.Before(w.wake)) {
			w.wake = t
		}
	}
	earliest(c.alertDue())
	open := c.windows.OpenAt(c.now)
	due, hasDue := c.q.NextDue(c.now, open)
	if hasDue {
		earliest(due.Due)
	}
	if !open {
		opens := c.windows.NextOpen(c.now)
		w.reason, w.until = api.WaitWindow, opens
		earliest(opens)
		return w
	}
	settled := c.q.NextSettles()
	earliest(settled)
	switch {
	case settled.After(c.now) && (!hasDue || !due.Due.Before(settled)):
		w.reason, w.until = api.WaitSettling, settled
	case hasDue && due.Kind == slicequeue.Resweep && due.Sweep:
		w.reason, w.until = api.WaitResweep, due.Due
	case hasDue:
		w.reason, w.until = api.WaitRetry, due.Due
	default:
		// Room and a settled slice: the loop starts it on its next turn.
		w.reason = api.WaitStarting
	}
	return w
}

func (c *cursor) pauseReason() string {
	if c.rec.PauseReason == "" {
		return ""
	}
	return ": " + c.rec.PauseReason
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
