package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// scheduleResweep queues a second fetch of a regular slice's window once the
// window is resweep_delay old, unless the first fetch already started that
// late (backfill slices of old history need no second look). A window whose
// due time has passed meanwhile is swept at once.
func (c *cursor) scheduleResweep(ctx workflow.Context, ref api.SliceRef) {
	delay := c.platform.ResweepDelay.D()
	if delay <= 0 {
		return
	}
	due := ref.End.Add(delay)
	firstFetch := c.now
	if workflow.GetVersion(ctx, resweepFromFetchStart, workflow.DefaultVersion, 1) >= 1 && !ref.StartedAt.IsZero() {
		firstFetch = ref.StartedAt
	}
	if !due.After(firstFetch) {
		return
	}
	c.st.Resweep = append(c.st.Resweep, api.SliceRef{
		ID: ref.ID, Start: ref.Start, End: ref.End, NotBefore: due, Resweep: true,
	})
}

// trackFailures runs the circuit breaker: after breaker_failures failed
// slices in a row the platform is probably down or refusing us, so the
// cursor pauses itself instead of dead-lettering slice after slice.
func (c *cursor) trackFailures(ctx workflow.Context, res api.SliceResult) {
	switch res.Outcome {
	case api.SliceCompleted:
		c.st.ConsecutiveFailures = 0
	case api.SliceFailed:
		c.st.ConsecutiveFailures++
		n := c.platform.BreakerFailures
		if n <= 0 || c.st.ConsecutiveFailures < n || c.st.BreakerOpen {
			return
		}
		c.st.BreakerOpen = true
		c.st.Paused = true
		c.st.PauseReason = fmt.Sprintf("%d failed slices in a row (last: %s); resume to close it",
			c.st.ConsecutiveFailures, res.Error)
		c.alert(ctx, api.Alert{
			Kind:     api.AlertBreakerOpen,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s: circuit breaker open, cursor paused: %s", c.platform.Name, c.st.PauseReason),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertBreakerOpen, c.platform.Name, c.now.UnixMilli()),
		})
	}
}

// closeBreaker is part of resume.
func (c *cursor) closeBreaker() {
	c.st.BreakerOpen = false
	c.st.ConsecutiveFailures = 0
}

// checkLag alerts once when the watermark falls more than lag_alert behind
// now after the cursor has caught up, and re-arms when the lag recovers.
func (c *cursor) checkLag(ctx workflow.Context) {
	limit := c.platform.LagAlert.D()
	if limit <= 0 || !c.st.CaughtUp || c.st.Paused {
		return // a paused cursor is behind on purpose
	}
	lag := c.now.Sub(c.watermark())
	switch {
	case lag > limit && !c.st.LagAlerted:
		c.st.LagAlerted = true
		c.alert(ctx, api.Alert{
			Kind:     api.AlertLag,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s is %s behind (lag_alert %s); watermark %s", c.platform.Name, lag.Round(time.Second), limit, c.watermark().Format(time.RFC3339)),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertLag, c.platform.Name, c.watermark().UnixMilli()),
		})
	case lag <= limit:
		c.st.LagAlerted = false
	}
}

// lagAlertDue is when the lag will cross lag_alert if nothing moves, so the
// cursor wakes to alert even while it only waits on a stuck slice.
func (c *cursor) lagAlertDue() time.Time {
	if c.platform.LagAlert <= 0 || !c.st.CaughtUp || c.st.LagAlerted || c.st.Paused {
		return time.Time{}
	}
	return c.watermark().Add(c.platform.LagAlert.D() + time.Millisecond)
}

// alert sends an alert without blocking the loop; continue-as-new waits for
// alerts in flight so none is lost.
func (c *cursor) alert(ctx workflow.Context, a api.Alert) {
	c.alerts++
	f := workflow.ExecuteActivity(bookkeepingActivityContext(ctx, c.platform), acts.SendAlert, a)
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.alerts--; c.poke() }()
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("alert not delivered", "key", a.Key, "error", err)
		}
	})
}
