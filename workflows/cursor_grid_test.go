package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
	"github.com/ordersync/ordersync/workflows"
)

// phasedPlatform's grid of 15-minute slices is shifted by 2m40s
// (slicequeue.PhaseOf): its slices lie at :02:40, :17:40, :32:40, :47:40.
const phasedPlatform = "shop-x"

// sliceRuns records every slice child a cursor starts, in order, and
// completes each at once with one page.
func sliceRuns(env *testsuite.TestWorkflowEnvironment) *[]string {
	var ids []string
	env.OnWorkflow(api.SliceWorkflowType, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, _ api.SliceInput) (api.SliceResult, error) {
			ids = append(ids, workflow.GetInfo(ctx).WorkflowExecution.ID)
			return api.SliceResult{Outcome: api.SliceCompleted, Pages: 1}, nil
		})
	return &ids
}

// TestCursorPlacesSlicesOnThePlatformsGrid: a cursor started at an
// unrounded instant (`now - 48h` as `start: 48h` gives) rounds its start
// down to the platform's grid, names slices without zero microseconds,
// and a reprocess of one of its windows runs under the same ID.
func TestCursorPlacesSlicesOnThePlatformsGrid(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Name = phasedPlatform
	p.Concurrency = 1
	ids := sliceRuns(env)
	grid := slicequeue.GridOf(phasedPlatform, p.Interval.D())
	first := grid.Floor(at("-1h0m0.895169s"))
	require.Equal(t, at("-1h12m20s"), first)
	regular := api.SliceWorkflowID(phasedPlatform, at("-57m20s"), at("-42m20s"))
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalReprocess, api.ReprocessRequest{From: at("-57m20s"), To: at("-42m20s")})
	}, 10*time.Minute)
	stopAt(env, 20*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, api.CursorInput{Platform: p, Start: at("-1h0m0.895169s")})
	requireStopped(t, env)

	require.Equal(t, []string{
		api.SliceWorkflowID(phasedPlatform, at("-1h12m20s"), at("-57m20s")),
		regular,
		api.SliceWorkflowID(phasedPlatform, at("-42m20s"), at("-27m20s")),
		api.SliceWorkflowID(phasedPlatform, at("-27m20s"), at("-12m20s")),
		api.SliceWorkflowID(phasedPlatform, at("-12m20s"), at("2m40s")), // settled at 3m40s
		regular, // the reprocess at 10m: the regular slice's window, its ID
		api.SliceWorkflowID(phasedPlatform, at("2m40s"), at("17m40s")), // settled at 18m40s
	}, *ids)
	require.Equal(t, "slice/shop-x/20260302T104740Z-20260302T110240Z", (*ids)[0], "no zero microseconds")
	for _, id := range *ids {
		_, s, e, err := api.ParseSliceWorkflowID(id)
		require.NoError(t, err)
		require.True(t, grid.On(s) && grid.On(e), "%s lies on the grid", id)
	}
}

// TestContinueAsNewSwitchesToTheGrid: a run that began before the
// slice-grid change keeps v0.1's grid (one interval after another from an
// unrounded start) and ID layout to its end; the run it continues as
// aligns, starting exactly where the old run stopped with one shorter
// slice that ends on the grid. No instant is skipped or fetched twice.
func TestContinueAsNewSwitchesToTheGrid(t *testing.T) {
	p := testPlatform(t)
	p.Name = phasedPlatform
	p.Concurrency = 1

	old := newEnv(t)
	oldIDs := sliceRuns(old)
	old.OnGetVersion("slice-grid", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion) // as the run replays
	old.ExecuteWorkflow(workflows.PlatformCursor, api.CursorInput{Platform: p, Start: at("-1h0m7.5s"), MaxSlicesPerRun: 3})
	var next api.CursorInput
	continuedAs(t, old, api.CursorWorkflowType, &next)
	require.Equal(t, []string{
		"slice/shop-x/20260302T105952.500000Z-20260302T111452.500000Z",
		"slice/shop-x/20260302T111452.500000Z-20260302T112952.500000Z",
		"slice/shop-x/20260302T112952.500000Z-20260302T114452.500000Z",
	}, *oldIDs, "v0.1's grid and layout to the end of the run")
	require.NotNil(t, next.State)
	require.Equal(t, at("-15m7.5s"), next.State.Slices.Next)

	env := newEnv(t)
	newIDs := sliceRuns(env)
	stopAt(env, 5*time.Minute, nil)
	env.ExecuteWorkflow(workflows.PlatformCursor, next)
	requireStopped(t, env)
	require.Equal(t, []string{
		"slice/shop-x/20260302T114452.5Z-20260302T114740Z", // the bridge
		"slice/shop-x/20260302T114740Z-20260302T120240Z",   // on the grid, settled at 3m40s
	}, *newIDs)

	reach := at("-1h0m7.5s")
	for _, id := range append(append([]string{}, *oldIDs...), *newIDs...) {
		_, s, e, err := api.ParseSliceWorkflowID(id)
		require.NoError(t, err)
		require.Equal(t, reach, s, "%s starts where the last slice ended", id)
		reach = e
	}
	require.False(t, strings.Contains((*newIDs)[1], ".000000"), "today's layout")
}
