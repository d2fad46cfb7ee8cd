package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
)

// trackFailures runs the circuit breaker: after breaker_failures failed
// slices in a row the platform is probably down or refusing us, so the
// cursor pauses itself instead of dead-lettering slice after slice.
func (c *cursor) trackFailures(ctx workflow.Context, res api.SliceResult) {
	switch res.Outcome {
	case api.SliceCompleted:
		c.rec.ConsecutiveFailures = 0
	case api.SliceFailed:
		c.rec.ConsecutiveFailures++
		n := c.platform.BreakerFailures
		if n <= 0 || c.rec.ConsecutiveFailures < n || c.rec.BreakerOpen {
			return
		}
		c.rec.BreakerOpen = true
		c.rec.Paused = true
		c.rec.PauseReason = fmt.Sprintf("%d failed slices in a row (last: %s); resume to close it",
			c.rec.ConsecutiveFailures, textclip.Value(res.Error))
		c.alert(ctx, api.Alert{
			Kind:     api.AlertBreakerOpen,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s: circuit breaker open, cursor paused: %s", c.platform.Name, c.rec.PauseReason),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertBreakerOpen, c.platform.Name, c.now.UnixMilli()),
		})
	}
}

// closeBreaker is part of resume.
func (c *cursor) closeBreaker() {
	c.rec.BreakerOpen = false
	c.rec.ConsecutiveFailures = 0
}

// checkLag alerts once when the watermark falls more than lag_alert behind
// now after the cursor has caught up, and re-arms when the lag recovers.
func (c *cursor) checkLag(ctx workflow.Context) {
	limit := c.platform.LagAlert.D()
	if limit <= 0 || !c.q.CaughtUp() || c.rec.Paused {
		return // a paused cursor is behind on purpose
	}
	lag := c.now.Sub(c.q.Watermark())
	switch {
	case lag > limit && !c.rec.LagAlerted:
		c.rec.LagAlerted = true
		c.alert(ctx, api.Alert{
			Kind:     api.AlertLag,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s is %s behind (lag_alert %s); watermark %s", c.platform.Name, lag.Round(time.Second), limit, c.q.Watermark().Format(time.RFC3339)),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertLag, c.platform.Name, c.q.Watermark().UnixMilli()),
		})
	case lag <= limit:
		c.rec.LagAlerted = false
	}
}

// lagAlertDue is when the lag will cross lag_alert if nothing moves, so the
// cursor wakes to alert even while it only waits on a stuck slice.
func (c *cursor) lagAlertDue() time.Time {
	if c.platform.LagAlert <= 0 || !c.q.CaughtUp() || c.rec.LagAlerted || c.rec.Paused {
		return time.Time{}
	}
	return c.q.Watermark().Add(c.platform.LagAlert.D() + time.Millisecond)
}

// checkStall alerts once when slices are in flight and none has reported
// for stall_alert: the cursor makes no progress, whatever it waits for (a
// pacing livelock, pages that wait for a bucket forever, a platform that
// never answers usably). Time with nothing in flight, or paused, is not
// stalling: it moves ProgressAt along (idleIsProgress). Runs before
// versionStallAlert keep no such state, so they carry what they carried.
func (c *cursor) checkStall(ctx workflow.Context) {
	if c.rec.Paused || c.running() == 0 {
		return
	}
	limit := c.platform.StallAlertOrDefault()
	if !c.stallAlert || c.rec.StallAlerted || c.now.Sub(c.rec.ProgressAt) <= limit {
		return
	}
	c.rec.StallAlerted = true
	c.alert(ctx, api.Alert{
		Kind:     api.AlertStalled,
		Platform: c.platform.Name,
		Message: textclip.Message(fmt.Sprintf("%s has made no progress for %s: %d slice(s) in flight, none reported (stall_alert %s); waiting: %s; watermark %s; last error: %s",
			c.platform.Name, c.now.Sub(c.rec.ProgressAt).Round(time.Second), c.running(), limit, c.wait().reason,
			c.q.Watermark().Format(time.RFC3339), c.rec.LastError)),
		At:  c.now,
		Key: fmt.Sprintf("%s/%s/%d", api.AlertStalled, c.platform.Name, c.rec.ProgressAt.UnixMilli()),
	})
}

// idleIsProgress moves ProgressAt to now while nothing is in flight or the
// cursor is paused: waiting for time, or for an operator, is not stalling.
func (c *cursor) idleIsProgress() {
	if c.stallAlert && (c.rec.Paused || c.running() == 0) {
		c.rec.ProgressAt, c.rec.StallAlerted = c.now, false
	}
}

// stallAlertDue is when the stall alert fires if no slice reports, so the
// cursor wakes for it while it only waits on its slices.
func (c *cursor) stallAlertDue() time.Time {
	if !c.stallAlert || c.rec.StallAlerted || c.rec.Paused || c.running() == 0 {
		return time.Time{}
	}
	return c.rec.ProgressAt.Add(c.platform.StallAlertOrDefault() + time.Millisecond)
}

// alertDue is the earlier of the lag and stall alerts' due times (zero
// when neither is due).
func (c *cursor) alertDue() time.Time {
	lag, stall := c.lagAlertDue(), c.stallAlertDue()
	if lag.IsZero() || (!stall.IsZero() && stall.Before(lag)) {
		return stall
	}
	return lag
}

// alert sends an alert without blocking the loop; continue-as-new hands
// the alerts still in flight to the next run, so none is lost (alerts.go).
func (c *cursor) alert(ctx workflow.Context, a api.Alert) {
	c.alerts.send(ctx, bookkeepingActivityContext(ctx, c.platform), a, c.alertDone)
}

// alertDone wakes the loop: a draining run may wait for the alert.
func (c *cursor) alertDone() { c.wake.SendAsync(true) }
