package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// autoRetryOff is p with dead_letter_retry.enabled: false.
func autoRetryOff(p api.Settings) api.Settings {
	off := false
	p.DeadLetterRetry.Enabled = &off
	return p
}

// failsUntil fails every page of the slices in ids with a transient error
// (HTTP 503) while the test clock is before until, and serves one page
// after it; other slices get one page.
func failsUntil(env *testsuite.TestWorkflowEnvironment, until time.Time, ids ...string) pageResult {
	return func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		if contains(ids, in.SliceID) && env.Now().Before(until) {
			return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return onePage(in)
	}
}

// firstAttempts are the times of the slices' first page attempts (an
// attempt that is not a retry), in order.
func firstAttempts(calls []fetchCall, id string) []time.Time {
	var out []time.Time
	for _, c := range calls {
		if c.In.SliceID == id && c.Local {
			out = append(out, c.At)
		}
	}
	return out
}

func dlStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.DeadLetterStatus {
	t.Helper()
	v, err := env.QueryWorkflow(api.QueryDeadLetterStatus)
	require.NoError(t, err)
	var st api.DeadLetterStatus
	require.NoError(t, v.Get(&st))
	return st
}

// TestDeadLetterRetriesTransientOnSchedule: a slice dead-lettered by a
// transient cause runs again by itself 5 minutes after its failure; it
// fails again, so its entry counts the try and waits 30 minutes from that
// failure; the second try completes the slice and removes the entry. The
// entry's first failure alerts, the failed automatic try does not.
func TestDeadLetterRetriesTransientOnSchedule(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 0)
	a := failed(at("-1h"), "HTTP 503")
	pages := watchPages(env)
	mockPages(env, pages, failsUntil(env, at("30m"), a.SliceID), nil)
	mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	var added, afterFirstTry, done []api.DeadLetterEntry
	var midStatus api.DeadLetterStatus
	var midDetails string
	env.RegisterDelayedCallback(func() { added = list(t, env) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		afterFirstTry = list(t, env)
		midStatus = dlStatus(t, env)
		midDetails = currentDetails(t, env)
	}, 20*time.Minute)
	stopAt(env, 3*time.Hour, func() { done = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Len(t, added, 1)
	require.Equal(t, at("6m"), added[0].NextRetryAt, "first wait: 5m after the failure was recorded")
	require.Zero(t, added[0].AutoRetries)

	require.Len(t, afterFirstTry, 1)
	e := afterFirstTry[0]
	require.Equal(t, 1, e.AutoRetries)
	require.Equal(t, 2, e.Failures)
	require.False(t, e.Reprocessing)
	require.True(t, e.LastFailedAt.After(at("6m")), "the try failed after it started")
	require.Equal(t, e.LastFailedAt.Add(30*time.Minute), e.NextRetryAt, "second wait: 30m after the try failed")
	require.Equal(t, 1, midStatus.Scheduled)
	require.Equal(t, e.NextRetryAt, midStatus.NextRetryAt.UTC())
	require.Equal(t, "on", midStatus.AutoRetry)
	require.Contains(t, midDetails, "**Next automatic retry** "+e.NextRetryAt.Format("2006-01-02 15:04:05Z")+": "+a.SliceID+" (try 2)")

	require.Equal(t, []time.Time{at("6m"), e.NextRetryAt}, firstAttempts(pages.all(), a.SliceID), "tried at 5m and 30m, never else")
	require.Empty(t, done, "the second try completed the slice")
	sent := al.all()
	require.Len(t, sent, 1, "one alert for the entry, none for its failed automatic try")
	require.Equal(t, "dead_letter/"+a.SliceID+"/1", sent[0].Key)
}

// TestDeadLetterPermanentWaitsForOperator: a permanent cause, and any
// cause on a platform with dead_letter_retry.enabled: false, is never
// retried on its own, however long it waits.
func TestDeadLetterPermanentWaitsForOperator(t *testing.T) {
	perm := failed(at("-1h"), "HTTP 401")
	perm.ErrorType = activities.ErrPermanent
	untyped := failed(at("-2h"), "page 2001: the platform keeps returning next-page tokens")
	untyped.ErrorType = ""
	for _, tc := range []struct {
		name  string
		p     func(api.Settings) api.Settings
		entry api.DeadLetterEntry
	}{
		{"permanent", func(p api.Settings) api.Settings { return p }, perm},
		{"no error type", func(p api.Settings) api.Settings { return p }, untyped},
		{"transient, retry off", autoRetryOff, failed(at("-1h"), "HTTP 503")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			mockAlerts(env, 0)
			pages := watchPages(env)
			mockPages(env, pages, onePage, nil)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, tc.entry) }, time.Minute)
			var after []api.DeadLetterEntry
			var st api.DeadLetterStatus
			stopAt(env, 48*time.Hour, func() { after, st = list(t, env), dlStatus(t, env) })

			env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: tc.p(testPlatform(t))})
			requireStopped(t, env)

			require.Empty(t, pages.all(), "nothing ran")
			require.Len(t, after, 1)
			require.True(t, after[0].NextRetryAt.IsZero())
			require.Zero(t, after[0].AutoRetries)
			require.Equal(t, 1, st.Waiting)
			require.Zero(t, st.Scheduled)
		})
	}
}

