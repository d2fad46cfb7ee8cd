package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/internal/tuning"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// t0 is the test clock at the start of every test: a Monday noon.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// platformName's phase (slicequeue.PhaseOf) is zero for every interval that
// divides a day, so its slice grid is whole intervals from UTC midnight and
// the tests read in round times; cursor_grid_test.go covers a platform
// whose phase is not zero.
const platformName = "shop-x38942"

// acts names activities for OnActivity. It is a method value on an
// instance, not (*Activities).FetchPage: the SDK matches the registered
// signature, which has no receiver parameter.
var acts = &activities.Activities{}

// at is t0 plus a readable offset ("-2h", "15m").
func at(offset string) time.Time {
	d, err := time.ParseDuration(offset)
	if err != nil {
		panic(err)
	}
	return t0.Add(d)
}

// testPlatform is a valid platform with readable numbers: 15-minute slices,
// 2-minute overlap, 1-minute settle, 4 in flight, 2 retries 1s apart, and a
// backfill that starts two hours before t0.
func testPlatform(t *testing.T) api.Settings {
	t.Helper()
	p := config.BuiltinDefaults()
	p.Name = platformName
	p.Kind = "sim"
	p.Endpoint = "http://127.0.0.1:1/shops/x"
	p.Credentials = config.CredentialRef{Env: "X"}
	p.Start = at("-2h").Format(time.RFC3339)
	p.TaskQueue = "orders-x"
	p.Retries = 2
	p.RetryInterval = config.Duration(time.Second)
	p.RetryBackoff = 2
	p.MaxRetryInterval = config.Duration(10 * time.Second)
	p.BackfillMaxSpan = 0 // one-interval slices; cursor_span_test.go turns sizing on
	require.Nil(t, p.Validate(), "test platform must be valid")
	return p.Settings()
}

// newEnv returns a test environment with the workflows and activities
// registered, the clock at t0, and the SDK's logs dropped (failing
// activities are what these tests are about).
func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	workflows.Register(env)
	env.RegisterActivity(acts)
	env.SetStartTime(t0)
	env.SetTestTimeout(20 * time.Second)
	return env
}

// fetchCall is one FetchPage attempt, as the activity saw it.
type fetchCall struct {
	In      activities.FetchPageInput
	At      time.Time // test clock when the attempt started
	Attempt int32
	Local   bool // a page's first attempt, run as a local activity
}

// pageLog records FetchPage attempts (when they start) and slices whose
// last page has been stored (when it returns). Activities run on their own
// goroutines, hence the lock.
type pageLog struct {
	mu       sync.Mutex
	calls    []fetchCall
	finished map[string]time.Time
	// windows is when each inline window's FetchWindow started: its pages
	// are logged as attempts started then, however long the mock delays.
	windows map[string]time.Time
}

// watchPages records every FetchPage attempt's input and start time.
func watchPages(env *testsuite.TestWorkflowEnvironment) *pageLog {
	l := &pageLog{finished: map[string]time.Time{}, windows: map[string]time.Time{}}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name == "FetchWindow" {
			var in activities.FetchWindowInput
			if err := args.Get(&in); err != nil {
				panic(err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.windows[in.SliceID] = env.Now().UTC()
			return
		}
		if info.ActivityType.Name != "FetchPage" {
			return
		}
		var in activities.FetchPageInput
		if err := args.Get(&in); err != nil {
			panic(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, fetchCall{In: in, At: env.Now().UTC(), Attempt: info.Attempt})
	})
	// A page's first attempt is a local activity (SliceInput.LocalFirst).
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []interface{}) {
		if info.ActivityType.Name != "FetchPage" || len(args) == 0 {
			return
		}
		in, ok := args[0].(activities.FetchPageInput)
		if !ok {
			panic(fmt.Sprintf("FetchPage local activity input is %T", args[0]))
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, fetchCall{In: in, At: env.Now().UTC(), Attempt: info.Attempt, Local: true})
	})
	return l
}

func (l *pageLog) finish(id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finished[id] = at
}

func (l *pageLog) all() []fetchCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]fetchCall(nil), l.calls...)
}

// since returns the attempts started at or after t.
func (l *pageLog) since(t time.Time) []fetchCall {
	var out []fetchCall
	for _, c := range l.all() {
		if !c.At.Before(t) {
			out = append(out, c)
		}
	}
	return out
}

// finishedAt is when the slice's last page was stored (zero: not yet).
func (l *pageLog) finishedAt(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finished[id]
}

// isFinished says whether the slice's last page had been stored.
func (l *pageLog) isFinished(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.finished[id]
	return ok
}

// sliceIDs returns the distinct slice IDs of calls, sorted.
func sliceIDs(calls []fetchCall) []string {
	seen := map[string]bool{}
	ids := []string{}
	for _, c := range calls {
		if !seen[c.In.SliceID] {
			seen[c.In.SliceID] = true
			ids = append(ids, c.In.SliceID)
		}
	}
	sort.Strings(ids)
	return ids
}

// pageResult decides one page: the result, or an error.
type pageResult func(in activities.FetchPageInput) (activities.FetchPageResult, error)

// onePage is a page of one new order and no next page.
func onePage(activities.FetchPageInput) (activities.FetchPageResult, error) {
	return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
}

