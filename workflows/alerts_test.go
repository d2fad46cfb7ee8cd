package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// A dead alert webhook must not hold a workflow at its continue-as-new
// point: the alerts in flight go to the next run, which sends them again
// (workflows/alerts.go, versionAlertHandover). A history from before the
// change (no marker; OnGetVersion answers DefaultVersion as a replay would)
// still waits for them.
//
// SendAlert retries without limit; the test environment gives up after
// 10 attempts (1+2+4+...+60+60+60 s: a little over 4 minutes), so "waits"
// shows as continuing as new only once the last attempt failed.

// giveUpAfter is when the test environment stops retrying an alert raised
// at the start.
const giveUpAfter = 4*time.Minute + 3*time.Second

// webhookDown makes every SendAlert attempt fail and records the alerts
// tried.
func webhookDown(env *testsuite.TestWorkflowEnvironment) *alerts {
	a := &alerts{}
	env.OnActivity(acts.SendAlert, mock.Anything, mock.Anything).Return(
		func(_ context.Context, al api.Alert) error {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.sent = append(a.sent, al)
			return errors.New("POST alert: connection refused")
		}).Maybe()
	return a
}

// asBeforeHandover replays the rule of runs recorded before the handover.
func asBeforeHandover(env *testsuite.TestWorkflowEnvironment) {
	env.OnGetVersion("alert-handover", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
}

// carriedAlert is an alert a previous run handed over.
func carriedAlert(kind, key string) api.Alert {
	return api.Alert{Kind: kind, Platform: platformName, Message: "carried " + key, At: at("-1h"), Key: key}
}

// breakerCursor is a cursor whose first slice fails for good and opens
// the breaker (an alert) in a run capped at that one slice.
func breakerCursor(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.CursorInput {
	p := testPlatform(t)
	p.Concurrency = 1
	p.BreakerFailures = 1
	mockPages(env, watchPages(env), func(activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 401: token revoked", activities.ErrPermanent, nil)
	}, nil)
	mockDeadLetters(env, 0, false)
	return cappedInput(t, p, 1)
}

func TestCursorHandsAlertsInFlightToTheNextRun(t *testing.T) {
	env := newEnv(t)
	al := webhookDown(env)
	in := breakerCursor(t, env)

	env.ExecuteWorkflow(workflows.PlatformCursor, in)

	var next api.CursorInput
	continuedAs(t, env, api.CursorWorkflowType, &next)
	require.Less(t, env.Now().Sub(t0), time.Minute, "continued as new at once, not after the webhook came back")
	require.NotNil(t, next.Alerts, "the next run's input carries the alert")
	require.Len(t, next.Alerts.Alerts, 1)
	got := next.Alerts.Alerts[0]
	require.Equal(t, api.AlertBreakerOpen, got.Kind)
	require.Contains(t, got.Message, "token revoked")
	for _, tried := range al.all() {
		require.Equal(t, tried.Key, got.Key, "the key stays, so a receiver drops a repeat")
	}
	require.Zero(t, next.Alerts.Dropped)
	require.True(t, next.State.BreakerOpen, "the rest of the state travels as before")
}

func TestCursorBeforeHandoverWaitsForItsAlerts(t *testing.T) {
	env := newEnv(t)
	asBeforeHandover(env)
	al := webhookDown(env)
	in := breakerCursor(t, env)
	var mid api.CursorStatus
	env.RegisterDelayedCallback(func() { mid = status(t, env) }, 2*time.Minute)

	env.ExecuteWorkflow(workflows.PlatformCursor, in)

	var next api.CursorInput
	continuedAs(t, env, api.CursorWorkflowType, &next)
	require.Equal(t, 1, mid.AlertsPending, "still waiting for the alert")
	require.Len(t, al.all(), 10, "waited through every attempt")
	require.GreaterOrEqual(t, env.Now().Sub(t0), giveUpAfter)
	require.Nil(t, next.Alerts)
}

// The test environment runs activities on goroutines, so the order in
// which the mock sees them is not the order they were sent in; the tests
// below check what was sent, not in which order.

func TestCursorSendsTheAlertsItWasHanded(t *testing.T) {
	env := newEnv(t)
	al := mockAlerts(env, 0)
	p := testPlatform(t)
	mockPages(env, watchPages(env), onePage, nil)
	in := cursorInput(t, p)
	carried := []api.Alert{carriedAlert(api.AlertLag, "lag/a/1"), carriedAlert(api.AlertBreakerOpen, "breaker_open/a/2")}
	in.Alerts = &api.AlertHandover{Alerts: carried, Dropped: 3}
	var after api.CursorStatus
	stopAt(env, 10*time.Minute, func() { after = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, in)

	requireStopped(t, env)
	require.ElementsMatch(t, carried, al.all(), "sent again")
	require.Zero(t, after.AlertsPending, "delivered")
	require.Equal(t, int64(3), after.AlertsDropped, "the drop count travels on")
}

// deliveryBreaker is a destination whose first batch fails and opens the
// breaker (an alert) in a run capped at one batch.
func deliveryBreaker(env *testsuite.TestWorkflowEnvironment) api.DeliveryInput {
	d := testDestination()
	d.BreakerFailures = 1
	f := &fakeDestination{seqs: []int64{1, 2}, answer: func(api.SeqRange) error { return errors.New("HTTP 503") }}
	f.mock(env)
	return api.DeliveryInput{Destination: d, MaxBatchesPerRun: 1}
}

func TestDeliveryHandsAlertsInFlightToTheNextRun(t *testing.T) {
	env := newEnv(t)
	al := webhookDown(env)
	in := deliveryBreaker(env)

	env.ExecuteWorkflow(api.DeliveryWorkflowType, in)

	var next api.DeliveryInput
	continuedAs(t, env, api.DeliveryWorkflowType, &next)
	require.Less(t, env.Now().Sub(t0), time.Minute, "continued as new at once")
	require.NotNil(t, next.Alerts)
	require.Len(t, next.Alerts.Alerts, 1)
	got := next.Alerts.Alerts[0]
	require.Equal(t, api.AlertDeliveryBreaker, got.Kind)
	require.Equal(t, "delivery_breaker_open/oms/1", got.Key)
	for _, tried := range al.all() {
		require.Equal(t, tried.Key, got.Key)
	}
	require.True(t, next.State.BreakerOpen)
}

func TestDeliveryBeforeHandoverWaitsForItsAlerts(t *testing.T) {
	env := newEnv(t)
	asBeforeHandover(env)
	al := webhookDown(env)
	in := deliveryBreaker(env)
	var mid api.DeliveryStatus
	env.RegisterDelayedCallback(func() { mid = deliveryStatus(t, env) }, 2*time.Minute)

	env.ExecuteWorkflow(api.DeliveryWorkflowType, in)

	var next api.DeliveryInput
	continuedAs(t, env, api.DeliveryWorkflowType, &next)
	require.Equal(t, 1, mid.AlertsPending)
	require.Len(t, al.all(), 10, "waited through every attempt")
	require.GreaterOrEqual(t, env.Now().Sub(t0), giveUpAfter)
	require.Nil(t, next.Alerts)
}

func TestDeliverySendsTheAlertsItWasHanded(t *testing.T) {
	env := newEnv(t)
	al := mockAlerts(env, 0)
	(&fakeDestination{seqs: []int64{1, 2}}).mock(env)
	carried := []api.Alert{carriedAlert(api.AlertDeliveryPoison, "delivery_poison/oms/7"), carriedAlert(api.AlertDeliveryBreaker, "delivery_breaker_open/oms/1")}
	in := api.DeliveryInput{Destination: testDestination(), Alerts: &api.AlertHandover{Alerts: carried}}
	var after api.DeliveryStatus
	stopAt(env, 10*time.Second, func() { after = deliveryStatus(t, env) })

	env.ExecuteWorkflow(api.DeliveryWorkflowType, in)

	requireStopped(t, env)
	require.ElementsMatch(t, carried, al.all(), "sent again")
	require.Zero(t, after.AlertsPending, "delivered")
	require.Zero(t, after.AlertsDropped)
}

func TestDeadLetterHandsAlertsInFlightToTheNextRun(t *testing.T) {
	env := newEnv(t)
	al := webhookDown(env)
	p := testPlatform(t)
	a := failed(at("-1h"), "HTTP 503")
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, a) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Minute)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})

	var next api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &next)
	require.Equal(t, at("2m"), env.Now().UTC(), "continued as new when suggested")
	require.Equal(t, []string{a.SliceID}, ids(next.Entries))
	require.NotNil(t, next.Alerts)
	require.Len(t, next.Alerts.Alerts, 1)
	require.Equal(t, a.SliceID, next.Alerts.Alerts[0].SliceID)
	require.Equal(t, al.all()[0].Key, next.Alerts.Alerts[0].Key)
}

