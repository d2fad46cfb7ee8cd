package workflows_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/tuning"
	"github.com/ordersync/ordersync/workflows"
)

// childLog records the Slice workflows a cursor starts, with their input.
type childLog struct {
	mu     sync.Mutex
	inputs map[string]api.SliceInput
}

func watchChildren(env *testsuite.TestWorkflowEnvironment) *childLog {
	l := &childLog{inputs: map[string]api.SliceInput{}}
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in api.SliceInput
		if err := args.Get(&in); err != nil {
			panic(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inputs[info.WorkflowExecution.ID] = in
	})
	return l
}

func (l *childLog) get(id string) (api.SliceInput, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.inputs[id]
	return in, ok
}

func (l *childLog) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.inputs))
	for id := range l.inputs {
		ids = append(ids, id)
	}
	return sortedCopy(ids)
}

// callsOf are the FetchPage attempts of one window.
func callsOf(l *pageLog, id string) []fetchCall {
	var out []fetchCall
	for _, c := range l.all() {
		if c.In.SliceID == id {
			out = append(out, c)
		}
	}
	return out
}

// TestInlineLiveWindows: once caught up, a cursor fetches each settled
// live window itself, by one FetchPage activity attempt, and starts no child
// workflow for it; the backfill window before that is a child. The counts
// are the same as children would report. With live_windows: workflows
// every window is a child, as before.
func TestInlineLiveWindows(t *testing.T) {
	for _, mode := range []string{"", tuning.LiveWindowsWorkflows} {
		t.Run("live_windows="+mode, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Start = at("-30m").Format(time.RFC3339)
			p.LiveWindows = mode
			pages := watchPages(env)
			children := watchChildren(env)
			mockPages(env, pages, onePage, nil)
			var st api.CursorStatus
			stopAt(env, 61*time.Minute+30*time.Second, func() { st = status(t, env) })
			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			windows := gridTiles(at("-30m"), at("60m"), 15*time.Minute)
			require.Len(t, windows, 6)
			require.Equal(t, sliceIDs(pages.all()), sortedCopy(windows), "every window fetched")
			require.Equal(t, int64(6), st.Counts.SlicesCompleted)
			require.Equal(t, int64(6), st.Counts.OrdersInserted)
			if mode == tuning.LiveWindowsWorkflows {
				require.Equal(t, sortedCopy(windows), children.ids(), "a child per window")
				return
			}
			require.Equal(t, []string{windows[0]}, children.ids(), "only the backfill window is a child")
			for _, id := range windows[1:] {
				calls := callsOf(pages, id)
				require.Len(t, calls, 1, id)
				require.False(t, calls[0].Local, "%s: a regular activity, which holds no workflow task open", id)
			}
		})
	}
}

// liveRun is a cursor that caught up at t0 (one backfill window) and ran
// to +40m, its live window [+15m, +30m) answered by live and every other
// page by onePage.
type liveRun struct {
	p        api.Settings
	live     string
	pages    *pageLog
	children *childLog
	dead     *deadLetters
	status   api.CursorStatus
}

func runLiveWindow(t *testing.T, live func(in activities.FetchPageInput) (activities.FetchPageResult, error)) liveRun {
	t.Helper()
	env := newEnv(t)
	r := liveRun{p: testPlatform(t), live: sliceID(at("15m"), 15*time.Minute)}
	r.p.Start = at("-15m").Format(time.RFC3339)
	r.pages, r.children, r.dead = watchPages(env), watchChildren(env), mockDeadLetters(env, 0, false)
	var mu sync.Mutex // activities run on their own goroutines
	mockPages(env, r.pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if in.SliceID != r.live {
			return onePage(in)
		}
		mu.Lock()
		defer mu.Unlock()
		return live(in)
	}, nil)
	stopAt(env, 40*time.Minute, func() { r.status = status(t, env) })
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, r.p))
	requireStopped(t, env)
	return r
}

