package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// TestEveryWaitHasAName: while nothing runs, status says why, and until
// when: a slice that did not report waits for its retry; a window that
// was fetched while recent waits for its re-sweep. (v0.1 left both
// unnamed, and the CLI showed "fetching".)
func TestEveryWaitHasAName(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-16m").Format(time.RFC3339) // rounded down to the grid: -30m
	p.ResweepDelay = config.Duration(30 * time.Minute)
	first := api.SliceWorkflowID(platformName, at("-30m"), at("-15m"))
	starts := 0
	env.OnWorkflow(api.SliceWorkflowType, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
			if api.SliceWorkflowID(platformName, in.Start, in.End) == first && !in.Resweep {
				starts++
				if starts == 1 {
					return api.SliceResult{}, temporal.NewApplicationError("worker lost", "Terminated")
				}
			}
			return api.SliceResult{Outcome: api.SliceCompleted, Pages: 1}, nil
		})
	var retrying, sweeping api.CursorStatus
	env.RegisterDelayedCallback(func() { retrying = status(t, env) }, 5*time.Second)
	env.RegisterDelayedCallback(func() { sweeping = status(t, env) }, 20*time.Minute)
	stopAt(env, 25*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Empty(t, retrying.InFlight)
	require.Equal(t, api.WaitRetry, retrying.Waiting)
	require.Equal(t, at("10s"), retrying.WaitUntil.UTC())
	require.Len(t, retrying.Queued, 1)
	require.Equal(t, api.SliceWaiting, retrying.Queued[0].State)
	require.Equal(t, "regular", retrying.Queued[0].Kind)

	// [-30m, -15m) ran again at 10s and its re-sweep at 15m; [-15m, 0)
	// ran at 1m and [0, 15m) at 16m; the next settles at 31m, the re-sweep
	// of [-15m, 0) is due at 30m.
	require.Empty(t, sweeping.InFlight)
	require.Equal(t, api.WaitResweep, sweeping.Waiting)
	require.Equal(t, at("30m"), sweeping.WaitUntil.UTC())
	require.Equal(t, "resweep", sweeping.Queued[0].Kind)
	require.True(t, sweeping.Queued[0].Resweep)
}
