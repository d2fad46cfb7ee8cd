package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// alerts records SendAlert calls.
type alerts struct {
	mu   sync.Mutex
	sent []api.Alert
}

func (a *alerts) all() []api.Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]api.Alert(nil), a.sent...)
}

func mockAlerts(env *testsuite.TestWorkflowEnvironment, delay time.Duration) *alerts {
	a := &alerts{}
	env.OnActivity(acts.SendAlert, mock.Anything, mock.Anything).After(delay).Return(
		func(_ context.Context, al api.Alert) error {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.sent = append(a.sent, al)
			return nil
		}).Maybe()
	return a
}

// failed is a dead-letter entry for the 15-minute slice starting at start.
func failed(start time.Time, msg string) api.DeadLetterEntry {
	return api.DeadLetterEntry{
		SliceID: sliceID(start, 15*time.Minute), Platform: platformName,
		Start: start, End: start.Add(15 * time.Minute),
		Error: msg, ErrorType: activities.ErrTransient, Attempts: 3, Failures: 1,
		FirstFailedAt: at("-5m"), LastFailedAt: at("-5m"),
	}
}

// list queries the dead-letter workflow.
func list(t *testing.T, env *testsuite.TestWorkflowEnvironment) []api.DeadLetterEntry {
	t.Helper()
	v, err := env.QueryWorkflow(api.QueryDeadLetterList)
	require.NoError(t, err)
	var out []api.DeadLetterEntry
	require.NoError(t, v.Get(&out))
	for i := range out {
		out[i] = normalize(out[i])
	}
	return out
}

func ids(entries []api.DeadLetterEntry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.SliceID)
	}
	return out
}

