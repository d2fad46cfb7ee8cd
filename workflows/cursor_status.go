package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// kindWhy says in a slice child's details what its kind is for.
var kindWhy = map[slicequeue.Kind]string{
	slicequeue.Regular:   "Part of the cursor's walk through time: the watermark passes it once it completed or its failure is recorded in the dead-letter workflow.",
	slicequeue.Reprocess: "Fetched again on an operator's request (reprocess); it does not move the watermark.",
	slicequeue.Resweep:   "A second fetch of a closed window, resweep_delay after it, for orders the platform showed late; it does not move the watermark.",
}

// publish shows the cursor's state in the Web UI when it changed: the
// PlatformState search attribute, so the workflow list filters by it, and
// the current details on the workflow's page. The details cost no history
// (details.go) but are rebuilt only when something besides the lag
// changed; the upsert is an event, made only when the state changes.
func (c *cursor) publish(ctx workflow.Context) {
	if st := c.platformState(); st != c.shownState &&
		workflow.GetVersion(ctx, versionPlatformState, workflow.DefaultVersion, 1) >= 1 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.PlatformState.ValueSet(st)); err != nil {
			workflow.GetLogger(ctx).Warn("could not set PlatformState", "error", err)
		}
		c.shownState = st
	}
	s := c.status()
	undated := s
	undated.AsOf, undated.LagSeconds = time.Time{}, 0
	if key := c.details(undated); key != c.shownDetails {
		c.shownDetails = key
		workflow.SetCurrentDetails(ctx, c.details(s))
	}
}

// status answers the status query and the updates: the operators' view,
// built from the state each time (it is never carried).
func (c *cursor) status() api.CursorStatus {
	w := c.wait()
	s := api.CursorStatus{
		Platform:      c.platform.Name,
		Kind:          c.platform.Kind,
		Start:         c.start,
		Watermark:     c.q.Watermark(),
		Next:          c.q.Next(),
		AsOf:          c.now,
		LagSeconds:    c.now.Sub(c.q.Watermark()).Seconds(),
		Paused:        c.rec.Paused,
		PlatformState: c.platformState(),
		Waiting:       w.reason,
		WaitUntil:     w.until,
		InFlight:      []api.SliceView{},
		Counts:        c.rec.Counts,
		LastError:     c.rec.LastError,
		StatedRate:    c.rec.StatedRate,
		Runs:          c.rec.Runs,
		Interval:      c.platform.Interval.String(),
		SliceSpan:     (time.Duration(c.q.Span()) * c.platform.Interval.D()).String(),
		TaskQueue:     c.platform.TaskQueue,
		Settings:      c.platform,

		ConsecutiveFailures: c.rec.ConsecutiveFailures,
		BreakerOpen:         c.rec.BreakerOpen,
		CaughtUp:            c.q.CaughtUp(),
		AlertsPending:       c.alerts.pending(),
		AlertsDropped:       c.alerts.dropped,
		Pacing:              c.pacingStatus(),
	}
	for _, sl := range c.q.Slices() {
		switch sl.State {
		case slicequeue.Running:
			s.InFlight = append(s.InFlight, c.view(sl))
		case slicequeue.Queued:
			s.Queued = append(s.Queued, c.view(sl))
		}
	}
	return s
}

func (c *cursor) view(s slicequeue.Slice) api.SliceView {
	v := api.SliceView{ID: s.ID, Start: s.Start, End: s.End, Kind: s.Kind.String(), State: api.SliceQueued,
		NotBefore: s.Due, Force: s.Force, Resweep: s.Sweep, StartedAt: s.StartedAt}
	switch {
	case s.State == slicequeue.Running:
		v.State = api.SliceRunning
	case s.WaitingAt(c.now):
		v.State = api.SliceWaiting
	}
	return v
}
