package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// cappedInput is the cursor input with a run capped at n slices.
func cappedInput(t *testing.T, p api.Settings, n int) api.CursorInput {
	in := cursorInput(t, p)
	in.MaxSlicesPerRun = n
	return in
}

// TestContinueAsNewCarriesStateAndLateSignals caps a run at three slices
// (one at a time, five minutes each). The third starts at 12:10 and the
// cursor drains until 12:15, then continues as new. Signals sent at 12:12,
// while it drains, must be in the carried state, together with the counts
// and Next.
func TestContinueAsNewCarriesStateAndLateSignals(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Concurrency = 1
	delays := map[string]time.Duration{}
	for _, id := range tiles(at("-2h"), t0, p.Interval.D()) {
		delays[id] = 5 * time.Minute
	}
	pages := watchPages(env)
	mockPages(env, pages, onePage, delays)
	env.RegisterDelayedCallback(func() { sendLateSignals(env, p) }, 12*time.Minute)

	env.ExecuteWorkflow(workflows.PlatformCursor, cappedInput(t, p, 3))

	var in api.CursorInput
	continuedAs(t, env, api.CursorWorkflowType, &in)
	require.Equal(t, at("15m"), env.Now().UTC(), "continued as new only after the third slice finished")
	require.Len(t, pages.all(), 3)
	require.Equal(t, at("-2h"), in.Start)
	requireLateSignalsCarried(t, in)
	st := in.State
	require.Equal(t, at("-1h15m"), st.Next)
	require.Empty(t, st.Pending)
	require.Equal(t, api.Counts{SlicesCompleted: 3, Pages: 3, OrdersFetched: 3, OrdersInserted: 3}, st.Counts)
	require.Equal(t, 1, st.Runs)
	require.Empty(t, st.LastError)
}

// TestContinueAsNewAppliesSignalsOfItsLastTask delivers signals in the very
// workflow task in which the cursor decides to continue as new (here its
// first, with continue-as-new already suggested), so no selector ever sees
// them: the cursor must drain them into the carried state.
func TestContinueAsNewAppliesSignalsOfItsLastTask(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	env.SetContinueAsNewSuggested(true)
	env.RegisterDelayedCallback(func() { sendLateSignals(env, p) }, 0)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

	var in api.CursorInput
	continuedAs(t, env, api.CursorWorkflowType, &in)
	require.Empty(t, pages.all())
	require.Equal(t, at("-2h"), in.State.Next)
	requireLateSignalsCarried(t, in)
}

// sendLateSignals pauses, asks for a reprocess and changes page_size.
func sendLateSignals(env *testsuite.TestWorkflowEnvironment, p api.Settings) {
	change := p
	change.PageSize = 7
	env.SignalWorkflow(api.SignalPause, api.PauseRequest{Reason: "before CAN"})
	env.SignalWorkflow(api.SignalReprocess, api.ReprocessRequest{From: at("-2h"), To: at("-1h40m")})
	env.SignalWorkflow(api.SignalConfig, change)
}

func requireLateSignalsCarried(t *testing.T, in api.CursorInput) {
	t.Helper()
	require.NotNil(t, in.State)
	require.Equal(t, 7, in.Platform.PageSize, "config signal lost")
	require.True(t, in.State.Paused, "pause signal lost")
	require.Equal(t, "before CAN", in.State.PauseReason)
	require.Equal(t, []api.SliceRef{
		{ID: sliceID(at("-2h"), 15*time.Minute), Start: at("-2h"), End: at("-1h45m")},
		{ID: sliceID(at("-1h45m"), 5*time.Minute), Start: at("-1h45m"), End: at("-1h40m")},
	}, in.State.Reprocess, "reprocess signal lost")
}

// TestContinuedCursorPicksUpCarriedState starts a cursor from carried
// state: paused, with a reprocess request queued, a slice that was marked
// running when the previous run ended, and counts. It starts nothing until
// resumed, then runs the interrupted slice, the reprocess request and the
// regular slices from Next on, with the carried settings, and keeps counting.
func TestContinuedCursorPicksUpCarriedState(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.PageSize = 7
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	interrupted := api.SliceRef{ID: sliceID(at("-1h15m"), 15*time.Minute), Start: at("-1h15m"), End: at("-1h"), Running: true}
	again := api.SliceRef{ID: sliceID(at("-2h"), 15*time.Minute), Start: at("-2h"), End: at("-1h45m"), Running: true}
	in := api.CursorInput{Platform: p, Start: at("-2h"), State: &api.CursorState{
		CursorRecord: api.CursorRecord{
			Paused:      true,
			PauseReason: "before CAN",
			Counts:      api.Counts{SlicesCompleted: 3, Pages: 3},
			Runs:        1,
		},
		// The v0.1 form, as a cursor that continued as new before the upgrade carries it.
		SlicesV01: api.SlicesV01{
			Next:      at("-1h"),
			Pending:   []api.SliceRef{interrupted},
			Reprocess: []api.SliceRef{again},
		},
	}}
	var paused api.CursorStatus
	env.RegisterDelayedCallback(func() {
		paused = status(t, env)
		env.SignalWorkflow(api.SignalResume, nil)
	}, 30*time.Minute)
	var final api.CursorStatus
	stopAt(env, 40*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, in)
	requireStopped(t, env)

	require.True(t, paused.Paused)
	require.Equal(t, at("-1h15m"), paused.Watermark)
	require.Len(t, paused.Queued, 2)
	require.Empty(t, paused.InFlight, "a carried running flag must not count as running")
	calls := pages.all()
	require.NotEmpty(t, calls)
	for _, c := range calls {
		require.False(t, c.At.Before(at("30m")), "%s ran while paused", c.In.SliceID)
		require.Equal(t, 7, c.In.Platform.PageSize)
	}
	want := append([]string{interrupted.ID, again.ID}, tiles(at("-1h"), at("30m"), 15*time.Minute)...)
	require.Equal(t, sortedCopy(want), sliceIDs(calls))
	require.Equal(t, 1, final.Runs)
	require.Equal(t, int64(3+len(want)), final.Counts.SlicesCompleted)
	require.Equal(t, at("30m"), final.Watermark)
}

// TestContinueAsNewWhenSuggested: once the server suggests it, the cursor
// starts nothing new, waits for the slice in flight and continues as new.
func TestContinueAsNewWhenSuggested(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Concurrency = 1
	delays := map[string]time.Duration{}
	for _, id := range tiles(at("-2h"), t0, p.Interval.D()) {
		delays[id] = 5 * time.Minute
	}
	pages := watchPages(env)
	mockPages(env, pages, onePage, delays)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 7*time.Minute)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

	var in api.CursorInput
	continuedAs(t, env, api.CursorWorkflowType, &in)
	require.Equal(t, at("10m"), env.Now().UTC())
	require.Len(t, pages.all(), 2)
	require.Equal(t, at("-1h30m"), in.State.Next)
	require.Empty(t, in.State.Pending)
	require.Equal(t, int64(2), in.State.Counts.SlicesCompleted)
}
