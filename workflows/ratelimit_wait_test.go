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

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// rateLimited is what FetchPage answers when the platform refused the
// attempt with its rate limit (429, THROTTLED): never retried by the
// activity, the platform's wait, and the refused attempt.
func rateLimited(ctx context.Context, wait time.Duration) error {
	attempt := 1
	if activity.IsActivity(ctx) {
		attempt = int(activity.GetInfo(ctx).Attempt)
	}
	return temporal.NewApplicationErrorWithOptions("fetch page 2 of slice: shop-x: rate limited (429), retry after "+wait.String(),
		activities.ErrRateLimited, temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: wait,
			Details: []any{activities.RateLimitAnswer{Attempt: attempt, Limit: 0.4}}})
}

// TestSliceRateLimitAnswersNeverCountAsAttempts: a page the platform
// answers 429 twenty times, then 200, completes with retries: 3; every wait
// is the platform's, on a durable timer, and none is an attempt (issue 23,
// items 2 and 6). Before, each 429 used an attempt and the slice was
// dead-lettered after four.
func TestSliceRateLimitAnswersNeverCountAsAttempts(t *testing.T) {
	for _, localFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "local first attempt", false: "regular activities"}[localFirst], func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Retries = 3
			pages := watchPages(env)
			var mu sync.Mutex
			refused := 0
			env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
				func(ctx context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
					mu.Lock()
					defer mu.Unlock()
					if in.Page == 1 {
						return activities.FetchPageResult{NextToken: "cursor-2", Fetched: 1, Inserted: 1}, nil
					}
					if refused < 20 {
						refused++
						return activities.FetchPageResult{}, rateLimited(ctx, 3*time.Minute)
					}
					return activities.FetchPageResult{Fetched: 2, Inserted: 2}, nil
				})
			dl := mockDeadLetters(env, 0, false)

			start, end := at("-1h"), at("-45m")
			env.ExecuteWorkflow("FetchSlice", api.SliceInput{Platform: p, Start: start, End: end, LocalFirst: localFirst})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res api.SliceResult
			require.NoError(t, env.GetWorkflowResult(&res))

			require.Equal(t, api.SliceCompleted, res.Outcome, res.Error)
			require.Equal(t, 3, res.OrdersInserted)
			require.Empty(t, dl.all())
			var page2 []fetchCall
			for _, c := range pages.all() {
				if c.In.Page == 2 {
					page2 = append(page2, c)
				}
			}
			require.Len(t, page2, 21)
			for i := 1; i < len(page2); i++ {
				require.Equal(t, 3*time.Minute, page2[i].At.Sub(page2[i-1].At), "call %d waits the platform's Retry-After", i)
				require.EqualValues(t, 1, page2[i].Attempt, "call %d is a first attempt: the 429 before it used none", i)
				require.Equal(t, "cursor-2", page2[i].In.Token, "the page asks again with its own token")
			}
		})
	}
}

// TestSliceRateLimitKeepsOtherFailuresCounted: attempts that failed for
// another reason before a rate-limit answer still count; the page asks
// again with the attempts left, so a platform that alternates 5xx and 429
// is dead-lettered after retries + 1 failed attempts, not never.
func TestSliceRateLimitKeepsOtherFailuresCounted(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Retries = 2 // 3 attempts
	pages := watchPages(env)
	var mu sync.Mutex
	refused := false
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if activity.GetInfo(ctx).Attempt == 2 && !refused {
				refused = true
				return activities.FetchPageResult{}, rateLimited(ctx, time.Minute)
			}
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		})
	dl := mockDeadLetters(env, 0, false)

	start, end := at("-1h"), at("-45m")
	env.ExecuteWorkflow("FetchSlice", api.SliceInput{Platform: p, Start: start, End: end})
	require.True(t, env.IsWorkflowCompleted())
	var res api.SliceResult
	require.NoError(t, env.GetWorkflowResult(&res))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Equal(t, activities.ErrTransient, res.ErrorType)
	// Attempt 1 fails (503), attempt 2 is refused (429: not counted), then
	// the page asks again with 2 attempts left: 503, 503.
	calls := pages.all()
	require.Len(t, calls, 4)
	require.Equal(t, []int32{1, 2, 1, 2}, []int32{calls[0].Attempt, calls[1].Attempt, calls[2].Attempt, calls[3].Attempt},
		"after the 429 the page asks again with the attempts the 503 left")
	require.Equal(t, time.Minute, calls[2].At.Sub(calls[1].At), "the platform's wait")
	// The entry's attempts add the server's count of the last activity
	// (which the test environment does not report: slice_test.go) to the
	// counted attempt before the 429.
	require.Len(t, dl.all(), 1)
}

