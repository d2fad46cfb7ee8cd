package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/workflows"
)

// Issue 24, items 1 and 10: untrusted text kept in workflow state is
// bounded, so no message or platform answer can push a workflow's
// continue-as-new (or an activity's input) over Temporal's payload limit.

// jsonSize is how large v is in history.
func jsonSize(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return len(b)
}

// hugeReason is 1.9 MB, as in the probe.
var hugeReason = strings.Repeat("r", 1900<<10)

// TestSliceDeadLettersAHugeControlCharacterError: a page fails quoting a
// 400 KB id of U+0001 (2.4 MB once JSON-escaped). Scheduling
// RecordDeadLetter with it failed the slice's task for good; the error is
// clipped first, so the slice is dead-lettered.
func TestSliceDeadLettersAHugeControlCharacterError(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	msg := "shop-x: malformed response on page 1: id " + strings.Repeat("\u0001", 400<<10) + `: total "ten" is not a decimal number`
	mockPages(env, watchPages(env), func(activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError(msg, activities.ErrPermanent, nil)
	}, nil)
	dl := mockDeadLetters(env, 0, false)
	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Len(t, dl.all(), 1, "dead-lettered")
	e := dl.all()[0]
	require.LessOrEqual(t, jsonSize(t, e.Error), textclip.MessageMax+2)
	require.Contains(t, e.Error, "[clipped, ")
	require.True(t, strings.HasPrefix(e.Error, "shop-x: malformed response on page 1: id \u0001"))
	require.LessOrEqual(t, jsonSize(t, res.Error), textclip.MessageMax+2)
}

// TestDeadLetterBoundsItsEntries: entries whose errors are ~934 KB each
// made every continue-as-new fail (TMPRL1103) and with it every query. Each
// entry's error is now clipped, the entries fit a budget, and past
// maxDeadLetterEntries a new slice is kept by merging the two closest
// neighbouring entries, so continue-as-new carries at most about 1 MB and
// every failed instant stays covered by an entry.
func TestDeadLetterBoundsItsEntries(t *testing.T) {
	huge := strings.Repeat("\u0001", 934<<10/6) // ~934 KB in history, as in the probe
	t.Run("three huge entries", func(t *testing.T) {
		env := newEnv(t)
		mockAlerts(env, 0)
		env.RegisterDelayedCallback(func() {
			for i := range 3 {
				env.SignalWorkflow(api.SignalDeadLetterAdd, failed(at(fmt.Sprintf("-%dh", i+1)), huge))
			}
		}, time.Minute)
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Minute)
		env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t)})

		var next api.DeadLetterInput
		continuedAs(t, env, api.DeadLetterWorkflowType, &next)
		require.Len(t, next.Entries, 3, "every failure kept")
		for _, e := range next.Entries {
			require.LessOrEqual(t, jsonSize(t, e.Error), textclip.MessageMax+2)
			require.Contains(t, e.Error, fmt.Sprintf("[clipped, %d bytes]", len(huge)))
		}
		t.Logf("continue-as-new input: %d bytes", jsonSize(t, next))
		require.Less(t, jsonSize(t, next), 64<<10)
	})
	t.Run("full", func(t *testing.T) {
		env := newEnv(t)
		al := mockAlerts(env, 0)
		var carried []api.DeadLetterEntry
		for i := range 1000 { // as a run of before could carry them: errors whole
			carried = append(carried, failed(at("-2000h").Add(time.Duration(i)*15*time.Minute), strings.Repeat("e", 3000)))
		}
		extra := failed(at("-1h"), huge)
		var st api.DeadLetterStatus
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, extra) }, time.Minute)
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(api.QueryDeadLetterStatus)
			require.NoError(t, err)
			require.NoError(t, v.Get(&st))
			env.SetContinueAsNewSuggested(true)
		}, 2*time.Minute)
		env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t), Entries: carried})

		var next api.DeadLetterInput
		continuedAs(t, env, api.DeadLetterWorkflowType, &next)
		require.Len(t, next.Entries, 1000, "two neighbours merged to keep the 1001st")
		require.Contains(t, ids(next.Entries), extra.SliceID)
		require.Equal(t, 0, st.Rejected)
		// Every failed window is still covered: the merged entry spans both.
		for _, c := range append(carried, extra) {
			covered := false
			for _, e := range next.Entries {
				covered = covered || (!e.Start.After(c.Start) && !e.End.Before(c.End))
			}
			require.True(t, covered, "window %s-%s covered", c.Start, c.End)
		}
		t.Logf("continue-as-new input with 1,000 entries: %d bytes", jsonSize(t, next))
		require.LessOrEqual(t, jsonSize(t, next), 1<<20, "within the budget")
		var alerted bool
		for _, a := range al.all() {
			alerted = alerted || (a.SliceID == extra.SliceID && strings.Contains(a.Message, "merged into one window"))
			require.LessOrEqual(t, jsonSize(t, a.Message), 4*textclip.MessageMax)
		}
		require.True(t, alerted, "the merge is alerted")
	})
}

