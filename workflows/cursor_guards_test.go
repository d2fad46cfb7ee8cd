package workflows_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// ofKind filters recorded alerts.
func ofKind(a *alerts, kind string) []api.Alert {
	var out []api.Alert
	for _, al := range a.all() {
		if al.Kind == kind {
			out = append(out, al)
		}
	}
	return out
}

// TestBreakerOpensAfterConsecutiveFailuresAndResumeClosesIt: every page is
// refused; after breaker_failures failed slices in a row the cursor pauses
// itself, alerts once and starts nothing more; resume closes the breaker
// and, with the platform back, fetching goes on.
func TestBreakerOpensAfterConsecutiveFailuresAndResumeClosesIt(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Concurrency = 1
	p.BreakerFailures = 3
	var mu sync.Mutex
	down := true
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 401: token revoked", activities.ErrPermanent, nil)
		}
		return onePage(in)
	}, map[string]time.Duration{})
	mockDeadLetters(env, 0, false)
	al := mockAlerts(env, 0)

	var open api.CursorStatus
	var callsWhileOpen int
	env.RegisterDelayedCallback(func() {
		open = status(t, env)
		callsWhileOpen = len(pages.all())
		mu.Lock()
		down = false
		mu.Unlock()
		env.SignalWorkflow(api.SignalResume, nil)
	}, 30*time.Minute)
	var final api.CursorStatus
	stopAt(env, time.Hour, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.True(t, open.BreakerOpen)
	require.True(t, open.Paused)
	require.Contains(t, open.Waiting, api.WaitBreaker+": 3 failed slices in a row")
	require.Equal(t, 3, open.ConsecutiveFailures)
	require.Equal(t, 3, callsWhileOpen, "nothing starts once the breaker is open")
	opened := ofKind(al, api.AlertBreakerOpen)
	require.Len(t, opened, 1, "the breaker alerts once")
	require.Contains(t, opened[0].Message, "token revoked")

	require.False(t, final.BreakerOpen, "resume closes the breaker")
	require.False(t, final.Paused)
	require.Zero(t, final.ConsecutiveFailures)
	require.Greater(t, final.Counts.SlicesCompleted, int64(0), "fetching went on after resume")
}

// TestResweepFetchesRecentWindowsAgainAndCountsLateArrivals: with
// resweep_delay set, a window that was fetched while recent is fetched once
// more when it is resweep_delay old; orders that second fetch stores are
// late arrivals. Old backfill windows are not swept again.
func TestResweepFetchesRecentWindowsAgainAndCountsLateArrivals(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-30m").Format(time.RFC3339)
	p.ResweepDelay = config.Duration(10 * time.Minute)
	recent := api.SliceWorkflowID(platformName, at("-15m"), t0)
	old := api.SliceWorkflowID(platformName, at("-30m"), at("-15m"))
	pages := watchPages(env)
	var mu sync.Mutex
	fetches := map[string]int{}
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		mu.Lock()
		defer mu.Unlock()
		fetches[in.SliceID]++
		if in.SliceID == recent && fetches[in.SliceID] == 2 {
			return activities.FetchPageResult{Fetched: 5, Inserted: 2, Unchanged: 3}, nil // two showed up late
		}
		return onePage(in)
	}, nil)
	var final api.CursorStatus
	stopAt(env, 14*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, 1, fetches[old], "a window first fetched long after it closed needs no re-sweep")
	require.Equal(t, 2, fetches[recent], "the recent window is fetched again")
	var second time.Time
	for _, c := range pages.all() {
		if c.In.SliceID == recent {
			second = c.At
		}
	}
	require.Equal(t, at("10m"), second, "re-swept when the window is resweep_delay old")
	require.EqualValues(t, 2, final.Counts.LateArrivals)
	require.EqualValues(t, 1, final.Counts.Resweeps)
	require.Equal(t, at("-15m").Add(15*time.Minute), t0)
}