// TestDeadLetterOperatorWinsOverSchedule: while entries wait for their
// automatic try, an operator discards one (it never runs), reprocesses
// one that completes (removed, not run again), and reprocesses one that
// fails again (no second alert; it goes back on the schedule from its
// first wait, counted from that failure).
func TestDeadLetterOperatorWinsOverSchedule(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 0)
	a, b, c := failed(at("-3h"), "A"), failed(at("-2h"), "B"), failed(at("-1h"), "C")
	pages := watchPages(env)
	mockPages(env, pages, failsUntil(env, at("5m"), c.SliceID), nil)
	mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() {
		for _, e := range []api.DeadLetterEntry{a, b, c} {
			env.SignalWorkflow(api.SignalDeadLetterAdd, e)
		}
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeadLetterDiscard, api.DeadLetterSelector{SliceID: a.SliceID})
		env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{SliceID: b.SliceID})
		env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{SliceID: c.SliceID})
	}, 3*time.Minute)
	var mid, after []api.DeadLetterEntry
	env.RegisterDelayedCallback(func() { mid = list(t, env) }, 4*time.Minute)
	stopAt(env, 2*time.Hour, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Empty(t, firstAttempts(pages.all(), a.SliceID), "discarded: never run")
	require.Equal(t, []time.Time{at("3m")}, firstAttempts(pages.all(), b.SliceID), "run by the operator only")
	require.Equal(t, []string{c.SliceID}, ids(mid))
	cm := mid[0]
	require.Zero(t, cm.AutoRetries, "an operator's run is not an automatic try")
	require.Equal(t, cm.LastFailedAt.Add(5*time.Minute), cm.NextRetryAt, "back on the schedule, from its first wait")
	require.Equal(t, []time.Time{at("3m"), cm.NextRetryAt}, firstAttempts(pages.all(), c.SliceID))
	require.Empty(t, after, "c's automatic try completed it")
	require.Len(t, al.all(), 3, "one alert per entry")
}

// TestDeadLetterScheduleSurvivesContinueAsNew: the due times travel in the
// entries, and the next run keeps them: a scheduled entry runs when it
// was due, one already due runs at once, and one carried by a run of
// before the automatic retry (no due time) gets its first wait from the
// run's start.
func TestDeadLetterScheduleSurvivesContinueAsNew(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	mockAlerts(env, 0)
	a := failed(at("-1h"), "A")
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Minute)
	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	var in api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &in)
	require.Equal(t, []string{a.SliceID}, ids(in.Entries))
	require.Equal(t, at("6m"), in.Entries[0].NextRetryAt.UTC())

	overdue, old := failed(at("-3h"), "overdue"), failed(at("-2h"), "from before")
	overdue.AutoRetries, overdue.NextRetryAt = 2, at("1m")
	in.Entries = append([]api.DeadLetterEntry{overdue, old}, in.Entries...)

	env = newEnv(t)
	env.SetStartTime(at("4m"))
	mockAlerts(env, 0)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	var after []api.DeadLetterEntry
	stopAt(env, time.Hour, func() { after = list(t, env) })
	env.ExecuteWorkflow(workflows.DeadLetter, in)
	requireStopped(t, env)

	require.Equal(t, []time.Time{at("6m")}, firstAttempts(pages.all(), a.SliceID), "when it was due")
	require.Equal(t, []time.Time{at("4m")}, firstAttempts(pages.all(), overdue.SliceID), "at once")
	require.Equal(t, []time.Time{at("9m")}, firstAttempts(pages.all(), old.SliceID), "first wait from the run's start")
	require.Empty(t, after)
}

