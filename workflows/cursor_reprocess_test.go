package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// reprocessAt is when the tests ask; the cursor has caught up by then and
// last woke at 12:01, to start [11:45, 12:00).
var reprocessAt = at("10m")

// TestReprocessRunsExactlyTheRange asks for ranges that do not fall on
// slice boundaries, by signal and by update. Exactly [from, to) runs, cut
// at the slice grid (the first and last slices short), each widened by
// the overlap; the watermark does
// not move while they run or after.
func TestReprocessRunsExactlyTheRange(t *testing.T) {
	cases := []struct {
		name     string
		from, to time.Time
	}{
		{"partial last slice", at("-1h55m"), at("-50m")},
		{"single short slice", at("-1h"), at("-59m")},
		// The cursor's loop last read the clock at 12:01; 12:09 is still
		// in the past when the request arrives at 12:10.
		{"up to a moment ago", at("-10m"), at("9m")},
	}
	for _, tc := range cases {
		for _, via := range []string{"signal", "update"} {
			t.Run(tc.name+" by "+via, func(t *testing.T) {
				env := newEnv(t)
				p := testPlatform(t)
				p.Start = at("-1h").Format(time.RFC3339)
				want := gridTiles(tc.from, tc.to, p.Interval.D())
				delays := map[string]time.Duration{}
				for _, id := range want {
					delays[id] = 2 * time.Minute
				}
				pages := watchPages(env)
				mockPages(env, pages, onePage, delays)

				req := api.ReprocessRequest{From: tc.from, To: tc.to}
				var before, during api.CursorStatus
				var upd *updateOutcome
				env.RegisterDelayedCallback(func() {
					before = status(t, env)
					if via == "signal" {
						env.SignalWorkflow(api.SignalReprocess, req)
					} else {
						upd = sendUpdate(env, api.SignalReprocess, req)
					}
				}, reprocessAt.Sub(t0))
				env.RegisterDelayedCallback(func() { during = status(t, env) }, reprocessAt.Sub(t0)+time.Minute)
				var after api.CursorStatus
				stopAt(env, 15*time.Minute, func() { after = status(t, env) })

				env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
				requireStopped(t, env)

				calls := pages.since(reprocessAt)
				require.Equal(t, sortedCopy(want), sliceIDs(calls), "slices run for the request (last error %q)", after.LastError)
				for _, c := range calls {
					w := window(t, c.In.SliceID)
					require.Equal(t, w.Start.Add(-p.Overlap.D()), c.In.From)
					require.Equal(t, w.End, c.In.To)
				}
				require.Len(t, calls, len(want), "each slice once")
				require.Equal(t, tc.to, window(t, want[len(want)-1]).End)

				require.Equal(t, t0, before.Watermark)
				require.Equal(t, before.Watermark, during.Watermark, "reprocess moved the watermark")
				require.Equal(t, before.Watermark, after.Watermark, "reprocess moved the watermark")
				require.Equal(t, before.Next, after.Next)
				require.Len(t, unfinished(during), len(want))
				require.Empty(t, unfinished(after))
				require.Equal(t, before.Counts.SlicesCompleted+int64(len(want)), after.Counts.SlicesCompleted)
				require.Empty(t, after.LastError)
				if via == "update" {
					require.True(t, upd.accepted && upd.done, "%+v", upd)
					require.NoError(t, upd.err)
					require.Equal(t, len(want), upd.result)
				}
			})
		}
	}
}

