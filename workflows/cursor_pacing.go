package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Hybrid pacing. A platform with webhook_interval polls that rarely while
// its webhooks are live (serve accepted an event within LiveFor: the fast
// path brings changes in seconds, polling only keeps the no-loss
// guarantee), else every interval. The grid stays interval's: while live,
// the next regular slice waits until webhook_interval / interval grid
// intervals have settled and fetches them as one slice
// (slicequeue.Rules.Batch), so switching never moves a slice boundary.
//
// The decision is made once per regular slice, when its first interval
// has settled (the moment normal pacing would start it), by asking the
// store (activity WebhookActivity, a local activity: a time and a count).
// Live: hold until the batch settles. Not live, or the store cannot say:
// start it now, as without webhooks. So a fast path that dies is noticed
// at the next decision, at most one webhook_interval later, and the
// cursor polls at interval again by itself. Nothing here runs, and no
// activity is asked, for a platform without webhook_interval; the rule is
// versioned (versionHybridPacing), asked only when a decision is due.
type pacing struct {
	// off: this run replays a history from before versionHybridPacing.
	off bool
	// decidedFor is the Next the decision is for and span the batch it
	// was made with; a new Next (a slice started) or setting asks again.
	decidedFor time.Time
	span       int
	live       bool
	checked    bool
	checkedAt  time.Time
	seen       api.WebhookActivity
	// failure is why the store could not say (clipped); not live then.
	failure string
}

// pace decides, before the loop starts slices, whether the next regular
// slice waits for webhook_interval, and sets the queue's batch by it.
func (c *cursor) pace(ctx workflow.Context) {
	span := c.platform.WebhookSpan()
	want := 1
	switch {
	case span <= 1 || c.pacing.off:
	case c.pacing.decidedFor.Equal(c.q.Next()) && c.pacing.span == span:
		if c.pacing.live {
			want = span
		}
	case c.decisionDue(span):
		if workflow.GetVersion(ctx, versionHybridPacing, workflow.DefaultVersion, 1) < 1 {
			c.pacing.off = true
			break
		}
		c.checkWebhooks(ctx, span)
		if c.pacing.live {
			want = span
		}
	}
	if want != max(c.batch, 1) {
		c.batch = want
		c.q.SetRules(c.rules())
	}
}

// paceMoved drops a batch whose decision was for a Next that launch has
// since moved: the loop then wakes when the new Next's first interval
// settles, and decides again, even while the slice it just started runs.
func (c *cursor) paceMoved() {
	if c.batch > 1 && !c.pacing.decidedFor.Equal(c.q.Next()) {
		c.batch = 1
		c.q.SetRules(c.rules())
	}
}

// decisionDue says whether the next regular slice's pacing matters now:
// its first interval has settled, the whole batch has not (a cursor far
// behind fetches what settled without asking), and the cursor may start
// it (not paused or draining, inside a work window).
func (c *cursor) decisionDue(span int) bool {
	if c.rec.Paused || c.draining || !c.windows.OpenAt(c.now) {
		return false
	}
	return !c.q.BatchSettles(1).After(c.now) && c.q.BatchSettles(span).After(c.now)
}

// checkWebhooks asks the store for the platform's last accepted webhook
// event and decides liveness by it. An answer that does not come counts as
// not live: polling at interval is always safe.
func (c *cursor) checkWebhooks(ctx workflow.Context, span int) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	var seen api.WebhookActivity
	err := workflow.ExecuteLocalActivity(lctx, acts.WebhookActivity, c.platform.Name).Get(ctx, &seen)
	c.now = workflow.Now(ctx)
	c.pacing.decidedFor, c.pacing.span = c.q.Next(), span
	c.pacing.checked, c.pacing.checkedAt, c.pacing.failure = true, c.now, ""
	if err != nil {
		c.pacing.live, c.pacing.seen = false, api.WebhookActivity{}
		c.pacing.failure = textclip.Message(err.Error())
		workflow.GetLogger(ctx).Warn("webhook activity unreadable; polling at interval", "error", err)
		return
	}
	c.pacing.seen = seen
	c.pacing.live = seen.Events > 0 && !seen.LastEventAt.IsZero() &&
		c.now.Sub(seen.LastEventAt) <= c.platform.LiveFor()
}

// pacingStatus says which interval is in force and why; nil for a
// platform without webhook_interval.
func (c *cursor) pacingStatus() *api.Pacing {
	if c.platform.WebhookInterval <= 0 {
		return nil
	}
	p := &api.Pacing{Interval: c.platform.Interval.String(), LiveFor: c.platform.LiveFor().String(),
		LastEventAt: c.pacing.seen.LastEventAt, Events: c.pacing.seen.Events, CheckedAt: c.pacing.checkedAt}
	last := "no event accepted yet"
	if !p.LastEventAt.IsZero() {
		last = "last event " + p.LastEventAt.UTC().Format(time.RFC3339)
	}
	switch {
	case c.platform.WebhookSpan() <= 1:
		p.Reason = "webhook_interval is not longer than interval"
	case c.pacing.off:
		p.Reason = "hybrid pacing applies from the cursor's next run"
	case !c.pacing.checked:
		p.Reason = "webhooks not checked yet (checked when the next slice settles)"
	case c.pacing.failure != "":
		p.Reason = "webhook activity unreadable, polling at interval: " + c.pacing.failure
	case c.pacing.live:
		p.Live = true
		p.Interval = c.platform.WebhookInterval.String()
		p.Reason = fmt.Sprintf("webhooks live: %s, within %s", last, p.LiveFor)
	case p.LastEventAt.IsZero():
		p.Reason = "webhooks not live: " + last
	default:
		p.Reason = fmt.Sprintf("webhooks not live since %s: %s", p.LastEventAt.Add(c.platform.LiveFor()).UTC().Format(time.RFC3339), last)
	}
	return p
}
