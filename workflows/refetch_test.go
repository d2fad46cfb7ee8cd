package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/workflows"
)

// refetchCall is one RefetchOrder attempt as the activity saw it.
type refetchCall struct {
	At       time.Time
	OrderID  string
	Queue    string
	Priority temporal.Priority
	Attempt  int32
}

type refetchLog struct {
	mu    sync.Mutex
	calls []refetchCall
}

func (l *refetchLog) all() []refetchCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]refetchCall(nil), l.calls...)
}

// mockRefetch answers RefetchOrder with fn, the n-th call (0-based) getting n.
func mockRefetch(env *testsuite.TestWorkflowEnvironment, fn func(n int, in activities.RefetchOrderInput) (api.RefetchResult, error)) *refetchLog {
	l := &refetchLog{}
	env.OnActivity(acts.RefetchOrder, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.RefetchOrderInput) (api.RefetchResult, error) {
			info := activity.GetInfo(ctx)
			l.mu.Lock()
			n := len(l.calls)
			l.calls = append(l.calls, refetchCall{At: env.Now().UTC(), OrderID: in.OrderID, Queue: info.TaskQueue, Priority: info.Priority, Attempt: info.Attempt})
			l.mu.Unlock()
			return fn(n, in)
		}).Maybe()
	return l
}

func runRefetch(t *testing.T, env *testsuite.TestWorkflowEnvironment, in api.RefetchInput) (api.RefetchResult, error) {
	t.Helper()
	env.ExecuteWorkflow(api.RefetchWorkflowType, in)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return api.RefetchResult{}, err
	}
	var res api.RefetchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, nil
}

// TestRefetchStoresOneOrderOnThePlatformsQueue: one call, on the
// platform's task queue, and the activity's outcome is the workflow's.
func TestRefetchStoresOneOrderOnThePlatformsQueue(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockRefetch(env, func(_ int, in activities.RefetchOrderInput) (api.RefetchResult, error) {
		return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchUpdated}, nil
	})
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "1000000042"})
	require.NoError(t, err)
	require.Equal(t, api.RefetchUpdated, res.Outcome)
	require.Equal(t, "1000000042", res.OrderID)
	calls := log.all()
	require.Len(t, calls, 1)
	require.Equal(t, p.TaskQueue, calls[0].Queue)
}

// TestRefetchPriorityIsAboveBackfillAndKeepsTheFairnessKey: the options
// every refetch task is scheduled with.
func TestRefetchPriorityIsAboveBackfillAndKeepsTheFairnessKey(t *testing.T) {
	p := testPlatform(t)
	opts := workflows.RefetchActivityOptions(p, api.RefetchDefaultPriority)
	require.Equal(t, p.TaskQueue, opts.TaskQueue)
	require.Equal(t, fairness.Key(p.Name), opts.Priority.FairnessKey, "the platform's fairness key stays")
	require.Less(t, opts.Priority.PriorityKey, api.BackfillPriority, "served before backfill pages (lower key first)")
	require.Equal(t, []string{activities.ErrPermanent}, opts.RetryPolicy.NonRetryableErrorTypes)
	require.Equal(t, 5, workflows.RefetchPriority(p.Name, 5).PriorityKey)
}

// TestRefetchNotFoundIsReportedNotRetried: the platform's "no such order"
// is an outcome: one call, the workflow completes.
func TestRefetchNotFoundIsReportedNotRetried(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockRefetch(env, func(_ int, in activities.RefetchOrderInput) (api.RefetchResult, error) {
		return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchNotFound}, nil
	})
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "nope"})
	require.NoError(t, err)
	require.Equal(t, api.RefetchNotFound, res.Outcome)
	require.Len(t, log.all(), 1)
}

// TestRefetchWaitsForTheRateLimitWithoutSpendingAttempts: request slots
// booked out and a 429 are waits on durable timers of the delay the
// activity asked for; none counts as an attempt, so a platform with
// retries: 0 still gets its order.
func TestRefetchWaitsForTheRateLimitWithoutSpendingAttempts(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Retries = 0
	log := mockRefetch(env, func(n int, in activities.RefetchOrderInput) (api.RefetchResult, error) {
		switch n {
		case 0, 1:
			return api.RefetchResult{}, slotBusy(30 * time.Second)
		case 2:
			return api.RefetchResult{}, temporal.NewApplicationErrorWithOptions("429", activities.ErrRateLimited,
				temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: 7 * time.Second, Details: []any{activities.RateLimitAnswer{Attempt: 1}}})
		}
		return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchCreated}, nil
	})
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "A-1", Priority: 1})
	require.NoError(t, err)
	require.Equal(t, api.RefetchCreated, res.Outcome)
	require.Equal(t, 3, res.Waits)
	require.Zero(t, res.Attempts)
	calls := log.all()
	require.Len(t, calls, 4)
	require.Equal(t, 30*time.Second, calls[1].At.Sub(calls[0].At))
	require.Equal(t, 30*time.Second, calls[2].At.Sub(calls[1].At))
	require.Equal(t, 7*time.Second, calls[3].At.Sub(calls[2].At))
}