// TestDeadLetterConfigTurnsRetryOffAndOn: a config signal with
// dead_letter_retry.enabled: false takes every entry off the schedule;
// turning it on again schedules them from then.
func TestDeadLetterConfigTurnsRetryOffAndOn(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	mockAlerts(env, 0)
	a := failed(at("-1h"), "HTTP 503")
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterConfig, autoRetryOff(p)) }, 2*time.Minute)
	var off api.DeadLetterStatus
	env.RegisterDelayedCallback(func() { off = dlStatus(t, env) }, 3*time.Minute)
	on := p
	on.DeadLetterRetry.Schedule = []config.Duration{config.Duration(20 * time.Minute)}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterConfig, on) }, 10*time.Minute)
	stopAt(env, 2*time.Hour, nil)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Equal(t, "off", off.AutoRetry)
	require.Zero(t, off.Scheduled)
	require.Equal(t, []time.Time{at("30m")}, firstAttempts(pages.all(), a.SliceID), "not at 6m (off), at 10m + the new 20m wait")
}

// TestDeadLetterBeforeAutoRetryKeepsOldRules: a run recorded before
// dead-letter-auto-retry (GetVersion answers DefaultVersion) schedules
// nothing and alerts on every failure, so its history replays unchanged.
func TestDeadLetterBeforeAutoRetryKeepsOldRules(t *testing.T) {
	env := newEnv(t)
	env.OnGetVersion("dead-letter-auto-retry", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	al := mockAlerts(env, 0)
	a := failed(at("-1h"), "HTTP 503")
	again := a
	again.LastFailedAt = at("2m")
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, again) }, 2*time.Minute)
	var after []api.DeadLetterEntry
	stopAt(env, 24*time.Hour, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t)})
	requireStopped(t, env)

	require.Empty(t, pages.all())
	require.Len(t, after, 1)
	require.True(t, after[0].NextRetryAt.IsZero())
	require.Len(t, al.all(), 2, "an alert per failure, as before")
}

// TestDeadLetterOneTimerForAnOutage: twenty slices dead-lettered a second
// apart (an outage) cost the workflow one timer, not one each: the
// timer is for the earliest due entry, a later entry does not move it,
// and the tries due within 30 seconds of it start with it.
func TestDeadLetterOneTimerForAnOutage(t *testing.T) {
	env := newEnv(t)
	mockAlerts(env, 0)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	cancelled := 0
	env.SetOnTimerCanceledListener(func(string) { cancelled++ })
	var entries []api.DeadLetterEntry
	for i := range 20 {
		e := failed(at("-10h").Add(time.Duration(i)*15*time.Minute), "HTTP 503")
		entries = append(entries, e)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, e) }, time.Minute+time.Duration(i)*time.Second)
	}
	var after []api.DeadLetterEntry
	stopAt(env, time.Hour, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t)})
	requireStopped(t, env)

	require.Equal(t, []time.Duration{5 * time.Minute}, timers, "one timer, for the first entry's try")
	require.Zero(t, cancelled)
	for _, e := range entries {
		require.Equal(t, []time.Time{at("6m")}, firstAttempts(pages.all(), e.SliceID), e.SliceID)
	}
	require.Empty(t, after)
}

