package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

func testDestination() api.DestinationSettings {
	return testDestinationEntry().Settings()
}

// testDestinationEntry is testDestination as the registry holds it,
// identity included.
func testDestinationEntry() config.Destination {
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL = "oms", "webhook", "https://oms.example.com/hook"
	d.Secret = config.CredentialRef{Env: "OMS_SECRET"}
	d.BatchSize, d.Retries, d.BreakerFailures = 3, 0, 2
	d.RateLimit = config.RateLimit{RPS: 100, Burst: 100}
	return d
}

// fakeDestination is the feed (seqs 1..n, more appended by tests) and a
// receiver whose answer a test decides per delivered range.
type fakeDestination struct {
	mu        sync.Mutex
	seqs      []int64
	delivered []api.SeqRange // every DeliverChanges call, in order
	answer    func(r api.SeqRange) error
}

func (f *fakeDestination) mock(env *testsuite.TestWorkflowEnvironment) {
	// An empty feed answers after the long poll, as the real activity does.
	env.OnActivity(acts.NextBatch, mock.Anything, mock.Anything).After(time.Second).Return(
		func(_ context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			out := api.NextBatchResult{After: req.After}
			for _, s := range f.seqs {
				if s > req.After && len(out.Seqs) < req.Limit {
					out.Seqs = append(out.Seqs, s)
				}
			}
			return out, nil
		}).Maybe()
	env.OnActivity(acts.DeliverChanges, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.delivered = append(f.delivered, req.SeqRange)
			if f.answer != nil {
				if err := f.answer(req.SeqRange); err != nil {
					return api.DeliverResult{}, err
				}
			}
			return api.DeliverResult{Delivered: req.Expect}, nil
		}).Maybe()
}

func (f *fakeDestination) ranges() []api.SeqRange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.SeqRange(nil), f.delivered...)
}

func refused(code string) error {
	return temporal.NewNonRetryableApplicationError(code, activities.ErrDeliveryRefused, nil)
}

func deliveryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.DeliveryStatus {
	t.Helper()
	v, err := env.QueryWorkflow(api.QueryDeliveryStatus)
	require.NoError(t, err)
	var s api.DeliveryStatus
	require.NoError(t, v.Get(&s))
	return s
}

func r(after, to int64) api.SeqRange { return api.SeqRange{After: after, To: to} }

func TestDeliveryMovesAckOnlyAfterConfirmation(t *testing.T) {
	tests := []struct {
		name        string
		seqs        []int64
		answer      func(api.SeqRange) error
		wantRanges  []api.SeqRange
		wantAcked   int64
		wantPoison  []int64
		wantAlerts  []string
		wantBreaker bool
	}{
		{name: "batches of three", seqs: []int64{1, 2, 3, 4, 5, 6, 7},
			wantRanges: []api.SeqRange{r(0, 3), r(3, 6), r(6, 7)}, wantAcked: 7},
		{name: "gaps in seqs (a destination limited to some platforms)", seqs: []int64{2, 5, 9},
			wantRanges: []api.SeqRange{r(0, 9)}, wantAcked: 9},
		{name: "a refused batch is delivered one by one; only the refused change is set aside", seqs: []int64{1, 2, 3},
			answer: func(x api.SeqRange) error {
				if x.To-x.After > 1 || x.To == 2 {
					return refused("HTTP 422")
				}
				return nil
			},
			wantRanges: []api.SeqRange{r(0, 3), r(0, 1), r(1, 2), r(2, 3)}, wantAcked: 3, wantPoison: []int64{2},
			wantAlerts: []string{api.AlertDeliveryPoison}},
		{name: "failures trip the breaker and nothing is acknowledged", seqs: []int64{1, 2},
			answer:     func(api.SeqRange) error { return temporal.NewApplicationError("HTTP 503", activities.ErrTransient) },
			wantRanges: []api.SeqRange{r(0, 2), r(0, 2)}, wantAcked: 0, wantBreaker: true,
			wantAlerts: []string{api.AlertDeliveryBreaker}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			f := &fakeDestination{seqs: tc.seqs, answer: tc.answer}
			f.mock(env)
			al := mockAlerts(env, 0)
			var st api.DeliveryStatus
			stopAt(env, time.Minute, func() { st = deliveryStatus(t, env) })
			env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
			requireStopped(t, env)
			require.Equal(t, tc.wantRanges, f.ranges())
			require.Equal(t, tc.wantAcked, st.State.Acked)
			var poison []int64
			for _, p := range st.State.Poison {
				poison = append(poison, p.Seq)
				require.Equal(t, "HTTP 422", p.Reason, "the status, never the body")
			}
			require.Equal(t, tc.wantPoison, poison)
			require.Equal(t, tc.wantBreaker, st.State.BreakerOpen)
			var kinds []string
			for _, a := range al.all() {
				kinds = append(kinds, a.Kind)
			}
			require.Equal(t, tc.wantAlerts, kinds)
		})
	}
}