// TestInvalidReprocessChangesNothing sends bad ranges. The update's
// validator rejects them with a message that says what is wrong; the signal
// (which cannot answer) reports the same message in status.last_error.
// Neither queues anything.
func TestInvalidReprocessChangesNothing(t *testing.T) {
	cases := []struct {
		name string
		req  api.ReprocessRequest
		want string
	}{
		{"no to", api.ReprocessRequest{From: at("-1h")}, "from and to are both required"},
		{"from after to", api.ReprocessRequest{From: at("-1h"), To: at("-2h")}, "from 2026-03-02T11:00:00Z is not before to 2026-03-02T10:00:00Z"},
		{"empty range", api.ReprocessRequest{From: at("-1h"), To: at("-1h")}, "is not before"},
		{"to in the future", api.ReprocessRequest{From: at("-1h"), To: at("30m")}, "to 2026-03-02T12:30:00Z is in the future"},
		{"too long", api.ReprocessRequest{From: at("-4000h"), To: at("-1h")}, "more than 10000; ask for a shorter range"},
	}
	for _, tc := range cases {
		for _, via := range []string{"signal", "update"} {
			t.Run(tc.name+" by "+via, func(t *testing.T) {
				env := newEnv(t)
				p := testPlatform(t)
				p.Start = at("-1h").Format(time.RFC3339)
				pages := watchPages(env)
				mockPages(env, pages, onePage, nil)

				var upd *updateOutcome
				env.RegisterDelayedCallback(func() {
					if via == "signal" {
						env.SignalWorkflow(api.SignalReprocess, tc.req)
					} else {
						upd = sendUpdate(env, api.SignalReprocess, tc.req)
					}
				}, reprocessAt.Sub(t0))
				var after api.CursorStatus
				stopAt(env, 15*time.Minute, func() { after = status(t, env) })

				env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
				requireStopped(t, env)

				require.Empty(t, pages.since(reprocessAt), "nothing may run")
				require.Empty(t, unfinished(after))
				require.Equal(t, t0, after.Watermark)
				require.Equal(t, t0, after.Next)
				if via == "update" {
					require.False(t, upd.accepted)
					require.False(t, upd.done)
					require.ErrorContains(t, upd.rejected, tc.want)
					require.Empty(t, after.LastError, "a rejected update leaves no trace")
				} else {
					require.Contains(t, after.LastError, "reprocess signal: ")
					require.Contains(t, after.LastError, tc.want)
				}
			})
		}
	}
}

// TestReprocessOfSlicesTheCursorAlsoTracks asks for a slice that is also a
// regular slice of the cursor: one the backfill has not reached yet (it
// will start while the reprocess runs, under the same workflow ID), and one
// that has finished but is still held behind a slower one. Each runs twice,
// once for each reason, and nothing is left looking in flight.
func TestReprocessOfSlicesTheCursorAlsoTracks(t *testing.T) {
	cases := []struct {
		name   string
		slow   time.Duration // how long [10:00, 10:15) takes
		target time.Time     // the slice asked for
		takes  time.Duration // how long the target takes
	}{
		// Asked at 12:06 with Next at 11:00; the reprocess runs 12:10-12:30
		// and the backfill reaches the slice at 12:15.
		{"not reached yet", 5 * time.Minute, at("-45m"), 20 * time.Minute},
		// [10:15, 10:30) finished at 12:05; [10:00, 10:15) runs until 12:30.
		{"finished, held back", 30 * time.Minute, at("-1h45m"), 5 * time.Minute},
	}
	for _, tc := range cases {
		for _, via := range []string{"signal", "update"} {
			t.Run(tc.name+" by "+via, func(t *testing.T) {
				env := newEnv(t)
				p := testPlatform(t)
				p.Concurrency = 2
				delays := map[string]time.Duration{}
				for _, id := range tiles(at("-2h"), at("2h"), p.Interval.D()) {
					delays[id] = 5 * time.Minute
				}
				delays[sliceID(at("-2h"), 15*time.Minute)] = tc.slow
				target := sliceID(tc.target, 15*time.Minute)
				delays[target] = tc.takes
				pages := watchPages(env)
				mockPages(env, pages, onePage, delays)
				req := api.ReprocessRequest{From: tc.target, To: tc.target.Add(15 * time.Minute)}
				var upd *updateOutcome
				env.RegisterDelayedCallback(func() {
					if via == "signal" {
						env.SignalWorkflow(api.SignalReprocess, req)
					} else {
						upd = sendUpdate(env, api.SignalReprocess, req)
					}
				}, 6*time.Minute)
				var final api.CursorStatus
				stopAt(env, 2*time.Hour, func() { final = status(t, env) })

				env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
				requireStopped(t, env)

				runs := 0
				for _, c := range pages.all() {
					if c.In.SliceID == target {
						runs++
					}
				}
				require.Equal(t, 2, runs, "once as a regular slice, once for the request")
				require.Empty(t, final.InFlight)
				require.Empty(t, final.Queued)
				require.Empty(t, final.LastError)
				require.Equal(t, at("1h45m"), final.Watermark)
				if via == "update" {
					require.True(t, upd.done)
					require.Equal(t, 1, upd.result)
				}
			})
		}
	}
}