// TestLagAlertFiresOnceWhenCaughtUpCursorFallsBehind: once caught up, a
// slice that hangs holds the watermark back; when the lag passes lag_alert
// one alert goes out, even though nothing else wakes the cursor.
func TestLagAlertFiresOnceWhenCaughtUpCursorFallsBehind(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-30m").Format(time.RFC3339)
	p.Concurrency = 1
	p.LagAlert = config.Duration(40 * time.Minute)
	stuck := api.SliceWorkflowID(platformName, t0, at("15m"))
	pages := watchPages(env)
	mockPages(env, pages, onePage, map[string]time.Duration{stuck: 2 * time.Hour})
	al := mockAlerts(env, 0)
	stopAt(env, 90*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	lag := ofKind(al, api.AlertLag)
	require.Len(t, lag, 1, "one alert per episode")
	// The watermark is stuck at t0 (the hanging slice's start).
	require.Equal(t, t0.Add(40*time.Minute+time.Millisecond), lag[0].At.UTC())
	require.Contains(t, lag[0].Message, "behind")
}

// TestResweepWhenFirstFetchFinishesAfterTheDelay: the first fetch of a recent
// window starts in time but a retried page makes it finish after the window
// is resweep_delay old. Its first pages were read early, so the window is
// still swept again (found by the reliability work; guarded by GetVersion).
func TestResweepWhenFirstFetchFinishesAfterTheDelay(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-15m").Format(time.RFC3339)
	p.ResweepDelay = config.Duration(10 * time.Minute)
	p.Retries = 20
	p.RetryInterval = config.Duration(time.Minute)
	p.RetryBackoff = 1
	p.MaxRetryInterval = config.Duration(time.Minute)
	recent := api.SliceWorkflowID(platformName, at("-15m"), t0)
	pages := watchPages(env)
	var mu sync.Mutex
	var first, failures, resweeps int
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if in.SliceID != recent {
			return onePage(in)
		}
		switch {
		case in.Token == "" && first == 0: // page 1 read at +1m
			first++
			return activities.FetchPageResult{Fetched: 1, Inserted: 1, NextToken: "p2"}, nil
		case in.Token == "p2" && failures < 12: // page 2 fails until about +13m
			failures++
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		case in.Token == "":
			resweeps++
		}
		return onePage(in)
	}, nil)
	stopAt(env, 35*time.Minute, nil)
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)
	require.Equal(t, 12, failures)
	require.Equal(t, 1, resweeps, "first page read at +1m; the re-sweep must still run")
}

// TestNoLagAlertDuringBackfill: a backfill is behind by design. Slices take
// 10 minutes each, so the watermark trails the present by hours and, right
// after the last backfill slice starts, still by more than lag_alert; no
// alert may go out until the cursor has really caught up.
func TestNoLagAlertDuringBackfill(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-3h").Format(time.RFC3339)
	p.LagAlert = config.Duration(30 * time.Minute)
	delays := map[string]time.Duration{}
	for _, id := range tiles(at("-3h"), at("2h"), p.Interval.D()) {
		delays[id] = 10 * time.Minute
	}
	pages := watchPages(env)
	mockPages(env, pages, onePage, delays)
	al := mockAlerts(env, 0)
	var final api.CursorStatus
	stopAt(env, 2*time.Hour, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Empty(t, ofKind(al, api.AlertLag))
	require.Empty(t, ofKind(al, api.AlertStalled), "slices kept reporting: no stall")
	require.Less(t, final.LagSeconds, (30 * time.Minute).Seconds(), "it did catch up")
}

// TestStallAlertWhenNoSliceReports: a slice that never reports (a page
// waiting for a bucket forever, the livelock of issue 23) holds the cursor
// at its concurrency with nothing moving and no error. Once no slice has
// reported for stall_alert, one alert goes out, although nothing else
// wakes the cursor; it re-arms when a slice reports.
func TestStallAlertWhenNoSliceReports(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-30m").Format(time.RFC3339)
	p.Concurrency = 1
	p.StallAlert = config.Duration(time.Hour)
	stuck := api.SliceWorkflowID(platformName, t0, at("15m"))
	pages := watchPages(env)
	mockPages(env, pages, onePage, map[string]time.Duration{stuck: 3 * time.Hour})
	al := mockAlerts(env, 0)
	var during api.CursorStatus
	env.RegisterDelayedCallback(func() { during = status(t, env) }, 90*time.Minute)
	stopAt(env, 4*time.Hour, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	stalled := ofKind(al, api.AlertStalled)
	require.Len(t, stalled, 1, "one alert per episode")
	var started time.Time
	for _, c := range pages.all() {
		if c.In.SliceID == stuck && started.IsZero() {
			started = c.At
		}
	}
	require.False(t, started.IsZero())
	gap := stalled[0].At.Sub(started)
	require.True(t, gap >= time.Hour && gap < time.Hour+time.Minute, "alerted an hour after the slice started, got %s", gap)
	require.Contains(t, stalled[0].Message, "no progress")
	require.Contains(t, stalled[0].Message, "concurrency limit")
	require.Len(t, during.InFlight, 1)
}

// TestStatusShowsTheStatedRate: the request rate a platform states in its
// answers (a seller's plan below the configured rate) reaches the cursor's
// status from its slices' results.
func TestStatusShowsTheStatedRate(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-30m").Format(time.RFC3339)
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		r, err := onePage(in)
		r.StatedRate = 0.0167
		return r, err
	}, nil)
	var final api.CursorStatus
	stopAt(env, 20*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)
	require.Equal(t, 0.0167, final.StatedRate)
}