// TestDeliveryRefusesOversizedSignals: a 1.9 MB pause reason, and a signal
// whose unknown field's name is 1.9 MB. The reason was applied and the
// refusal text kept whole in last_error, so every continue-as-new failed
// and the status query with it. Both are refused and counted now, with a
// clipped text naming the field and the limit; the update is refused by
// its validator; the Delivery goes on delivering and continues as new.
func TestDeliveryRefusesOversizedSignals(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{seqs: []int64{1, 2, 3, 4, 5, 6, 7}}
	f.mock(env)
	mockAlerts(env, 0)
	var afterReason, afterField api.DeliveryStatus
	var upd *updateOutcome
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeliveryPause, api.PauseRequest{Reason: hugeReason})
	}, 100*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		afterReason = deliveryStatus(t, env)
		env.SignalWorkflow(api.SignalDeliveryPause, json.RawMessage(`{"`+hugeReason+`":1}`))
	}, 200*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		afterField = deliveryStatus(t, env)
		upd = sendUpdate(env, api.SignalDeliveryPause, api.PauseRequest{Reason: hugeReason})
	}, 300*time.Millisecond)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination(), MaxBatchesPerRun: 2})

	require.False(t, afterReason.State.Paused)
	require.Equal(t, 1, afterReason.State.Rejected)
	require.Contains(t, afterReason.State.LastError, fmt.Sprintf("reason is %d bytes, more than the limit of %d bytes", len(hugeReason), textclip.MessageMax))
	require.Equal(t, 2, afterField.State.Rejected)
	require.Contains(t, afterField.State.LastError, "unknown field")
	require.LessOrEqual(t, jsonSize(t, afterField.State.LastError), textclip.MessageMax+2)
	require.ErrorContains(t, upd.rejected, "reason is 1945600 bytes, more than the limit of 2048 bytes")

	var next api.DeliveryInput
	continuedAs(t, env, api.DeliveryWorkflowType, &next)
	t.Logf("continue-as-new input: %d bytes", jsonSize(t, next))
	require.Less(t, jsonSize(t, next), 16<<10, "continue-as-new carries a small state")
	require.False(t, next.State.Paused)
	require.Equal(t, 2, next.State.Rejected)
}

// TestCursorRefusesAnOversizedPauseReason: the cursor's pause, by signal
// and by update, refuses a 1.9 MB reason (it was kept and carried).
func TestCursorRefusesAnOversizedPauseReason(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	mockPages(env, watchPages(env), onePage, nil)
	var afterSignal api.CursorStatus
	var upd *updateOutcome
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalPause, api.PauseRequest{Reason: hugeReason})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		afterSignal = status(t, env)
		upd = sendUpdate(env, api.SignalPause, api.PauseRequest{Reason: hugeReason})
	}, 2*time.Minute)
	stopAt(env, 3*time.Minute, func() {})
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.False(t, afterSignal.Paused)
	require.Contains(t, afterSignal.LastError, "pause signal: reason is 1945600 bytes, more than the limit of 2048 bytes")
	require.ErrorContains(t, upd.rejected, "reason is 1945600 bytes")
}

// TestDeliveryBeforeBoundsAppliesOversizedPauseClipped: a history recorded
// before versionBoundedText applied an oversized pause, and replays so;
// the reason is kept clipped, so its continue-as-new fits.
func TestDeliveryBeforeBoundsAppliesOversizedPauseClipped(t *testing.T) {
	env := newEnv(t)
	env.OnGetVersion("bounded-untrusted-text", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	f := &fakeDestination{seqs: []int64{1, 2, 3}}
	f.mock(env)
	mockAlerts(env, 0)
	var paused api.DeliveryStatus
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeliveryPause, api.PauseRequest{Reason: hugeReason})
	}, 100*time.Millisecond)
	stopAt(env, time.Minute, func() { paused = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)

	require.True(t, paused.State.Paused, "applied, as before the bound")
	require.Zero(t, paused.State.Rejected)
	require.LessOrEqual(t, jsonSize(t, paused.State.PauseReason), textclip.MessageMax+2)
	require.Contains(t, paused.State.PauseReason, "[clipped, 1945600 bytes]")
}
