package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// deadLetters records RecordDeadLetter calls; signal, when set, plays the
// real activity's signal to a dead-letter workflow under test.
type deadLetters struct {
	mu      sync.Mutex
	entries []api.DeadLetterEntry
	at      []time.Time
}

func (d *deadLetters) all() []api.DeadLetterEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]api.DeadLetterEntry(nil), d.entries...)
}

func (d *deadLetters) times() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.at...)
}

// mockDeadLetters mocks RecordDeadLetter, taking delay of test-clock time.
// With forward set it signals the entry to the workflow under test (a
// dead-letter workflow), as the real activity does by signal-with-start.
func mockDeadLetters(env *testsuite.TestWorkflowEnvironment, delay time.Duration, forward bool) *deadLetters {
	d := &deadLetters{}
	env.OnActivity(acts.RecordDeadLetter, mock.Anything, mock.Anything).After(delay).Return(
		func(_ context.Context, in activities.RecordDeadLetterInput) error {
			d.mu.Lock()
			d.entries = append(d.entries, in.Entry)
			d.at = append(d.at, env.Now().UTC())
			d.mu.Unlock()
			if forward {
				env.SignalWorkflow(api.SignalDeadLetterAdd, in.Entry)
			}
			return nil
		}).Maybe()
	return d
}

// runSlice runs FetchSlice alone as the workflow under test.
func runSlice(t *testing.T, env *testsuite.TestWorkflowEnvironment, p api.Settings, start, end time.Time) api.SliceResult {
	t.Helper()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SliceWorkflowID(p.Name, start, end)})
	env.ExecuteWorkflow(workflows.FetchSlice, api.SliceInput{Platform: p, Start: start, End: end, LocalFirst: true})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res api.SliceResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// TestSliceFailureReachesDeadLetter: a page that keeps failing is retried
// as the platform says (retries + 1 attempts, growing interval), a
// permanent error is tried once, and either way the slice is recorded in
// the dead-letter workflow with its ID, window, error and attempts before
// the slice reports "failed".
func TestSliceFailureReachesDeadLetter(t *testing.T) {
	cases := []struct {
		name         string
		err          error
		msg          string
		failFromPage int
		wantAttempts int // attempts of the failing page
		// entryAttempts is what the entry reports. The test environment
		// reports no retry state, so an exhausted page reads as the local
		// first attempt plus 1 here; slice_errors_internal_test.go covers
		// the server's failure shape.
		entryAttempts int
		wantType      string
		wantOffsets   []time.Duration // attempt start times of the failing page
	}{
		{"retryable until exhausted", temporal.NewApplicationError("HTTP 503 from platform", activities.ErrTransient), "HTTP 503 from platform", 1, 3, 2, activities.ErrTransient,
			[]time.Duration{0, time.Second, 3 * time.Second}},
		{"permanent, non-retryable", temporal.NewNonRetryableApplicationError("HTTP 401: bad credentials", activities.ErrPermanent, nil), "HTTP 401: bad credentials", 1, 1, 1, activities.ErrPermanent,
			[]time.Duration{0}},
		{"permanent by type", temporal.NewApplicationError("HTTP 401: bad credentials", activities.ErrPermanent), "HTTP 401: bad credentials", 1, 1, 1, activities.ErrPermanent,
			[]time.Duration{0}},
		{"second page exhausted", temporal.NewApplicationError("HTTP 503 from platform", activities.ErrTransient), "HTTP 503 from platform", 2, 3, 2, activities.ErrTransient,
			[]time.Duration{0, time.Second, 3 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				if in.Page >= tc.failFromPage {
					return activities.FetchPageResult{}, tc.err
				}
				return activities.FetchPageResult{NextToken: "next", Fetched: 3, Inserted: 3}, nil
			}, nil)
			dl := mockDeadLetters(env, 0, false)
			start, end := at("-1h"), at("-45m")

			res := runSlice(t, env, p, start, end)

			require.Equal(t, api.SliceFailed, res.Outcome)
			require.Equal(t, tc.failFromPage-1, res.Pages)
			var failing []fetchCall
			for _, c := range pages.all() {
				if c.In.Page == tc.failFromPage {
					failing = append(failing, c)
				}
			}
			require.Len(t, failing, tc.wantAttempts, "attempts of the failing page")
			for i, c := range failing {
				require.Equal(t, failing[0].At.Add(tc.wantOffsets[i]), c.At, "attempt %d", i+1)
				require.Equal(t, i == 0, c.Local, "attempt %d: only the first is a local activity", i+1)
			}
			entries := dl.all()
			require.Len(t, entries, 1, "recorded once")
			failedAt := failing[len(failing)-1].At
			require.Equal(t, api.DeadLetterEntry{
				SliceID:       api.SliceWorkflowID(platformName, start, end),
				Platform:      platformName,
				Start:         start,
				End:           end,
				Error:         tc.msg,
				ErrorType:     tc.wantType,
				Attempts:      tc.entryAttempts,
				FirstFailedAt: failedAt,
				LastFailedAt:  failedAt,
			}, normalize(entries[0]))
			require.Equal(t, tc.msg, res.Error, "the platform's message, without Temporal's decoration")
			require.Equal(t, tc.wantType, res.ErrorType)
		})
	}
}

