package workflows

import (
	"time"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// status answers the status query and the updates: the operators' view,
// built from the state each time (it is never carried).
func (c *cursor) status() api.CursorStatus {
	w := c.wait()
	s := api.CursorStatus{
		Platform:   c.platform.Name,
		Kind:       c.platform.Kind,
		Start:      c.start,
		Watermark:  c.q.Watermark(),
		Next:       c.q.Next(),
		AsOf:       c.now,
		LagSeconds: c.now.Sub(c.q.Watermark()).Seconds(),
		Paused:     c.rec.Paused,
		Waiting:    w.reason,
		WaitUntil:  w.until,
		InFlight:   []api.SliceView{},
		Counts:     c.rec.Counts,
		LastError:  c.rec.LastError,
		Runs:       c.rec.Runs,
		Interval:   c.platform.Interval.String(),
		SliceSpan:  (time.Duration(c.q.Span()) * c.platform.Interval.D()).String(),
		TaskQueue:  c.platform.TaskQueue,
		Settings:   c.platform,

		ConsecutiveFailures: c.rec.ConsecutiveFailures,
		BreakerOpen:         c.rec.BreakerOpen,
		CaughtUp:            c.q.CaughtUp(),
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
