package workflows

import (
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// The state a cursor carries across continue-as-new (api.CursorState):
// its record, and its slices in two forms. Today's form is the queue's
// Snapshot; the v0.1 form is three lists of flagged SliceRefs. A run that
// continued as new under v0.1 carries only the v0.1 form, which is read
// when the snapshot is absent; and the v0.1 form is written beside the
// snapshot, so that a v0.1 worker picking up the next run during a rolling
// upgrade finds its slices (it ignores the field it does not know).

// carriedSlices reads the slices of a carried state.
func carriedSlices(st api.CursorState) slicequeue.Snapshot {
	if st.Slices != nil {
		return *st.Slices
	}
	snap := slicequeue.Snapshot{Next: st.Next, Span: st.SpanIntervals, CaughtUp: st.CaughtUp}
	for _, list := range []struct {
		refs []api.SliceRef
		kind slicequeue.Kind
	}{{st.Pending, slicequeue.Regular}, {st.Reprocess, slicequeue.Reprocess}, {st.Resweep, slicequeue.Resweep}} {
		for _, r := range list.refs {
			s := slicequeue.Slice{ID: r.ID, Start: r.Start, End: r.End, Kind: list.kind,
				Due: r.NotBefore, Force: r.Force, Sweep: r.Resweep, StartedAt: r.StartedAt}
			switch {
			case r.Done:
				s.State = slicequeue.Held
			case r.Running:
				s.State = slicequeue.Running
			}
			snap.Slices = append(snap.Slices, s)
		}
	}
	return snap
}

// slicesV01 writes a snapshot in the v0.1 form.
func slicesV01(snap slicequeue.Snapshot) api.SlicesV01 {
	v := api.SlicesV01{Next: snap.Next, SpanIntervals: snap.Span, CaughtUp: snap.CaughtUp, Pending: []api.SliceRef{}}
	for _, s := range snap.Slices {
		r := api.SliceRef{ID: s.ID, Start: s.Start, End: s.End, Force: s.Force, Running: s.State == slicequeue.Running,
			Done: s.State == slicequeue.Held, NotBefore: s.Due, Resweep: s.Sweep, StartedAt: s.StartedAt}
		switch s.Kind {
		case slicequeue.Regular:
			v.Pending = append(v.Pending, r)
		case slicequeue.Reprocess:
			v.Reprocess = append(v.Reprocess, r)
		case slicequeue.Resweep:
			v.Resweep = append(v.Resweep, r)
		}
	}
	return v
}

// carried is the state for the next run.
func (c *cursor) carried() *api.CursorState {
	snap := c.q.Snapshot()
	return &api.CursorState{CursorRecord: c.rec, Slices: &snap, SlicesV01: slicesV01(snap)}
}
