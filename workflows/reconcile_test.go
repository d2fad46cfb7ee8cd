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
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/tuning"
	"github.com/ordersync/ordersync/workflows"
)

// reconcileLog records the reconciliation's activity calls.
type reconcileLog struct {
	mu        sync.Mutex
	counts    []activities.ReconcileCountInput
	countAt   []time.Time
	reprocess []activities.ReconcileReprocessInput
	alerts    []api.Alert
}

func (l *reconcileLog) snapshot() reconcileLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return reconcileLog{counts: append([]activities.ReconcileCountInput(nil), l.counts...), countAt: append([]time.Time(nil), l.countAt...),
		reprocess: append([]activities.ReconcileReprocessInput(nil), l.reprocess...), alerts: append([]api.Alert(nil), l.alerts...)}
}

// mockReconcile answers ReconcileCount with fn (n: the call's index) and
// records reprocess requests and alerts.
func mockReconcile(env *testsuite.TestWorkflowEnvironment, fn func(n int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error)) *reconcileLog {
	l := &reconcileLog{}
	env.OnActivity(acts.ReconcileCount, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
			l.mu.Lock()
			n := len(l.counts)
			l.counts = append(l.counts, in)
			l.countAt = append(l.countAt, env.Now().UTC())
			l.mu.Unlock()
			return fn(n, in)
		}).Maybe()
	env.OnActivity(acts.ReconcileReprocess, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileReprocessInput) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.reprocess = append(l.reprocess, in)
			return nil
		}).Maybe()
	env.OnActivity(acts.SendAlert, mock.Anything, mock.Anything).Return(
		func(_ context.Context, a api.Alert) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.alerts = append(l.alerts, a)
			return nil
		}).Maybe()
	return l
}

// reconcilePlatform: hour windows, no recheck unless set, and the cursor's
// settle of a minute.
func reconcilePlatform(t *testing.T, recheck time.Duration) api.Settings {
	p := testPlatform(t)
	p.ReconcileWindow = tuning.Duration(time.Hour)
	rc := tuning.Duration(recheck)
	p.ReconcileRecheck = &rc
	return p
}

func matched(in activities.ReconcileCountInput, n int) activities.ReconcileCountResult {
	return activities.ReconcileCountResult{Result: api.ReconcileResult{From: in.From, To: in.To, Check: in.Check,
		PlatformCount: n, Precision: "exact", StoreCount: n, Outcome: api.ReconcileMatch}}
}

// runReconcile runs the workflow from a backfill start two hours before t0
// for `for`, then queries it and cancels it.
func runReconcile(t *testing.T, env *testsuite.TestWorkflowEnvironment, p api.Settings, d time.Duration) api.ReconcileStatus {
	t.Helper()
	var st api.ReconcileStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryReconcile)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
		env.CancelWorkflow()
	}, d)
	env.ExecuteWorkflow(api.ReconcileWorkflowType, api.ReconcileInput{Platform: p, Start: at("-2h").Add(-time.Minute)})
	require.True(t, env.IsWorkflowCompleted())
	return st
}

// TestReconcileNoDifferenceDoesNothing: each hour window is counted once
// it settled (its end plus a minute), in order, at reconciliation's
// priority after backfill; matching counts reprocess nothing and alert
// nothing.
func TestReconcileNoDifferenceDoesNothing(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(_ int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		return matched(in, 7), nil
	})
	st := runReconcile(t, env, reconcilePlatform(t, 0), 3*time.Hour)
	got := log.snapshot()
	require.Len(t, got.counts, 4, "10:00, 11:00 (due at once), 12:00 and 13:00 (due at 13:01 and 14:01)")
	for i, c := range got.counts {
		require.Equal(t, at("-2h").Add(time.Duration(i)*time.Hour), c.From)
		require.Equal(t, c.From.Add(time.Hour), c.To)
		require.Equal(t, api.ReconcileFirst, c.Check)
		require.Nil(t, c.First)
		require.False(t, got.countAt[i].Before(c.To.Add(time.Minute)), "window %d counted before it settled", i)
		require.Equal(t, "orders-x", c.Platform.TaskQueue)
	}
	require.Empty(t, got.reprocess)
	require.Empty(t, got.alerts)
	require.EqualValues(t, 4, st.Counts.Checks)
	require.Zero(t, st.Counts.Differences)
	require.Len(t, st.Results, 4)
	require.Equal(t, at("2h"), st.NextFirst)
	pr := workflows.ReconcileTaskPriority(platformName)
	require.Greater(t, pr.PriorityKey, api.BackfillPriority, "served after backfill pages (lower key first)")
	require.Equal(t, fairness.Key(platformName), pr.FairnessKey, "the platform's fairness key")
}