func TestDeliveryMessages(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{seqs: []int64{1, 2, 3}}
	refuse2 := true
	f.answer = func(x api.SeqRange) error {
		if refuse2 && (x.To-x.After > 1 || x.To == 2) {
			return refused("HTTP 409")
		}
		return nil
	}
	f.mock(env)
	mockAlerts(env, 0)
	var paused, resumed, retried, afterBadSignal api.DeliveryStatus
	var badRetry, unknownField *updateOutcome
	env.RegisterDelayedCallback(func() {
		require.Equal(t, []int64{2}, poisonSeqs(deliveryStatus(t, env)))
		env.SignalWorkflow(api.SignalDeliveryPause, json.RawMessage(`{"reason":"receiver maintenance"}`))
		f.mu.Lock()
		f.seqs = append(f.seqs, 4, 5)
		f.mu.Unlock()
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		paused = deliveryStatus(t, env)
		badRetry = sendUpdate(env, api.SignalDeliveryRetry, json.RawMessage(`{"seq":3}`))
		unknownField = sendUpdate(env, api.SignalDeliveryPause, json.RawMessage(`{"reasn":"x"}`))
		env.SignalWorkflow(api.SignalDeliverySkip, json.RawMessage(`{"sequence":2}`))
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		afterBadSignal = deliveryStatus(t, env)
		sendUpdate(env, api.SignalDeliveryResume)
	}, 25*time.Second)
	env.RegisterDelayedCallback(func() {
		resumed = deliveryStatus(t, env)
		refuse2 = false
		env.SignalWorkflow(api.SignalDeliveryRetry, json.RawMessage(`{"seq":2}`))
	}, 40*time.Second)
	stopAt(env, time.Minute, func() { retried = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)

	require.Equal(t, int64(3), paused.State.Acked, "paused: 4 and 5 wait")
	require.Equal(t, "paused: receiver maintenance", paused.Waiting)
	require.ErrorContains(t, badRetry.rejected, "change 3 is not set aside")
	require.ErrorContains(t, unknownField.rejected, "unknown field")
	require.Equal(t, 1, afterBadSignal.State.Rejected, "a skip with an unknown field changes nothing but the count")
	require.Equal(t, []int64{2}, poisonSeqs(afterBadSignal))
	require.Equal(t, int64(5), resumed.State.Acked)
	require.Empty(t, poisonSeqs(retried), "the retried change was delivered")
	require.Equal(t, int64(1), retried.State.Counts.Retried)
	require.Contains(t, f.ranges(), r(1, 2))
}

// The poison query answers a JSON list, [] when nothing is set aside:
// before anything was, and once the list was emptied again (a skip, a
// retry that went through).
func TestDeliveryPoisonQueryAnswersAList(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{seqs: []int64{1, 2, 3}}
	f.answer = func(x api.SeqRange) error {
		if x.To-x.After > 1 || x.To == 2 {
			return refused("HTTP 409")
		}
		return nil
	}
	f.mock(env)
	mockAlerts(env, 0)
	poison := func() string {
		v, err := env.QueryWorkflow(api.QueryDeliveryPoison)
		require.NoError(t, err)
		var raw json.RawMessage
		require.NoError(t, v.Get(&raw))
		return string(raw)
	}
	var first, setAside, skipped string
	env.RegisterDelayedCallback(func() { first = poison() }, 500*time.Millisecond) // listing the first batch
	env.RegisterDelayedCallback(func() {
		setAside = poison()
		env.SignalWorkflow(api.SignalDeliverySkip, json.RawMessage(`{"seq":2}`))
	}, 10*time.Second)
	stopAt(env, 20*time.Second, func() { skipped = poison() })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)

	require.Equal(t, "[]", first)
	require.Contains(t, setAside, `"seq":2`)
	require.Equal(t, "[]", skipped)
}