// TestRefetchGivesUpPastRateLimitWait: a platform that keeps its slots
// booked out ends the refetch within rate_limit_wait, failed and saying so.
func TestRefetchGivesUpPastRateLimitWait(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.RateLimitWait = api.Duration(10 * time.Minute)
	log := mockRefetch(env, func(int, activities.RefetchOrderInput) (api.RefetchResult, error) {
		return api.RefetchResult{}, slotBusy(time.Minute)
	})
	_, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "A-1"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, api.ErrRefetchFailed, app.Type())
	require.Contains(t, app.Error(), "rate_limit_wait")
	require.Len(t, log.all(), 11, "one call a minute, at 0 to 10 minutes: the next wait would pass 10 minutes")
}

// TestRefetchPermanentErrorFailsAtOnce: credentials refused, or a kind
// without a get-one-order call, is not retried.
func TestRefetchPermanentErrorFailsAtOnce(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockRefetch(env, func(int, activities.RefetchOrderInput) (api.RefetchResult, error) {
		return api.RefetchResult{}, temporal.NewNonRetryableApplicationError("shop-x: HTTP 401: bad token", activities.ErrPermanent, nil)
	})
	_, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "A-1"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, api.ErrRefetchFailed, app.Type())
	require.Contains(t, app.Error(), "HTTP 401")
	require.Len(t, log.all(), 1)
}

// TestRefetchRetriesTransientFailures: a 5xx is retried with the
// platform's retry policy (2 retries), then the order is stored.
func TestRefetchRetriesTransientFailures(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockRefetch(env, func(n int, in activities.RefetchOrderInput) (api.RefetchResult, error) {
		if n < 2 {
			return api.RefetchResult{}, temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchUnchanged}, nil
	})
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "A-1"})
	require.NoError(t, err)
	require.Equal(t, api.RefetchUnchanged, res.Outcome)
	require.Len(t, log.all(), 3)
}

// TestRefetchRefusesBadInput: an id no platform hands out, or a priority
// outside 1-5, fails before any call.
func TestRefetchRefusesBadInput(t *testing.T) {
	for _, in := range []api.RefetchInput{
		{OrderID: ""}, {OrderID: "a\nb"}, {OrderID: " a"}, {OrderID: "a", Priority: 6}, {OrderID: "a", Priority: -1},
	} {
		env := newEnv(t)
		in.Platform = testPlatform(t)
		log := mockRefetch(env, func(int, activities.RefetchOrderInput) (api.RefetchResult, error) {
			return api.RefetchResult{}, nil
		})
		_, err := runRefetch(t, env, in)
		require.Error(t, err, "%+v", in)
		require.Empty(t, log.all())
	}
}

// mockSlowRefetch answers every RefetchOrder with outcome updated after
// took on the workflow's clock, recording when each call started.
func mockSlowRefetch(env *testsuite.TestWorkflowEnvironment, took time.Duration) *refetchLog {
	l := &refetchLog{}
	env.OnActivity(acts.RefetchOrder, mock.Anything, mock.Anything).After(took).Return(
		func(ctx context.Context, in activities.RefetchOrderInput) (api.RefetchResult, error) {
			l.mu.Lock()
			l.calls = append(l.calls, refetchCall{At: env.Now().UTC(), OrderID: in.OrderID})
			l.mu.Unlock()
			return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchUpdated}, nil
		}).Maybe()
	return l
}

// TestRefetchAgainSignalDuringTheFetchFetchesOnceMore: a burst of again
// signals (webhook events) while the fetch is in flight is exactly one
// more fetch after it, the fetch that may have read the order before the
// latest change.
func TestRefetchAgainSignalDuringTheFetchFetchesOnceMore(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockSlowRefetch(env, 5*time.Second)
	for _, at := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.RefetchSignalAgain, nil) }, at)
	}
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "1000000042"})
	require.NoError(t, err)
	require.Equal(t, api.RefetchUpdated, res.Outcome)
	require.Equal(t, 2, res.Fetches)
	require.Len(t, log.all(), 2, "three events during one fetch: one more fetch")
}

// TestRefetchAgainSignalBeforeTheFetchIsCoveredByIt: an again signal that
// arrives while the refetch waits for the platform's rate, before its
// call, asks for nothing more: that call reads the order after it.
func TestRefetchAgainSignalBeforeTheFetchIsCoveredByIt(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockRefetch(env, func(n int, in activities.RefetchOrderInput) (api.RefetchResult, error) {
		if n == 0 {
			return api.RefetchResult{}, slotBusy(10 * time.Second)
		}
		return api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID, Outcome: api.RefetchCreated}, nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.RefetchSignalAgain, nil) }, 5*time.Second)
	res, err := runRefetch(t, env, api.RefetchInput{Platform: p, OrderID: "1000000042"})
	require.NoError(t, err)
	require.Equal(t, api.RefetchCreated, res.Outcome)
	require.Zero(t, res.Fetches)
	require.Equal(t, 1, res.Waits)
	require.Len(t, log.all(), 2, "one wait, one call")
}

// TestRefetchAgainSignalsWithoutEndContinueAsNew: events that keep coming
// during every fetch make at most maxRefetchFetches fetches in one run,
// then the run continues as new, so its history stays bounded.
func TestRefetchAgainSignalsWithoutEndContinueAsNew(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	log := mockSlowRefetch(env, 5*time.Second)
	for i := 1; i < 60; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.RefetchSignalAgain, nil) }, time.Duration(i)*time.Second)
	}
	env.ExecuteWorkflow(api.RefetchWorkflowType, api.RefetchInput{Platform: p, OrderID: "1000000042"})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	require.Len(t, log.all(), 10)
}
