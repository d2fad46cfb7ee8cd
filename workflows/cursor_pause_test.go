package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestPauseStopsNewSlicesAndResumeContinues pauses the cursor while two
// slices are in flight and resumes it 45 minutes later, through signals and
// through updates of the same names. The in-flight slices finish; nothing
// new starts while paused; work picks up at the moment of the resume and
// the cursor catches up.
func TestPauseStopsNewSlicesAndResumeContinues(t *testing.T) {
	for _, via := range []string{"signal", "update"} {
		t.Run(via, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Concurrency = 2
			delays := map[string]time.Duration{}
			for _, id := range tiles(at("-2h"), at("3h"), p.Interval.D()) {
				delays[id] = 10 * time.Minute
			}
			pages := watchPages(env)
			mockPages(env, pages, onePage, delays)

			pauseAt, resumeAt := at("15m"), at("1h")
			var pauseUpd, resumeUpd *updateOutcome
			env.RegisterDelayedCallback(func() {
				require.False(t, status(t, env).Paused)
				if via == "signal" {
					env.SignalWorkflow(api.SignalPause, api.PauseRequest{Reason: "maintenance"})
				} else {
					pauseUpd = sendUpdate(env, api.SignalPause, api.PauseRequest{Reason: "maintenance"})
				}
			}, pauseAt.Sub(t0))
			var paused api.CursorStatus
			env.RegisterDelayedCallback(func() { paused = status(t, env) }, resumeAt.Sub(t0)-time.Minute)
			env.RegisterDelayedCallback(func() {
				if via == "signal" {
					env.SignalWorkflow(api.SignalResume, nil)
				} else {
					resumeUpd = sendUpdate(env, api.SignalResume)
				}
			}, resumeAt.Sub(t0))
			var final api.CursorStatus
			stopAt(env, 3*time.Hour, func() { final = status(t, env) })

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			// The two slices started at 12:10 finished; none started while paused.
			require.True(t, paused.Paused)
			require.Equal(t, api.WaitPaused+": maintenance", paused.Waiting)
			require.Equal(t, "paused", paused.PlatformState)
			require.Empty(t, paused.InFlight)
			require.Equal(t, at("-1h"), paused.Watermark)
			for _, c := range pages.all() {
				require.False(t, c.At.After(pauseAt) && c.At.Before(resumeAt),
					"%s started at %s, while the cursor was paused", c.In.SliceID, c.At)
			}
			resumed := pages.since(resumeAt)
			require.NotEmpty(t, resumed)
			require.Equal(t, resumeAt, resumed[0].At, "work did not pick up at the resume")
			require.Equal(t, tiles(at("-1h"), at("-30m"), p.Interval.D()), sliceIDs(resumed[:2]))

			require.False(t, final.Paused)
			require.Equal(t, at("2h45m"), final.Watermark)
			if via == "update" {
				require.NotNil(t, pauseUpd)
				require.True(t, pauseUpd.accepted && pauseUpd.done, "pause update: %+v", pauseUpd)
				require.NoError(t, pauseUpd.err)
				require.True(t, pauseUpd.result.(api.CursorStatus).Paused)
				require.True(t, resumeUpd.accepted && resumeUpd.done, "resume update: %+v", resumeUpd)
				require.NoError(t, resumeUpd.err)
				require.False(t, resumeUpd.result.(api.CursorStatus).Paused)
			}
		})
	}
}

// TestCancelWhilePausedAndIdle cancels a paused cursor that has nothing in
// flight, so no timer or slice can wake it: it ends cancelled at once. A
// history recorded before versionCancelWhileIdle (GetVersion answers the
// default) keeps the old wait, which noticed the request only when the
// next message woke it.
func TestCancelWhilePausedAndIdle(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "current", true: "before-version"}[old], func(t *testing.T) {
			env := newEnv(t)
			if old {
				env.OnGetVersion("cancel-while-idle", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			p := testPlatform(t)
			mockPages(env, watchPages(env), onePage, nil)
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(api.SignalPause, api.PauseRequest{Reason: "maintenance"})
			}, 15*time.Minute)
			var idle api.CursorStatus
			env.RegisterDelayedCallback(func() {
				idle = status(t, env)
				env.CancelWorkflow()
			}, 2*time.Hour)
			resumeAt := 3 * time.Hour
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalResume, nil) }, resumeAt)

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)
			require.True(t, idle.Paused)
			require.Empty(t, idle.InFlight, "the case needs a cursor with nothing in flight")
			ended := env.Now().Sub(t0)
			if old {
				require.Equal(t, resumeAt, ended, "the old wait should notice the cancellation only when the resume woke it")
			} else {
				require.Equal(t, 2*time.Hour, ended, "a paused, idle cursor ignored its cancellation")
			}
		})
	}
}