// TestSliceRateLimitWaitBudgetEndsInDeadLetter: a platform that keeps
// refusing fails the page as rate-limited once waiting more would pass
// rate_limit_wait, and the dead-letter entry says so.
func TestSliceRateLimitWaitBudgetEndsInDeadLetter(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.RateLimitWait = config.Duration(time.Hour)
	pages := watchPages(env)
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			return activities.FetchPageResult{}, rateLimited(ctx, 10*time.Minute)
		})
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Equal(t, activities.ErrRateLimited, res.ErrorType)
	require.Contains(t, res.Error, "page 1: rate limited 7 time(s) over 1h0m0s; waiting 10m0s more would pass rate_limit_wait 1h0m0s; last answer: fetch page 2 of slice: shop-x: rate limited (429)")
	calls := pages.all()
	require.Len(t, calls, 7, "asked every 10 minutes for an hour")
	require.Equal(t, time.Hour, calls[6].At.Sub(calls[0].At))
	entries := dl.all()
	require.Len(t, entries, 1)
	require.Equal(t, activities.ErrRateLimited, entries[0].ErrorType)
}

// TestSliceFollowsARestartToken: an Amazon page whose token was refused
// comes back empty with a restart token (connectors, amazonRestartToken);
// the slice follows it like any token, the window's pages come again, and
// the slice completes with every page counted: one FetchPage, so one
// booked request slot, per request.
func TestSliceFollowsARestartToken(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	pages := watchPages(env)
	script := map[string]activities.FetchPageResult{
		"":                  {NextToken: "o26.100.first", Fetched: 2, Inserted: 2},
		"o26.100.first":     {NextToken: "amzn-restart.1.ab"}, // the token was refused: start over
		"amzn-restart.1.ab": {NextToken: "o26.200.first", Fetched: 2, Unchanged: 2},
		"o26.200.first":     {Fetched: 1, Inserted: 1},
	}
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		r, ok := script[in.Token]
		require.True(t, ok, "unexpected token %q", in.Token)
		return r, nil
	}, nil)
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceCompleted, res.Outcome, res.Error)
	require.Equal(t, 4, res.Pages)
	require.Equal(t, 3, res.OrdersInserted)
	require.Len(t, pages.all(), 4, "one request per page")
	require.Empty(t, dl.all())
}

// TestSliceRateLimitWaitsLengthenAfterPatience: a platform that asks for
// one second at a time is obeyed exactly for rateLimitPatience answers;
// after them the page waits at least rate_limit_wait/500, so its history
// holds a bounded number of waits before the budget ends it.
func TestSliceRateLimitWaitsLengthenAfterPatience(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.RateLimitWait = config.Duration(time.Hour)
	pages := watchPages(env)
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			return activities.FetchPageResult{}, rateLimited(ctx, time.Second)
		})
	mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Equal(t, activities.ErrRateLimited, res.ErrorType)
	calls := pages.all()
	for i := 1; i < len(calls); i++ {
		want := time.Second
		if i > 50 {
			want = time.Hour / 500
		}
		require.Equal(t, want, calls[i].At.Sub(calls[i-1].At), "wait before call %d", i)
	}
	require.Less(t, len(calls), 50+500+1, "bounded by the budget, not by the platform's one-second waits")
}