// TestReconcileDifferenceReprocessesTheWindow: a window the platform
// counts more orders in is reprocessed (exactly that window, through the
// cursor's reprocess), counted again after the reprocess, and reported
// closed; no alert.
func TestReconcileDifferenceReprocessesTheWindow(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(n int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		switch {
		case in.From.Equal(at("-1h")) && in.First == nil:
			r := matched(in, 9)
			r.Result.StoreCount, r.Result.Outcome = 7, api.ReconcileReprocessing
			return r, nil
		case in.First != nil && n == 2:
			return activities.ReconcileCountResult{Gate: api.ReconcileWaitReprocess}, nil // still running
		case in.First != nil:
			r := *in.First
			r.Outcome, r.Reprocessed, r.RecountPlatform, r.RecountStore = api.ReconcileClosed, true, 9, 9
			return activities.ReconcileCountResult{Result: r}, nil
		}
		return matched(in, 3), nil
	})
	st := runReconcile(t, env, reconcilePlatform(t, 0), 90*time.Minute)
	got := log.snapshot()
	require.Equal(t, []activities.ReconcileReprocessInput{{Platform: platformName, From: at("-1h"), To: at("0h")}}, got.reprocess)
	require.GreaterOrEqual(t, len(got.counts), 4)
	require.NotNil(t, got.counts[2].First, "the recount carries the first count")
	require.Equal(t, 7, got.counts[2].First.StoreCount)
	require.True(t, got.countAt[2].After(got.countAt[1]), "the recount waits for the reprocess")
	require.NotNil(t, got.counts[3].First, "a recount that found the reprocess running counts again")
	require.Empty(t, got.alerts)
	require.EqualValues(t, 1, st.Counts.Differences)
	require.EqualValues(t, 1, st.Counts.Closed)
	require.EqualValues(t, 1, st.Counts.Reprocessed)
	var closed []api.ReconcileResult
	for _, r := range st.Results {
		if r.Outcome == api.ReconcileClosed {
			closed = append(closed, r)
		}
	}
	require.Len(t, closed, 1)
	require.Equal(t, at("-1h"), closed[0].From)
	require.Equal(t, 9, closed[0].RecountStore)
}

// TestReconcileDifferenceThatStaysAlerts: a difference the reprocess does
// not close raises one reconcile alert for the window and check.
func TestReconcileDifferenceThatStaysAlerts(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(_ int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		switch {
		case in.From.Equal(at("-2h")) && in.First == nil:
			r := matched(in, 9)
			r.Result.StoreCount, r.Result.Outcome = 8, api.ReconcileReprocessing
			return r, nil
		case in.First != nil:
			r := *in.First
			r.Outcome, r.Reprocessed, r.RecountPlatform, r.RecountStore = api.ReconcileOpen, true, 9, 8
			return activities.ReconcileCountResult{Result: r}, nil
		}
		return matched(in, 3), nil
	})
	st := runReconcile(t, env, reconcilePlatform(t, 0), 2*time.Hour)
	got := log.snapshot()
	require.Len(t, got.reprocess, 1)
	require.Len(t, got.alerts, 1)
	a := got.alerts[0]
	require.Equal(t, api.AlertReconcile, a.Kind)
	require.Equal(t, platformName, a.Platform)
	require.Equal(t, "reconcile/"+platformName+"/2026-03-02T10:00:00Z-2026-03-02T11:00:00Z/first", a.Key)
	require.Contains(t, a.Message, "counts 9 orders")
	require.EqualValues(t, 1, st.Counts.Open)
}

// TestReconcileWaitsForTheCursorAndRechecks: a window the cursor has not
// passed is not counted (nor reprocessed) until it has; with a recheck of
// two hours each window is checked again two hours after its end.
func TestReconcileWaitsForTheCursorAndRechecks(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(n int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		if n == 0 {
			return activities.ReconcileCountResult{Gate: api.ReconcileWaitCursor}, nil
		}
		return matched(in, 1), nil
	})
	runReconcile(t, env, reconcilePlatform(t, 2*time.Hour), 4*time.Hour-30*time.Second)
	got := log.snapshot()
	type check struct {
		from  time.Time
		check string
	}
	var seq []check
	for _, c := range got.counts {
		seq = append(seq, check{c.From, c.Check})
	}
	require.Equal(t, []check{
		{at("-2h"), api.ReconcileFirst}, // the cursor is behind: counted again later
		{at("-2h"), api.ReconcileFirst},
		{at("-1h"), api.ReconcileFirst},
		{at("-2h"), api.ReconcileRecheck}, // due at 13:00, before 12:00's first check at 13:01
		{at("0h"), api.ReconcileFirst},
		{at("-1h"), api.ReconcileRecheck},
		{at("1h"), api.ReconcileFirst},
		{at("0h"), api.ReconcileRecheck},
		{at("2h"), api.ReconcileFirst},
	}, seq)
	require.Equal(t, t0.Add(15*time.Minute), got.countAt[1], "a quarter window later")
}

// TestReconcileUnsupportedKindEnds: a platform without a count call ends
// its reconciliation after the first answer, without error.
func TestReconcileUnsupportedKindEnds(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(int, activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		return activities.ReconcileCountResult{Unsupported: true}, nil
	})
	env.ExecuteWorkflow(api.ReconcileWorkflowType, api.ReconcileInput{Platform: reconcilePlatform(t, 0), Start: at("-2h")})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, log.snapshot().counts, 1)
}

