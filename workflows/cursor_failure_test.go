package workflows_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestWatermarkPassesFailedSliceOnlyOnceDeadLettered: one slice fails
// permanently and recording it in the dead-letter workflow takes 20
// minutes. Until the record is made the watermark stays at the slice's
// start; then it moves past it, and status counts the failure.
func TestWatermarkPassesFailedSliceOnlyOnceDeadLettered(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-1h").Format(time.RFC3339)
	bad := api.Range{Start: at("-45m"), End: at("-30m")}
	badID := api.SliceWorkflowID(platformName, bad.Start, bad.End)
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if in.SliceID == badID {
			return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 403: shop closed", activities.ErrPermanent, nil)
		}
		return onePage(in)
	}, nil)
	dl := mockDeadLetters(env, 20*time.Minute, false)

	var observed int
	every(env, time.Minute, 39*time.Minute, func() {
		s := status(t, env)
		recorded := len(dl.times()) > 0
		if !recorded {
			require.False(t, s.Watermark.After(bad.Start), "at %s watermark %s passed %s before it was dead-lettered", env.Now(), s.Watermark, badID)
			observed++
		}
	})
	var final api.CursorStatus
	stopAt(env, 40*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.GreaterOrEqual(t, observed, 19, "the record must have been pending for the first observations")
	calls := 0
	for _, c := range pages.all() {
		if c.In.SliceID == badID {
			calls++
		}
	}
	require.Equal(t, 1, calls, "a permanent error is not retried")
	entries := dl.all()
	require.Len(t, entries, 1)
	require.Equal(t, badID, entries[0].SliceID)
	require.Equal(t, "HTTP 403: shop closed", entries[0].Error)
	require.Equal(t, activities.ErrPermanent, entries[0].ErrorType)
	require.Equal(t, 1, entries[0].Attempts)
	require.Equal(t, at("20m"), dl.times()[0])
	// At 12:40 the slices up to [12:15, 12:30) are done, the failed one included.
	require.Equal(t, at("30m"), final.Watermark)
	require.Equal(t, int64(1), final.Counts.SlicesFailed)
	require.Equal(t, int64(5), final.Counts.SlicesCompleted)
	require.Contains(t, final.LastError, badID+" dead-lettered: HTTP 403: shop closed")
}

// TestSliceThatDidNotReportIsStartedAgain: a slice child that ends without
// a result (here: it fails twice, at once or after running five minutes)
// is started again max(retry interval, 10s) after it ended, and holds the
// watermark until it has completed.
func TestSliceThatDidNotReportIsStartedAgain(t *testing.T) {
	for _, runFor := range []time.Duration{0, 5 * time.Minute} {
		t.Run("runs "+runFor.String(), func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Start = at("-1h").Format(time.RFC3339)
			flaky := api.SliceWorkflowID(platformName, at("-45m"), at("-30m"))
			var mu sync.Mutex
			starts := map[string][]time.Time{}
			env.OnWorkflow(api.SliceWorkflowType, mock.Anything, mock.Anything).Return(
				func(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
					id := api.SliceWorkflowID(platformName, in.Start, in.End)
					mu.Lock()
					starts[id] = append(starts[id], workflow.Now(ctx).UTC())
					n := len(starts[id])
					mu.Unlock()
					if id == flaky && n <= 2 {
						if err := workflow.Sleep(ctx, runFor); err != nil {
							return api.SliceResult{}, err
						}
						return api.SliceResult{}, temporal.NewApplicationError("worker lost", "Terminated")
					}
					return api.SliceResult{Outcome: api.SliceCompleted, Pages: 1}, nil
				})
			var during api.CursorStatus
			env.RegisterDelayedCallback(func() { during = status(t, env) }, runFor+5*time.Second)
			var final api.CursorStatus
			stopAt(env, 15*time.Minute, func() { final = status(t, env) })

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			second := t0.Add(runFor + 10*time.Second)
			third := second.Add(runFor + 10*time.Second)
			require.Equal(t, []time.Time{t0, second, third}, starts[flaky])
			require.Equal(t, at("-45m"), during.Watermark, "a slice that did not report holds the watermark")
			require.Contains(t, during.LastError, flaky)
			require.Equal(t, t0, final.Watermark)
			require.Equal(t, int64(4), final.Counts.SlicesCompleted)
			require.Zero(t, final.Counts.SlicesFailed)
		})
	}
}
