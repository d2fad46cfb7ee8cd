package workflows

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// freezeWallClock makes env's workflow clock move only when nothing runs.
//
// The SDK's test environment skips its mock clock to the next timer when
// no workflow task, child start or activity is in progress; while one is,
// it fires the next timer once that much wall-clock time has passed. Every
// child workflow starts on goroutines (the child's executor and the
// workflow-mock lookup each take one hop), so a sibling's or the parent's
// timer a few milliseconds ahead can fire before the child's code first
// runs, and the child then starts its timers that much later in workflow
// time. On a loaded machine two identical runs then differ by a few
// milliseconds. With a wall clock that never advances, timers fire only
// when everything in flight is blocked, in workflow-time order.
//
// The environment has no option for this: the wall clock is an unexported
// field, replaced here by a second mock clock that is never advanced.
// TestFrozenWallClock fails if an SDK upgrade moves or ignores it.
func freezeWallClock(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	impl := reflect.ValueOf(env).Elem().FieldByName("impl")
	require.True(t, impl.IsValid() && impl.Kind() == reflect.Pointer && !impl.IsNil(),
		"freezeWallClock: the SDK's TestWorkflowEnvironment has no impl pointer any more")
	shared := impl.Elem().FieldByName("testWorkflowEnvironmentShared")
	require.True(t, shared.IsValid() && shared.Kind() == reflect.Pointer && !shared.IsNil(),
		"freezeWallClock: the SDK's test environment has no shared state pointer any more")
	wall := shared.Elem().FieldByName("wallClock")
	mockClock := shared.Elem().FieldByName("mockClock")
	require.True(t, wall.IsValid() && wall.Kind() == reflect.Interface,
		"freezeWallClock: the SDK's test environment has no wallClock interface any more")
	require.True(t, mockClock.IsValid() && mockClock.Kind() == reflect.Pointer && mockClock.Type().Implements(wall.Type()),
		"freezeWallClock: the SDK's test environment's mockClock is no wall clock")
	// Child environments share this state, so their starts are covered too.
	frozen := reflect.New(mockClock.Type().Elem())
	reflect.NewAt(wall.Type(), wall.Addr().UnsafePointer()).Elem().Set(frozen)
}

// TestFrozenWallClock checks freezeWallClock against the SDK in use: an
// activity that takes 300ms of wall-clock time runs beside a 10ms workflow
// timer. The test environment fires that timer after 10ms of wall-clock
// time while the activity runs, unless its wall clock is frozen; then the
// timer fires only once the activity is done, and the workflow sees the
// activity end first.
func TestFrozenWallClock(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(map[bool]string{false: "as the SDK ships", true: "frozen"}[frozen], func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
			env := s.NewTestWorkflowEnvironment()
			if frozen {
				freezeWallClock(t, env)
			}
			slow := func(ctx context.Context) error {
				time.Sleep(300 * time.Millisecond)
				return nil
			}
			env.RegisterActivityWithOptions(slow, activity.RegisterOptions{Name: "slow"})
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (string, error) {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
				act := workflow.ExecuteActivity(ctx, "slow")
				timer := workflow.NewTimer(ctx, 10*time.Millisecond)
				first := ""
				sel := workflow.NewSelector(ctx)
				sel.AddFuture(act, func(workflow.Future) { first = "activity" })
				sel.AddFuture(timer, func(workflow.Future) { first = "timer" })
				sel.Select(ctx)
				return first, nil
			}, workflow.RegisterOptions{Name: "race"})
			env.ExecuteWorkflow("race")
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var first string
			require.NoError(t, env.GetWorkflowResult(&first))
			require.Equal(t, map[bool]string{false: "timer", true: "activity"}[frozen], first)
		})
	}
}