func poisonSeqs(s api.DeliveryStatus) []int64 {
	var out []int64
	for _, p := range s.State.Poison {
		out = append(out, p.Seq)
	}
	return out
}

func TestDeliveryContinuesAsNewWithItsState(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{seqs: []int64{1, 2, 3, 4, 5, 6, 7}}
	f.mock(env)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination(), MaxBatchesPerRun: 2,
		State: &api.DeliveryState{Runs: 3, Poison: []api.PoisonChange{{Seq: 0, Reason: "HTTP 400"}}}})
	var next api.DeliveryInput
	continuedAs(t, env, api.DeliveryWorkflowType, &next)
	require.Equal(t, int64(6), next.State.Acked)
	require.Equal(t, 4, next.State.Runs)
	require.Equal(t, int64(6), next.State.Counts.Changes)
	require.Len(t, next.State.Poison, 1, "the poison list travels")
	require.Equal(t, 2, next.MaxBatchesPerRun)
}

func TestDeliveryWaitsForItsWorkWindow(t *testing.T) {
	env := newEnv(t)
	d := testDestination()
	d.Windows = []string{"* 13:00-14:00"} // t0 is 12:00 UTC
	f := &fakeDestination{seqs: []int64{1}}
	f.mock(env)
	var before api.DeliveryStatus
	env.RegisterDelayedCallback(func() { before = deliveryStatus(t, env) }, 30*time.Minute)
	stopAt(env, 61*time.Minute, nil)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
	requireStopped(t, env)
	require.Equal(t, "outside work windows", before.Waiting)
	require.Equal(t, int64(0), before.State.Acked)
	require.Equal(t, []api.SeqRange{r(0, 1)}, f.ranges())
}

func TestDeliveryRefusesInvalidSettings(t *testing.T) {
	env := newEnv(t)
	d := testDestination()
	d.BatchSize = 0
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
	require.ErrorContains(t, env.GetWorkflowError(), "batch_size")
}

func TestDeliveryConfigMessage(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{}
	f.mock(env)
	other := testDestination()
	other.Name = "elsewhere"
	bigger := testDestination()
	bigger.BatchSize = 10
	invalid := testDestination()
	invalid.MaxInFlight = 17
	var wrongName, bad, good *updateOutcome
	env.RegisterDelayedCallback(func() {
		wrongName = sendUpdate(env, api.SignalDeliveryConfig, other)
		bad = sendUpdate(env, api.SignalDeliveryConfig, invalid)
		good = sendUpdate(env, api.SignalDeliveryConfig, bigger)
	}, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		f.seqs = []int64{1, 2, 3, 4, 5}
		f.mu.Unlock()
	}, 10*time.Second)
	stopAt(env, time.Minute, nil)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)
	require.ErrorContains(t, wrongName.rejected, `settings are for destination "elsewhere"`)
	require.ErrorContains(t, bad.rejected, "max_in_flight")
	require.NoError(t, good.rejected)
	require.Equal(t, []api.SeqRange{r(0, 5)}, f.ranges(), "the new batch size applies to the next batch")
}