func TestDeadLetterBeforeHandoverWaitsForItsAlerts(t *testing.T) {
	env := newEnv(t)
	asBeforeHandover(env)
	al := webhookDown(env)
	p := testPlatform(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, failed(at("-1h"), "HTTP 503")) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Minute)
	var mid api.DeadLetterStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryDeadLetterStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
	}, 3*time.Minute)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})

	var next api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &next)
	require.Equal(t, 1, mid.AlertsPending)
	require.Len(t, al.all(), 10, "waited through every attempt")
	require.GreaterOrEqual(t, env.Now().Sub(t0), time.Minute+giveUpAfter)
	require.Nil(t, next.Alerts)
}

// The carried list is bounded: of more alerts than a run hands over, the
// newest travel and the rest are counted as dropped, on top of the count
// that came in.
func TestDeadLetterKeepsTheNewestCarriedAlerts(t *testing.T) {
	env := newEnv(t)
	al := webhookDown(env)
	p := testPlatform(t)
	var carried []api.Alert
	for i := range 60 {
		carried = append(carried, carriedAlert(api.AlertDeadLetter, fmt.Sprintf("dead_letter/s%02d/1", i)))
	}
	carried[59].Message = strings.Repeat("platform error ", 500) // a message quoting a long error is clipped
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Alerts: &api.AlertHandover{Alerts: carried, Dropped: 5}})

	var next api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &next)
	require.NotNil(t, next.Alerts)
	require.LessOrEqual(t, len(next.Alerts.Alerts[49].Message), 1000, "clipped to 1000 bytes (internal/textclip)")
	require.Contains(t, next.Alerts.Alerts[49].Message, "[clipped, 7500 bytes]")
	next.Alerts.Alerts[49].Message = carried[59].Message
	require.Equal(t, carried[10:], next.Alerts.Alerts, "the newest 50, oldest first")
	require.Equal(t, int64(15), next.Alerts.Dropped)
	require.Subset(t, keys(al.all()), keys(carried[10:]), "the newest are sent again")
	for _, a := range al.all() {
		require.NotContains(t, keys(carried[:10]), a.Key, "dropped alerts are not sent")
	}
}

func keys(alerts []api.Alert) []string {
	var out []string
	for _, a := range alerts {
		out = append(out, a.Key)
	}
	return out
}

// TestResumedAlertsAreHeldToTheBounds: an input not written by a handover
// (a long message, a negative dropped count) is held to the handover's
// bounds before anything is sent.
func TestResumedAlertsAreHeldToTheBounds(t *testing.T) {
	env := newEnv(t)
	al := webhookDown(env)
	p := testPlatform(t)
	long := carriedAlert(api.AlertDeadLetter, "dead_letter/long/1")
	long.Message = strings.Repeat("platform error ", 500)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Alerts: &api.AlertHandover{Alerts: []api.Alert{long}, Dropped: -7}})

	var next api.DeadLetterInput
	continuedAs(t, env, api.DeadLetterWorkflowType, &next)
	require.NotEmpty(t, al.all())
	for _, a := range al.all() {
		require.LessOrEqual(t, len(a.Message), 1003, "sent clipped")
	}
	require.NotNil(t, next.Alerts)
	require.Zero(t, next.Alerts.Dropped, "a negative count is not carried on")
}