// TestReconcileRateLimitWaitsOnATimer: a count the platform answered 429
// waits the platform's Retry-After on a timer and counts the same window
// again; a failed count is retried later without losing the window.
func TestReconcileRateLimitWaitsOnATimer(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(n int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		switch n {
		case 0:
			return activities.ReconcileCountResult{}, temporal.NewApplicationErrorWithOptions("429", activities.ErrRateLimited,
				temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: 7 * time.Second, Details: []any{activities.RateLimitAnswer{Attempt: 1}}})
		case 1:
			return activities.ReconcileCountResult{}, temporal.NewNonRetryableApplicationError("bad credentials", activities.ErrPermanent, errors.New("401"))
		}
		return matched(in, 1), nil
	})
	runReconcile(t, env, reconcilePlatform(t, 0), 30*time.Minute)
	got := log.snapshot()
	require.GreaterOrEqual(t, len(got.counts), 3)
	require.Equal(t, t0.Add(7*time.Second), got.countAt[1], "the platform's wait, on a timer")
	require.Equal(t, t0.Add(7*time.Second+15*time.Minute), got.countAt[2], "a failure retried a quarter window later")
	for _, c := range got.counts[:3] {
		require.Equal(t, at("-2h"), c.From, "the same window")
	}
}

// TestReconcileOldHistoryIsCheckedOnce: windows already older than the
// recheck delay at their first check are not checked again; the first
// window young enough is.
func TestReconcileOldHistoryIsCheckedOnce(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(_ int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		return matched(in, 1), nil
	})
	var st api.ReconcileStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryReconcile)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
		env.CancelWorkflow()
	}, 90*time.Minute)
	env.ExecuteWorkflow(api.ReconcileWorkflowType, api.ReconcileInput{Platform: reconcilePlatform(t, 2*time.Hour), Start: at("-5h")})
	var rechecked []time.Time
	for _, c := range log.snapshot().counts {
		if c.Check == api.ReconcileRecheck {
			rechecked = append(rechecked, c.From)
		}
	}
	// 7:00 to 10:00 ended 2 h or more before their first check at noon:
	// checked once. 10:00-11:00 is rechecked at 13:00; 11:00's recheck
	// (14:00) is after the run's end at 13:30.
	require.Equal(t, []time.Time{at("-2h")}, rechecked)
	require.EqualValues(t, 7, st.Counts.Checks, "7:00 to 12:00 first, 10:00 again, 12:00 at 13:01")
}

// TestReconcileContinuesAsNewWithItsPlace: after maxReconcileTurns checks
// the workflow continues as new, carrying where it stands.
func TestReconcileContinuesAsNewWithItsPlace(t *testing.T) {
	env := newEnv(t)
	mockReconcile(env, func(_ int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		return matched(in, 1), nil
	})
	p := reconcilePlatform(t, 0)
	p.ReconcileWindow = tuning.Duration(time.Minute)
	p.Settle = 0
	env.ExecuteWorkflow(api.ReconcileWorkflowType, api.ReconcileInput{Platform: p, Start: at("-10h")})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next api.ReconcileInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, at("-10h").Add(300*time.Minute), next.State.NextFirst, "300 minute windows checked")
	require.EqualValues(t, 300, next.State.Counts.Checks)
	require.Equal(t, 1, next.State.Runs)
	require.Len(t, next.State.Results, 20, "the last 20 results travel")
}

// TestReconcileCheckOnRequest: a requested window is checked at once
// (not waiting for the grid's next one), once, as a manual check that
// moves no pointer; a window not yet ended is dropped.
func TestReconcileCheckOnRequest(t *testing.T) {
	env := newEnv(t)
	log := mockReconcile(env, func(_ int, in activities.ReconcileCountInput) (activities.ReconcileCountResult, error) {
		return matched(in, 2), nil
	})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalReconcileCheck, api.Range{Start: at("-30h"), End: at("-6h")})
		env.SignalWorkflow(api.SignalReconcileCheck, api.Range{Start: at("-1h"), End: at("1h")}) // not ended
	}, 10*time.Minute)
	st := runReconcile(t, env, reconcilePlatform(t, 0), 20*time.Minute)
	got := log.snapshot()
	require.Len(t, got.counts, 3, "10:00 and 11:00 at once, the requested window at 12:10")
	manual := got.counts[2]
	require.Equal(t, api.ReconcileManual, manual.Check)
	require.Equal(t, at("-30h"), manual.From)
	require.Equal(t, at("-6h"), manual.To)
	require.Equal(t, t0.Add(10*time.Minute), got.countAt[2], "checked when asked, not at the next window")
	require.Equal(t, at("0h"), st.NextFirst, "the grid's place is unchanged")
	require.Empty(t, st.Requested)
}
