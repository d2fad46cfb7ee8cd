package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

var stateT0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func ref(start, end time.Duration) api.SliceRef {
	s, e := stateT0.Add(start), stateT0.Add(end)
	return api.SliceRef{ID: api.SliceWorkflowID("shop-x", s, e), Start: s, End: e}
}

// TestCarriedSlicesReadsTheV01Form: a cursor that continued as new under
// v0.1 carries its slices as three lists of flagged refs; each flag
// becomes a state.
func TestCarriedSlicesReadsTheV01Form(t *testing.T) {
	running, held, retry := ref(-2*time.Hour, -105*time.Minute), ref(-105*time.Minute, -90*time.Minute), ref(-90*time.Minute, -75*time.Minute)
	running.Running, running.StartedAt = true, stateT0.Add(-time.Minute)
	held.Done = true
	retry.NotBefore = stateT0.Add(10 * time.Second)
	forced := ref(-5*time.Hour, -285*time.Minute)
	forced.Force = true
	sweep := ref(-30*time.Minute, -15*time.Minute)
	sweep.Resweep, sweep.NotBefore = true, stateT0.Add(15*time.Minute)
	st := api.CursorState{SlicesV01: api.SlicesV01{
		Next: stateT0.Add(-75 * time.Minute), Pending: []api.SliceRef{running, held, retry},
		Reprocess: []api.SliceRef{forced}, Resweep: []api.SliceRef{sweep}, CaughtUp: true, SpanIntervals: 4,
	}}

	snap := carriedSlices(st)

	require.Equal(t, stateT0.Add(-75*time.Minute), snap.Next)
	require.Equal(t, 4, snap.Span)
	require.True(t, snap.CaughtUp)
	var got []string
	for _, s := range snap.Slices {
		got = append(got, s.Kind.String()+" "+s.State.String())
	}
	require.Equal(t, []string{"regular running", "regular held", "regular queued", "reprocess queued", "resweep queued"}, got)
	require.Equal(t, retry.NotBefore, snap.Slices[2].Due)
	require.True(t, snap.Slices[3].Force)
	require.True(t, snap.Slices[4].Sweep)
	require.Equal(t, sweep.NotBefore, snap.Slices[4].Due)
	require.Equal(t, running.StartedAt, snap.Slices[0].StartedAt)

	// Restored, the running slice is queued again (nothing runs across
	// continue-as-new) and the watermark is where v0.1 had it.
	q := slicequeue.Restore(snap, slicequeue.Rules{Interval: 15 * time.Minute}, nil)
	require.Equal(t, running.Start, q.Watermark())
	require.Empty(t, q.Running())

	// Written back in the v0.1 form, it is what v0.1 would have carried
	// (with the interrupted slice no longer marked running).
	running.Running = false
	snap.Slices[0].State = slicequeue.Queued
	require.Equal(t, st.SlicesV01.Pending[1:], slicesV01(snap).Pending[1:])
	require.Equal(t, running, slicesV01(snap).Pending[0])
	require.Equal(t, st.Reprocess, slicesV01(snap).Reprocess)
	require.Equal(t, st.Resweep, slicesV01(snap).Resweep)
}

// TestCarriedSlicesPrefersTodaysForm: when both forms travel, today's is
// read; a v0.1 worker reads the other.
func TestCarriedSlicesPrefersTodaysForm(t *testing.T) {
	snap := slicequeue.Snapshot{Next: stateT0, Slices: []slicequeue.Slice{{ID: "x", Start: stateT0.Add(-time.Hour), End: stateT0, Kind: slicequeue.Reprocess}}}
	st := api.CursorState{Slices: &snap, SlicesV01: api.SlicesV01{Next: stateT0.Add(-time.Hour)}}
	require.Equal(t, snap, carriedSlices(st))

	// The JSON carries both, flat, as v0.1 wrote its fields.
	c := &cursor{q: slicequeue.Restore(snap, slicequeue.Rules{}, nil), rec: api.CursorRecord{Runs: 2, Paused: true}}
	raw, err := json.Marshal(c.carried())
	require.NoError(t, err)
	var flat map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &flat))
	for _, k := range []string{"slices", "next", "pending", "reprocess", "paused", "runs", "counts"} {
		require.Contains(t, flat, k)
	}
	var back api.CursorState
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, snap.Slices, carriedSlices(back).Slices)
	require.Equal(t, 2, back.Runs)
}
