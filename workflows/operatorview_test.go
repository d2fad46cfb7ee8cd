package workflows_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/workflows"
)

// currentDetails reads what the Web UI shows as a workflow's current
// details: the answer to the SDK's built-in metadata query.
func currentDetails(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}

// keywordUpserts records the values a workflow upserts for one keyword
// search attribute; every other upsert passes.
type keywordUpserts struct {
	mu     sync.Mutex
	values []string
}

func watchKeyword(env *testsuite.TestWorkflowEnvironment, key temporal.SearchAttributeKeyKeyword) *keywordUpserts {
	u := &keywordUpserts{}
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(key); ok {
			u.mu.Lock()
			u.values = append(u.values, v)
			u.mu.Unlock()
		}
	}).Return(nil).Maybe()
	return u
}

func (u *keywordUpserts) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.values...)
}

// TestDeadLetteredSliceFailsWhenItsCallerUnderstands: with
// SliceInput.FailedAsError a dead-lettered slice ends FAILED (the Web UI's
// failed status) with an ErrSliceDeadLettered error that names the cause
// and carries the result; without it, it completes with Outcome "failed"
// as slices of before did. Either way the failure is recorded in the
// dead-letter workflow first, SliceState says failed and the current
// details give the outcome.
func TestDeadLetteredSliceFailsWhenItsCallerUnderstands(t *testing.T) {
	for _, failedAsError := range []bool{false, true} {
		t.Run(map[bool]string{false: "completes failed", true: "ends FAILED"}[failedAsError], func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				if in.Page == 2 {
					return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 401: bad credentials", activities.ErrPermanent, nil)
				}
				return activities.FetchPageResult{NextToken: "next", Fetched: 3, Inserted: 2, Updated: 1}, nil
			}, nil)
			dl := mockDeadLetters(env, 0, false)
			states := watchKeyword(env, searchattr.SliceState)
			start, end := at("-1h"), at("-45m")
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SliceWorkflowID(p.Name, start, end)})

			env.ExecuteWorkflow(workflows.FetchSlice, api.SliceInput{Platform: p, Start: start, End: end, LocalFirst: true, FailedAsError: failedAsError})

			require.True(t, env.IsWorkflowCompleted())
			want := api.SliceResult{Outcome: api.SliceFailed, Pages: 1, OrdersFetched: 3, OrdersInserted: 2, OrdersUpdated: 1,
				Error: "HTTP 401: bad credentials", ErrorType: activities.ErrPermanent}
			var got api.SliceResult
			if failedAsError {
				err := env.GetWorkflowError()
				var app *temporal.ApplicationError
				require.True(t, errors.As(err, &app), "want an application error, got %v", err)
				require.Equal(t, api.ErrSliceDeadLettered, app.Type())
				require.True(t, app.NonRetryable())
				require.Equal(t, "slice dead-lettered after 1 attempt(s) of page 2: HTTP 401: bad credentials ("+activities.ErrPermanent+")", app.Message())
				require.NoError(t, app.Details(&got))
			} else {
				require.NoError(t, env.GetWorkflowError())
				require.NoError(t, env.GetWorkflowResult(&got))
			}
			require.Equal(t, want, got)
			require.Len(t, dl.all(), 1, "recorded in the dead-letter workflow")
			require.Equal(t, []string{searchattr.StateFailed}, states.all())
			require.Equal(t, "**failed** after 1 page(s): HTTP 401: bad credentials ("+activities.ErrPermanent+")\n\n"+
				"Recorded in the dead-letter workflow, where it can be reprocessed.\n\n"+
				"**Orders** 3 fetched: 2 new, 1 updated, 0 unchanged", currentDetails(t, env))
		})
	}
}

// TestCompletedSliceDetails: a completed slice's current details sum up
// its pages and orders.
func TestCompletedSliceDetails(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	mockPages(env, watchPages(env), onePage, nil)
	res := runSlice(t, env, p, at("-1h"), at("-45m"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Regexp(t, `^\*\*completed\*\*: 1 page\(s\)\n\n\*\*Orders\*\* \d+ fetched: `, currentDetails(t, env))
}

// TestPlatformStateFollowsTheCursor: the cursor upserts PlatformState
// when its state changes, and only then: backfilling from the start,
// caught_up once it reached the present, paused by an operator, running
// again on resume, breaker_open when failed slices trip the breaker. Its
// current details lead with the same word.
func TestPlatformStateFollowsTheCursor(t *testing.T) {
	cases := []struct {
		name    string
		breaker bool
		want    []string
		details string // current details at 50m start with this
	}{
		{"pause and resume", false, []string{searchattr.PlatformBackfilling, searchattr.PlatformCaughtUp,
			searchattr.PlatformPaused, searchattr.PlatformCaughtUp}, "**paused** · waiting: paused: maintenance"},
		{"breaker", true, []string{searchattr.PlatformBackfilling, searchattr.PlatformBreakerOpen,
			searchattr.PlatformBackfilling, searchattr.PlatformCaughtUp}, "**breaker_open** · waiting: circuit breaker open: 2 failed slices in a row"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Start = at("-1h").Format(time.RFC3339)
			p.BreakerFailures = 2
			p.Concurrency = 1
			mockAlerts(env, 0)
			mockDeadLetters(env, 0, false)
			var mu sync.Mutex
			down := tc.breaker
			mockPages(env, watchPages(env), func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				mu.Lock()
				defer mu.Unlock()
				if down {
					return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 503: down", activities.ErrPermanent, nil)
				}
				return onePage(in)
			}, nil)
			states := watchKeyword(env, searchattr.PlatformState)
			if !tc.breaker {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalPause, api.PauseRequest{Reason: "maintenance"}) }, 30*time.Minute)
			}
			// Resumed (the platform back), so the test's cancellation finds
			// the cursor waiting on a timer.
			env.RegisterDelayedCallback(func() {
				mu.Lock()
				down = false
				mu.Unlock()
				env.SignalWorkflow(api.SignalResume, nil)
			}, time.Hour)
			var details string
			env.RegisterDelayedCallback(func() { details = currentDetails(t, env) }, 50*time.Minute)
			stopAt(env, 90*time.Minute, nil)

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			require.Equal(t, tc.want, states.all())
			require.Contains(t, details, tc.details)
			require.Contains(t, details, "**Watermark** ")
			require.Contains(t, details, "**Breaker** ")
		})
	}
}