// TestDeadLetterAutoRetriesKeepToConcurrency: due tries start oldest window
// first, no more at once than the platform's concurrency; the others stay
// due and start as running ones end.
func TestDeadLetterAutoRetriesKeepToConcurrency(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Concurrency = 2
	mockAlerts(env, 0)
	pages := watchPages(env)
	var entries []api.DeadLetterEntry
	delays := map[string]time.Duration{}
	for i := range 5 {
		e := failed(at("-10h").Add(time.Duration(i)*15*time.Minute), "HTTP 503")
		entries = append(entries, e)
		delays[e.SliceID] = 10 * time.Minute
	}
	mockPages(env, pages, onePage, delays)
	env.RegisterDelayedCallback(func() {
		for _, e := range entries {
			env.SignalWorkflow(api.SignalDeadLetterAdd, e)
		}
	}, time.Minute)
	var mid api.DeadLetterStatus
	env.RegisterDelayedCallback(func() { mid = dlStatus(t, env) }, 7*time.Minute)
	var after []api.DeadLetterEntry
	stopAt(env, time.Hour, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Equal(t, 2, mid.Reprocessing)
	require.Equal(t, 3, mid.Scheduled, "due, waiting for room")
	want := []time.Time{at("6m"), at("6m"), at("16m"), at("16m"), at("26m")}
	for i, e := range entries {
		require.Equal(t, []time.Time{want[i]}, firstAttempts(pages.all(), e.SliceID), e.SliceID)
	}
	require.Empty(t, after)
}

// TestDeadLetterDiscardWinsOverARunningTry: an operator discards an entry
// while its automatic try runs; the try fails, and its failure does not
// bring the entry back (no entry, no second alert, no later try).
func TestDeadLetterDiscardWinsOverARunningTry(t *testing.T) {
	env := newEnv(t)
	al := mockAlerts(env, 0)
	a := failed(at("-1h"), "HTTP 503")
	pages := watchPages(env)
	mockPages(env, pages, failsUntil(env, at("24h"), a.SliceID), map[string]time.Duration{a.SliceID: 2 * time.Minute})
	dl := mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	var during api.DeadLetterStatus
	env.RegisterDelayedCallback(func() {
		during = dlStatus(t, env)
		env.SignalWorkflow(api.SignalDeadLetterDiscard, api.DeadLetterSelector{SliceID: a.SliceID})
	}, 7*time.Minute)
	var after []api.DeadLetterEntry
	stopAt(env, 5*time.Hour, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t)})
	requireStopped(t, env)

	require.Equal(t, 1, during.Reprocessing, "the automatic try runs when the operator discards")
	require.Len(t, dl.all(), 1, "the try failed and recorded its failure")
	require.Empty(t, after, "the discard won")
	require.Len(t, al.all(), 1)
	require.Equal(t, []time.Time{at("6m")}, firstAttempts(pages.all(), a.SliceID), "no try after the discard")
}

// TestDeadLetterShortWaitIsNotAStorm: with the shortest schedule (1m), a
// try that fails waits its minute (at most retryBatch less when batched
// with another due try), never restarts at once; and tries due more than
// retryBatch apart get their own wake-up.
func TestDeadLetterShortWaitIsNotAStorm(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.DeadLetterRetry.Schedule = []config.Duration{config.Duration(time.Minute)}
	mockAlerts(env, 0)
	a, b := failed(at("-2h"), "A"), failed(at("-1h"), "B")
	pages := watchPages(env)
	mockPages(env, pages, failsUntil(env, at("10m"), a.SliceID, b.SliceID), nil)
	mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, b) }, 2*time.Minute)
	stopAt(env, 20*time.Minute, nil)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	for _, id := range []string{a.SliceID, b.SliceID} {
		tries := firstAttempts(pages.all(), id)
		require.Less(t, len(tries), 12, "%s: a try a minute or so at most, got %v", id, tries)
		for i := 1; i < len(tries); i++ {
			require.GreaterOrEqual(t, tries[i].Sub(tries[i-1]), time.Minute, "%s: tries %v", id, tries)
		}
		require.True(t, tries[len(tries)-1].After(at("10m")), "%s: completed once the platform was back", id)
	}
	require.Equal(t, at("2m"), firstAttempts(pages.all(), a.SliceID)[0], "a's first try")
	require.Equal(t, at("3m"), firstAttempts(pages.all(), b.SliceID)[0], "b's first try, a minute after a's: not batched")
}