// TestInlineWindowHandedOverAfterAFailedAttempt: the first attempt at a
// live window fails (503); the window goes to a child Slice workflow that
// goes on from that attempt: it waits retry_interval and retries as a
// regular activity, so the platform is asked exactly as often as by a
// slice's own local-first page (no extra attempt), and the window is
// visible as a workflow.
func TestInlineWindowHandedOverAfterAFailedAttempt(t *testing.T) {
	failed := 0
	r := runLiveWindow(t, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if failed == 0 {
			failed++
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 503: try again", activities.ErrTransient)
		}
		return onePage(in)
	})

	in, ok := r.children.get(r.live)
	require.True(t, ok, "the failed window went to a child workflow: %v", r.children.ids())
	require.NotNil(t, in.Handover)
	require.Equal(t, 1, in.Handover.Page)
	require.NotNil(t, in.Handover.Attempt)
	require.Equal(t, activities.ErrTransient, in.Handover.Attempt.Type)
	require.Equal(t, "HTTP 503: try again", in.Handover.Attempt.Message)

	calls := callsOf(r.pages, r.live)
	require.Len(t, calls, 2, "the inline attempt and one retry: %+v", calls)
	require.False(t, calls[0].Local || calls[1].Local, "the cursor's attempt and the child's retry are regular activities")
	require.GreaterOrEqual(t, calls[1].At.Sub(calls[0].At), r.p.RetryInterval.D(), "after retry_interval")
	require.Equal(t, int64(0), r.status.Counts.SlicesFailed)
	require.Equal(t, int64(3), r.status.Counts.SlicesCompleted)
}

// TestInlineWindowHandedOverMidWindow: a live window's first page is
// stored inline and its second page fails; the child goes on from page 2
// with the token page 1 returned, so page 1 is not fetched again, and the
// window's counts include page 1.
func TestInlineWindowHandedOverMidWindow(t *testing.T) {
	failed := 0
	r := runLiveWindow(t, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if in.Page == 1 {
			return activities.FetchPageResult{Fetched: 2, Inserted: 2, NextToken: nextToken(in)}, nil
		}
		if failed == 0 {
			failed++
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 502", activities.ErrTransient)
		}
		return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
	})

	in, ok := r.children.get(r.live)
	require.True(t, ok)
	require.NotNil(t, in.Handover)
	require.Equal(t, 2, in.Handover.Page)
	require.Equal(t, "after-page-1", in.Handover.Token)
	require.Equal(t, 1, in.Handover.Counted.Pages)
	calls := callsOf(r.pages, r.live)
	require.Len(t, calls, 3, "page 1, page 2's inline attempt, page 2's retry: %+v", calls)
	for _, c := range calls[1:] {
		require.Equal(t, 2, c.In.Page)
		require.Equal(t, "after-page-1", c.In.Token)
	}
	// Three windows: two one-order pages and the live one's 2 + 1 orders.
	require.Equal(t, int64(5), r.status.Counts.OrdersInserted)
	require.Equal(t, int64(4), r.status.Counts.Pages)
}

// TestInlineWindowDeadLettered: a permanent error on the inline attempt
// hands the window to a child that records it in the dead-letter workflow
// at once, with that attempt counted, and fails visibly; the cursor counts
// a failed slice.
func TestInlineWindowDeadLettered(t *testing.T) {
	r := runLiveWindow(t, func(activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 401: invalid token", activities.ErrPermanent, nil)
	})

	require.Len(t, callsOf(r.pages, r.live), 1, "a permanent error is tried once")
	entries := r.dead.all()
	require.Len(t, entries, 1)
	require.Equal(t, r.live, entries[0].SliceID)
	require.Equal(t, 1, entries[0].Attempts)
	require.Equal(t, activities.ErrPermanent, entries[0].ErrorType)
	require.Contains(t, entries[0].Error, "HTTP 401: invalid token")
	require.Equal(t, int64(1), r.status.Counts.SlicesFailed)
}