// TestSliceRecoversWithinRetries: a page that fails fewer times than the
// retries allow completes the slice and records nothing.
func TestSliceRecoversWithinRetries(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	pages := watchPages(env)
	var mu sync.Mutex
	failures := 0
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if in.Page == 2 && failures < p.Retries {
			failures++
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 429", activities.ErrRateLimited)
		}
		if in.Page == 1 {
			require.Empty(t, in.Token)
			return activities.FetchPageResult{NextToken: "cursor-2", Fetched: 100, Inserted: 60, Updated: 40}, nil
		}
		require.Equal(t, "cursor-2", in.Token, "page 2 must carry page 1's token")
		return activities.FetchPageResult{Fetched: 5, Unchanged: 4, OutsideRange: 1, Inserted: 1}, nil
	}, nil)
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceResult{Outcome: api.SliceCompleted, Pages: 2, OrdersFetched: 105, OrdersInserted: 61,
		OrdersUpdated: 40, OrdersUnchanged: 4, OrdersOutsideRange: 1}, res)
	calls := pages.all()
	require.Len(t, calls, 1+p.Retries+1)
	// Each page starts as a local activity; only page 2's retries, after
	// the local attempt failed, are regular activities.
	for i, c := range calls {
		require.Equal(t, i < 2, c.Local, "call %d (page %d)", i, c.In.Page)
	}
	require.Empty(t, dl.all())
}

// TestSliceRunawayPagingFails: a window too narrow to split whose platform
// hands out next tokens forever ends in the dead-letter workflow after
// max_pages * 20 pages instead of looping.
func TestSliceRunawayPagingFails(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.MaxPages = 2
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{NextToken: nextToken(in)}, nil
	}, nil)
	dl := mockDeadLetters(env, 0, false)
	start := at("-1h")

	res := runSlice(t, env, p, start, start.Add(workflows.MinSliceSpan))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Len(t, pages.all(), 2*20)
	require.Len(t, dl.all(), 1)
	require.Contains(t, dl.all()[0].Error, "keeps returning next-page tokens for a 1s window")
}

// TestSliceSplitsAfterMaxPages: a wide window that still has a next page
// after max_pages reports "split" without fetching further.
func TestSliceSplitsAfterMaxPages(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.MaxPages = 3
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{NextToken: nextToken(in), Fetched: 1, Inserted: 1}, nil
	}, nil)
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceSplit, res.Outcome)
	require.Equal(t, 3, res.Pages)
	require.Len(t, pages.all(), 3)
	require.Empty(t, dl.all())
}

// normalize puts an entry's times in UTC for comparison.
func normalize(e api.DeadLetterEntry) api.DeadLetterEntry {
	e.Start, e.End = e.Start.UTC(), e.End.UTC()
	e.FirstFailedAt, e.LastFailedAt = e.FirstFailedAt.UTC(), e.LastFailedAt.UTC()
	return e
}

// TestSlicePageRetryWaits: after a failed local first attempt the retry
// waits for the platform's Retry-After when it gave one, else for
// retry_interval; with retries 0 the local attempt is the only one.
func TestSlicePageRetryWaits(t *testing.T) {
	rateLimited := temporal.NewApplicationErrorWithOptions("HTTP 429", activities.ErrRateLimited,
		temporal.ApplicationErrorOptions{NextRetryDelay: 7 * time.Second})
	cases := []struct {
		name      string
		retries   int
		err       error
		wantCalls int
		wantWait  time.Duration // between the local attempt and the first retry
	}{
		{"retry-after", 2, rateLimited, 2, 7 * time.Second},
		{"retry interval", 2, temporal.NewApplicationError("HTTP 503", activities.ErrTransient), 2, time.Second},
		{"no retries", 0, temporal.NewApplicationError("HTTP 503", activities.ErrTransient), 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Retries = tc.retries
			pages := watchPages(env)
			var mu sync.Mutex
			failed := false
			mockPages(env, pages, func(activities.FetchPageInput) (activities.FetchPageResult, error) {
				mu.Lock()
				defer mu.Unlock()
				if !failed {
					failed = true
					return activities.FetchPageResult{}, tc.err
				}
				return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
			}, nil)
			dl := mockDeadLetters(env, 0, false)

			res := runSlice(t, env, p, at("-1h"), at("-45m"))

			calls := pages.all()
			require.Len(t, calls, tc.wantCalls)
			require.True(t, calls[0].Local)
			if tc.wantCalls == 1 {
				require.Equal(t, api.SliceFailed, res.Outcome)
				require.Len(t, dl.all(), 1)
				require.Equal(t, 1, dl.all()[0].Attempts)
				return
			}
			require.Equal(t, api.SliceCompleted, res.Outcome)
			require.False(t, calls[1].Local)
			require.Equal(t, tc.wantWait, calls[1].At.Sub(calls[0].At))
			require.Empty(t, dl.all())
		})
	}
}

// TestSliceWithoutLocalFirstUsesActivitiesOnly: a slice started by an older
// cursor (no local_first in its input) pages with regular activities only,
// as its recorded history did.
func TestSliceWithoutLocalFirstUsesActivitiesOnly(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if in.Page == 1 {
			return activities.FetchPageResult{NextToken: "p2", Fetched: 1}, nil
		}
		return activities.FetchPageResult{Fetched: 1}, nil
	}, nil)
	mockDeadLetters(env, 0, false)
	start, end := at("-1h"), at("-45m")
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SliceWorkflowID(p.Name, start, end)})

	env.ExecuteWorkflow(workflows.FetchSlice, api.SliceInput{Platform: p, Start: start, End: end})

	require.NoError(t, env.GetWorkflowError())
	calls := pages.all()
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.False(t, c.Local, "page %d", c.In.Page)
	}
}