// TestDeliveryResumeAnswersDelivering: the resume update's answer is
// computed before the paused loop wakes, so it must not repeat the wait
// the resume just ended (`ordersync deliveries resume` printed "paused").
func TestDeliveryResumeAnswersDelivering(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{seqs: []int64{1}}
	f.mock(env)
	var resumed *updateOutcome
	env.RegisterDelayedCallback(func() {
		sendUpdate(env, api.SignalDeliveryPause, json.RawMessage(`{"reason":"try it"}`))
	}, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		require.Equal(t, "paused: try it", deliveryStatus(t, env).Waiting)
		resumed = sendUpdate(env, api.SignalDeliveryResume)
	}, 10*time.Second)
	stopAt(env, 20*time.Second, nil)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)

	require.True(t, resumed.done)
	require.NoError(t, resumed.err)
	st, ok := resumed.result.(api.DeliveryStatus)
	if !ok {
		raw, err := json.Marshal(resumed.result)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &st))
	}
	require.False(t, st.State.Paused)
	require.Empty(t, st.Waiting, "the answer to resume says it delivers again")
}

// The long-polling NextBatch runs with a heartbeat timeout of a few
// seconds, in one batch at a time and in lanes, so a worker killed
// mid-poll stalls delivery for seconds, not the 50s start-to-close timeout
// (activities.TestNextBatchHeartbeatsWhileItWaits: the activity beats).
func TestDeliveryPollHasAHeartbeatTimeout(t *testing.T) {
	for _, lanes := range []int{1, 4} {
		t.Run(fmt.Sprintf("max_in_flight %d", lanes), func(t *testing.T) {
			env := newEnv(t)
			d := testDestination()
			d.MaxInFlight = lanes
			if lanes > 1 {
				newLaneFeed(0, 1).mock(env)
			} else {
				(&fakeDestination{}).mock(env)
			}
			var mu sync.Mutex
			var polls []time.Duration
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == "NextBatch" {
					mu.Lock()
					defer mu.Unlock()
					polls = append(polls, info.HeartbeatTimeout)
				}
			})
			stopAt(env, 10*time.Second, nil)
			env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
			requireStopped(t, env)
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, polls)
			for _, ht := range polls {
				require.Equal(t, 5*time.Second, ht)
			}
		})
	}
}

// DeliverChanges runs with a heartbeat timeout of a few seconds, in one
// batch at a time and in lanes (as a regular activity), so a worker killed
// mid-batch stalls that batch for seconds, not for its start-to-close
// timeout (activities.TestDeliverChangesHeartbeatsWhileItSends: the
// activity beats). A history from before versionDeliverHeartbeat (no
// marker, as a replay answers) delivers without one.
func TestDeliveryDeliverHasAHeartbeatTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lanes  int
		before bool
		want   time.Duration
	}{
		{"max_in_flight 1", 1, false, 10 * time.Second},
		{"max_in_flight 4", 4, false, 10 * time.Second},
		{"history from before", 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			if tc.before {
				env.OnGetVersion("delivery-deliver-heartbeat", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			d := testDestination()
			d.MaxInFlight = tc.lanes
			if tc.lanes > 1 {
				newLaneFeed(2, 2).mock(env) // no lane fills: regular activities, not local ones
			} else {
				(&fakeDestination{seqs: []int64{1, 2, 3, 4}}).mock(env)
			}
			var mu sync.Mutex
			var sends []time.Duration
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == "DeliverChanges" {
					mu.Lock()
					defer mu.Unlock()
					sends = append(sends, info.HeartbeatTimeout)
				}
			})
			stopAt(env, 10*time.Second, nil)
			env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
			requireStopped(t, env)
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, sends)
			for _, ht := range sends {
				require.Equal(t, tc.want, ht)
			}
		})
	}
}