// mockPages mocks FetchPage with fn, taking delay(sliceID) of test-clock
// time for the listed slices and no time for the others. A slice counts as
// finished in l when a page without a next token returns.
func mockPages(env *testsuite.TestWorkflowEnvironment, l *pageLog, fn pageResult, delays map[string]time.Duration) {
	ret := func(_ context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
		r, err := fn(in)
		if err == nil && r.NextToken == "" {
			l.finish(in.SliceID, env.Now().UTC())
		}
		return r, err
	}
	ids := make([]string, 0, len(delays))
	for id := range delays {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		env.OnActivity(acts.FetchPage, mock.Anything, mock.MatchedBy(func(in activities.FetchPageInput) bool {
			return in.SliceID == id
		})).After(delays[id]).Return(ret).Maybe()
	}
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(ret).Maybe()
	// A cursor's inline window (FetchWindow) pages through the same mock,
	// each page logged as a FetchPage attempt.
	window := func(ctx context.Context, in activities.FetchWindowInput) (activities.FetchWindowResult, error) {
		return activities.PageThroughWindow(ctx, in, func(ctx context.Context, p activities.FetchPageInput) (activities.FetchPageResult, error) {
			l.mu.Lock()
			at, ok := l.windows[p.SliceID]
			if !ok {
				at = env.Now().UTC()
			}
			l.calls = append(l.calls, fetchCall{In: p, At: at, Attempt: 1})
			l.mu.Unlock()
			return ret(ctx, p)
		})
	}
	for _, id := range ids {
		env.OnActivity(acts.FetchWindow, mock.Anything, mock.MatchedBy(func(in activities.FetchWindowInput) bool {
			return in.SliceID == id
		})).After(delays[id]).Return(window).Maybe()
	}
	env.OnActivity(acts.FetchWindow, mock.Anything, mock.Anything).Return(window).Maybe()
}

// window parses a slice ID back into its [start, end).
func window(t *testing.T, id string) api.Range {
	t.Helper()
	p, s, e, err := api.ParseSliceWorkflowID(id)
	require.NoError(t, err)
	require.Equal(t, platformName, p)
	return api.Range{Start: s, End: e}
}

// tiles returns the IDs of consecutive d-long slices from from to to; the
// last one ends at to even if shorter.
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

// gridTiles returns the IDs of [from, to) cut at the slice grid of
// platformName (whole multiples of d from midnight: its phase is zero).
func gridTiles(from, to time.Time, d time.Duration) []string {
	var ids []string
	for s := from; s.Before(to); {
		e := s.Truncate(d).Add(d)
		if e.After(to) {
			e = to
		}
		ids = append(ids, api.SliceWorkflowID(platformName, s, e))
		s = e
	}
	return ids
}

// cursorInput starts the cursor at the platform's configured start.
func cursorInput(t *testing.T, p api.Settings) api.CursorInput {
	t.Helper()
	start, err := tuning.ParseStart(p.Start, t0)
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

// every runs fn at t0+step, t0+2*step, ... up to t0+until.
func every(env *testsuite.TestWorkflowEnvironment, step, until time.Duration, fn func()) {
	for d := step; d <= until; d += step {
		env.RegisterDelayedCallback(fn, d)
	}
}

// stopAt runs fn (if any) at t0+d and then cancels the workflow under test;
// cursors and dead-letter workflows never end on their own.
func stopAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, fn func()) {
	env.RegisterDelayedCallback(func() {
		if fn != nil {
			fn()
		}
		env.CancelWorkflow()
	}, d)
}

// requireStopped checks the workflow ran until the test cancelled it.
func requireStopped(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.True(t, temporal.IsCanceledError(err), "want the test's cancellation, got %v", err)
}

// continuedAs decodes the input a workflow continued as new with.
func continuedAs(t *testing.T, env *testsuite.TestWorkflowEnvironment, workflowType string, into any) {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "want continue-as-new, got %v", env.GetWorkflowError())
	require.Equal(t, workflowType, can.WorkflowType.Name)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, into))
}

// unfinished returns the status's in-flight and queued slices.
func unfinished(s api.CursorStatus) []api.SliceView {
	return append(append([]api.SliceView{}, s.InFlight...), s.Queued...)
}

// covered says whether the union of ranges covers [from, to).
func covered(ranges []api.Range, from, to time.Time) bool {
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Start.Before(ranges[j].Start) })
	reach := from
	for _, r := range ranges {
		if r.Start.After(reach) {
			break
		}
		if r.End.After(reach) {
			reach = r.End
		}
	}
	return !reach.Before(to)
}

// updateOutcome collects what the test environment reports for one update.
type updateOutcome struct {
	accepted bool
	rejected error
	done     bool
	result   any
	err      error
}

// sendUpdate sends an update from inside a delayed callback; the outcome
// fills in as the workflow handles it.
func sendUpdate(env *testsuite.TestWorkflowEnvironment, name string, args ...any) *updateOutcome {
	o := &updateOutcome{}
	updateSeq++
	env.UpdateWorkflow(name, fmt.Sprintf("%s-%d", name, updateSeq), &testsuite.TestUpdateCallback{
		OnAccept: func() { o.accepted = true },
		OnReject: func(err error) { o.rejected = err },
		OnComplete: func(res any, err error) {
			o.done, o.result, o.err = true, res, err
		},
	}, args...)
	return o
}

var updateSeq int

func sortedCopy(ids []string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	return out
}

// sliceID is the workflow ID of the slice [start, start+d).
func sliceID(start time.Time, d time.Duration) string {
	return api.SliceWorkflowID(platformName, start, start.Add(d))
}

// nextToken is a fresh next-page token for the page after in, as a
// well-behaved platform hands out.
func nextToken(in activities.FetchPageInput) string {
	return fmt.Sprintf("after-page-%d", in.Page)
}
