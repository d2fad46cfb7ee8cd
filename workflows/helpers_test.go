package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// t0 is the test environment's clock at the start of every test: a Monday
// noon, so work windows and slice boundaries are easy to read.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

const platformName = "shop-x"

// acts names activities for OnActivity. A method value on an instance, not
// (*Activities).FetchPage: the SDK needs the registered signature, without
// the receiver parameter.
var acts = &activities.Activities{}

// testPlatform is a valid platform with small, readable numbers: 15-minute
// slices, 2-minute overlap, 1-minute settle, 4 in flight, 2 retries.
func testPlatform(t *testing.T) config.Platform {
	t.Helper()
	p := config.BuiltinDefaults()
	p.Name = platformName
	p.Kind = "sim"
	p.Endpoint = "http://127.0.0.1:1/shops/x"
	p.Credentials = config.CredentialRef{Env: "X"}
	p.Start = "2026-03-02T10:00:00Z"
	p.TaskQueue = "orders-x"
	p.Retries = 2
	p.RetryInterval = config.Duration(time.Second)
	p.RetryBackoff = 2
	p.MaxRetryInterval = config.Duration(10 * time.Second)
	require.Nil(t, p.Validate(), "test platform must be valid")
	return p
}

// newEnv returns a test environment with the workflows and activities
// registered and the clock at t0.
func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	workflows.Register(env)
	env.RegisterActivity(acts)
	env.SetStartTime(t0)
	env.SetTestTimeout(30 * time.Second)
	return env
}

// fetchCall is one FetchPage call as the activity saw it.
type fetchCall struct {
	In activities.FetchPageInput
	At time.Time // test clock when the activity ran
}

// pageLog records FetchPage calls; activities run on their own goroutines.
type pageLog struct {
	mu    sync.Mutex
	calls []fetchCall
}

func (l *pageLog) add(env *testsuite.TestWorkflowEnvironment, in activities.FetchPageInput) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fetchCall{In: in, At: env.Now()})
}

func (l *pageLog) all() []fetchCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]fetchCall(nil), l.calls...)
}

// slices returns the distinct slice IDs asked for, in first-call order.
func (l *pageLog) slices() []string {
	seen := map[string]bool{}
	var ids []string
	for _, c := range l.all() {
		if !seen[c.In.SliceID] {
			seen[c.In.SliceID] = true
			ids = append(ids, c.In.SliceID)
		}
	}
	return ids
}

// onePage mocks FetchPage as a single page of one order for every slice,
// recording each call.
func onePage(env *testsuite.TestWorkflowEnvironment, log *pageLog) {
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			log.add(env, in)
			return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
		}).Maybe()
}

// sliceID is the slice workflow ID of [start, start+d) on the test platform.
func sliceID(start time.Time, d time.Duration) string {
	return api.SliceWorkflowID(platformName, start, start.Add(d))
}

// tiles returns the IDs of consecutive d-long slices from from to to.
func tiles(from, to time.Time, d time.Duration) []string {
	var ids []string
	for s := from; s.Before(to); s = s.Add(d) {
		e := s.Add(d)
		if e.After(to) {
			e = to
		}
		ids = append(ids, api.SliceWorkflowID(platformName, s, e))
	}
	return ids
}

// cursorInput starts the test platform's cursor at its configured start.
func cursorInput(t *testing.T, p config.Platform) api.CursorInput {
	t.Helper()
	start, err := p.ResolveStart(t0)
	require.NoError(t, err)
	return api.CursorInput{Platform: p, Start: start}
}

// status queries the cursor's status.
func status(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.CursorStatus {
	t.Helper()
	v, err := env.QueryWorkflow(api.QueryStatus)
	require.NoError(t, err)
	var s api.CursorStatus
	require.NoError(t, v.Get(&s))
	return s
}

// stopAt cancels the workflow under test at t0+d, after fn (if any) ran.
func stopAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, fn func()) {
	env.RegisterDelayedCallback(func() {
		if fn != nil {
			fn()
		}
		env.CancelWorkflow()
	}, d)
}

// requireCanceled checks the workflow ended because the test cancelled it.
func requireCanceled(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.True(t, temporal.IsCanceledError(err), "want a cancellation, got %v", err)
}

// continuedAs decodes the cursor input carried by a continue-as-new.
func continuedAs(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.CursorInput {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "want continue-as-new, got %v", env.GetWorkflowError())
	require.Equal(t, api.CursorWorkflowType, can.WorkflowType.Name)
	var in api.CursorInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
	require.NotNil(t, in.State, "continue-as-new must carry the cursor state")
	return in
}