// Every update answers with the state after its change, whatever the loop
// was doing when it arrived: a resume that interrupts the paused wait is
// not answered "paused" (as it was while the loop slept), and a pause
// during the long poll is answered "paused".
func TestDeliveryUpdatesAnswerTheStateAfterTheChange(t *testing.T) {
	env := newEnv(t)
	d := testDestination()
	d.Windows = []string{"* 12:00-12:30"} // t0 is 12:00 UTC
	(&fakeDestination{seqs: []int64{1}}).mock(env)
	var pausedInPoll, resumedFromSleep, pausedAgain, resumedOutsideWindow *updateOutcome
	var sleeping api.DeliveryStatus
	env.RegisterDelayedCallback(func() {
		// NextBatch answers after 1s: at 0.5s the loop is in its first poll.
		pausedInPoll = sendUpdate(env, api.SignalDeliveryPause, json.RawMessage(`{"reason":"maintenance"}`))
	}, 500*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		sleeping = deliveryStatus(t, env)
		resumedFromSleep = sendUpdate(env, api.SignalDeliveryResume, json.RawMessage(`{}`))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		pausedAgain = sendUpdate(env, api.SignalDeliveryPause, json.RawMessage(`{}`))
	}, 20*time.Minute)
	env.RegisterDelayedCallback(func() {
		resumedOutsideWindow = sendUpdate(env, api.SignalDeliveryResume, json.RawMessage(`{}`))
	}, 40*time.Minute)
	stopAt(env, 41*time.Minute, nil)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
	requireStopped(t, env)

	answer := func(o *updateOutcome) api.DeliveryStatus {
		t.Helper()
		require.True(t, o.done)
		require.NoError(t, o.err)
		s, ok := o.result.(api.DeliveryStatus)
		require.True(t, ok, "result %T", o.result)
		return s
	}
	require.Equal(t, "paused: maintenance", answer(pausedInPoll).Waiting)
	require.Equal(t, "paused: maintenance", sleeping.Waiting, "the loop sleeps paused when the resume arrives")
	require.Equal(t, int64(0), sleeping.State.Acked)
	resumed := answer(resumedFromSleep)
	require.False(t, resumed.State.Paused)
	require.Empty(t, resumed.Waiting, "resumed: delivering, not the paused wait it ended")
	require.Equal(t, "paused: paused by operator", answer(pausedAgain).Waiting)
	late := answer(resumedOutsideWindow)
	require.Equal(t, "outside work windows", late.Waiting, "resumed, but the window has closed")
	require.Equal(t, t0.Add(24*time.Hour), late.WaitUntil)
}

// Once a change is set aside, every listing names it, so the store's
// record of the acknowledgement stays below it (the activity's half:
// activities.TestNextBatchKeepsTheStoreAckBelowSetAsideChanges).
func TestDeliveryListingsNameTheOldestSetAsideChange(t *testing.T) {
	env := newEnv(t)
	var mu sync.Mutex
	var reqs []api.NextBatchRequest
	env.OnActivity(acts.NextBatch, mock.Anything, mock.Anything).After(time.Second).Return(
		func(_ context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			out := api.NextBatchResult{After: req.After}
			for _, s := range []int64{1, 2, 3} {
				if s > req.After {
					out.Seqs = append(out.Seqs, s)
				}
			}
			return out, nil
		})
	env.OnActivity(acts.DeliverChanges, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
			if req.To-req.After > 1 || req.To == 2 {
				return api.DeliverResult{}, refused("HTTP 422")
			}
			return api.DeliverResult{Delivered: 1}, nil
		})
	mockAlerts(env, 0)
	stopAt(env, 10*time.Second, nil)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(reqs), 1)
	require.Zero(t, reqs[0].OldestSetAside, "nothing set aside yet")
	for _, r := range reqs[1:] {
		require.Equal(t, int64(3), r.After)
		require.Equal(t, int64(2), r.OldestSetAside)
	}
}