// TestDeadLetterAddListsAndAlerts: each add shows in the list, oldest slice
// first; a second failure of the same slice updates its entry and counts
// it; every failure of a slice that waits for an operator raises one alert
// whose key names slice and failure, so a receiver can drop a retried
// POST (a slice that retries on its own alerts once:
// deadletter_retry_test.go). An add without a slice ID is ignored.
func TestDeadLetterAddListsAndAlerts(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 0)
	a, b := failed(at("-1h"), "HTTP 503"), failed(at("-2h"), "HTTP 500")
	a.ErrorType, b.ErrorType = activities.ErrPermanent, activities.ErrPermanent
	aAgain := a
	aAgain.Error, aAgain.LastFailedAt, aAgain.FirstFailedAt = "HTTP 502", at("2m"), at("2m")

	var afterFirst, afterAll []api.DeadLetterEntry
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { afterFirst = list(t, env) }, 90*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, aAgain) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, b) }, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeadLetterAdd, api.DeadLetterEntry{Error: "no slice"})
	}, 4*time.Minute)
	stopAt(env, 5*time.Minute, func() { afterAll = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Equal(t, []api.DeadLetterEntry{a}, afterFirst)
	wantA2 := aAgain
	wantA2.Failures, wantA2.FirstFailedAt = 2, a.FirstFailedAt
	require.Equal(t, []api.DeadLetterEntry{b, wantA2}, afterAll)

	sent := al.all()
	require.Len(t, sent, 3, "one alert per failure, none for the ignored add")
	require.Equal(t, []string{
		"dead_letter/" + a.SliceID + "/1", "dead_letter/" + a.SliceID + "/2", "dead_letter/" + b.SliceID + "/1",
	}, []string{sent[0].Key, sent[1].Key, sent[2].Key})
	require.Equal(t, api.AlertDeadLetter, sent[0].Kind)
	require.Equal(t, platformName, sent[0].Platform)
	require.Equal(t, a.SliceID, sent[0].SliceID)
	require.Equal(t, "slice "+a.SliceID+" of "+platformName+" failed after 3 attempt(s): HTTP 503", sent[0].Message)
	require.True(t, sent[1].At.Equal(at("2m")))
}

// TestDeadLetterDiscard drops one entry or all, without running anything.
func TestDeadLetterDiscard(t *testing.T) {
	a, b := failed(at("-2h"), "HTTP 500"), failed(at("-1h"), "HTTP 503")
	for _, tc := range []struct {
		name string
		sel  api.DeadLetterSelector
		left []string
	}{
		{"one", api.DeadLetterSelector{SliceID: a.SliceID}, []string{b.SliceID}},
		{"all", api.DeadLetterSelector{All: true}, []string{}},
		{"nothing selected", api.DeadLetterSelector{}, []string{a.SliceID, b.SliceID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			pages := watchPages(env)
			mockPages(env, pages, onePage, nil)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterDiscard, tc.sel) }, time.Minute)
			var after []api.DeadLetterEntry
			// Before the entries' first automatic try, due at 5m.
			stopAt(env, 4*time.Minute, func() { after = list(t, env) })

			env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t), Entries: []api.DeadLetterEntry{a, b}})
			requireStopped(t, env)

			require.Equal(t, tc.left, ids(after))
			require.Empty(t, pages.all())
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDeadLetterContinueAsNewKeepsEntries: once continue-as-new is
// suggested the workflow waits for its reprocess run, then continues as
// new with every entry, none marked as reprocessing, and hands the alert
// still in flight to the next run (alerts.go).
func TestDeadLetterContinueAsNewKeepsEntries(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 5*time.Minute)
	a, b, c, d := failed(at("-4h"), "A"), failed(at("-3h"), "B"), failed(at("-2h"), "C"), failed(at("-1h"), "D")
	pages := watchPages(env)
	mockPages(env, pages, onePage, map[string]time.Duration{a.SliceID: 10 * time.Minute})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{SliceID: a.SliceID})
		env.SignalWorkflow(api.SignalDeadLetterAdd, c)
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, d) }, 8*time.Minute)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Entries: []api.DeadLetterEntry{a, b}})

	var in api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &in)
	require.Equal(t, at("11m"), env.Now().UTC(), "waits for the reprocess (until 12:11), not for the last alert (12:08-12:13)")
	require.Len(t, al.all(), 1, "c's alert was delivered")
	require.NotNil(t, in.Alerts)
	require.Len(t, in.Alerts.Alerts, 1, "d's alert is handed over")
	require.Equal(t, d.SliceID, in.Alerts.Alerts[0].SliceID)
	require.Equal(t, p, in.Platform)
	require.Equal(t, []string{b.SliceID, c.SliceID, d.SliceID}, ids(in.Entries), "a reprocessed away; c and d added")
	for _, e := range in.Entries {
		require.False(t, e.Reprocessing)
	}
}

// TestDeadLetterConfig: new settings for the platform are used by later
// reprocess runs; settings for another platform or invalid ones are ignored.
func TestDeadLetterConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(p *api.DeadLetterInput)
		wantSize int
	}{
		{"applied", func(in *api.DeadLetterInput) { in.Platform.PageSize = 9 }, 9},
		{"other platform", func(in *api.DeadLetterInput) { in.Platform.PageSize = 9; in.Platform.Name = "shop-y" }, 100},
		{"invalid", func(in *api.DeadLetterInput) { in.Platform.PageSize = 9; in.Platform.Interval = 0 }, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			a := failed(at("-1h"), "HTTP 503")
			pages := watchPages(env)
			mockPages(env, pages, onePage, nil)
			change := api.DeadLetterInput{Platform: p}
			tc.change(&change)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterConfig, change.Platform) }, time.Minute)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{All: true}) }, 2*time.Minute)
			stopAt(env, 5*time.Minute, nil)

			env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Entries: []api.DeadLetterEntry{a}})
			requireStopped(t, env)

			require.Len(t, pages.all(), 1)
			require.Equal(t, tc.wantSize, pages.all()[0].In.Platform.PageSize)
		})
	}
}
