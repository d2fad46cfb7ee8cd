package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
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
)

// laneFeed is a feed of changes of a few orders and a receiver that
// remembers every delivery attempt, so a test can check what a receiver
// saw: per order, never a change sent for the first time after a newer
// one of the same order; the acknowledged seq never past an unconfirmed
// change.
type laneFeed struct {
	mu     sync.Mutex
	orders map[int64]string // seq -> order id
	seqs   []int64
	// answer decides a lane attempt: the n-th (from 1) of its batch.
	answer func(req api.DeliverRequest, n int) error

	attempts  []api.DeliverRequest
	tries     map[string]int
	confirmed map[int64]int // seq -> times confirmed
	poisoned  map[int64]bool
	listings  []int64 // After of every listing
	bad       []string
}

func newLaneFeed(n int, orders int) *laneFeed {
	f := &laneFeed{orders: map[int64]string{}, tries: map[string]int{}, confirmed: map[int64]int{}, poisoned: map[int64]bool{}}
	for seq := int64(1); seq <= int64(n); seq++ {
		f.seqs = append(f.seqs, seq)
		// Orders interleave, with runs of the same order, as a busy feed has.
		f.orders[seq] = fmt.Sprintf("o%d", (seq*7/3)%int64(orders))
	}
	return f
}

func (f *laneFeed) mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(acts.NextBatch, mock.Anything, mock.Anything).After(time.Second).Return(
		func(_ context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.listings = append(f.listings, req.After)
			for _, s := range f.seqs {
				if s <= req.After && f.confirmed[s] == 0 && !f.poisoned[s] {
					f.bad = append(f.bad, fmt.Sprintf("listing after %d while change %d is unconfirmed", req.After, s))
				}
			}
			out := api.NextBatchResult{After: req.After, To: req.After}
			if req.Lanes < 2 {
				f.bad = append(f.bad, fmt.Sprintf("listing with %d lanes", req.Lanes))
				return out, nil
			}
			lanes := make([][]int64, req.Lanes)
			for _, s := range f.seqs {
				if s <= req.After {
					continue
				}
				l := activities.LaneOf("p", f.orders[s], req.Lanes)
				if len(lanes[l]) == req.Limit {
					break
				}
				lanes[l], out.To = append(lanes[l], s), s
			}
			for l, seqs := range lanes {
				if len(seqs) > 0 {
					out.Lanes = append(out.Lanes, api.LaneBatch{Lane: l, Seqs: seqs})
				}
			}
			return out, nil
		}).Maybe()
	env.OnActivity(acts.DeliverChanges, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			seqs := req.Seqs
			if len(seqs) == 0 { // one change, delivered alone
				seqs = []int64{req.To}
			}
			req.Seqs = seqs
			f.attempts = append(f.attempts, req)
			key := fmt.Sprint(seqs)
			f.tries[key]++
			if f.answer != nil {
				if err := f.answer(req, f.tries[key]); err != nil {
					if isRefusal(err) && len(seqs) == 1 {
						f.poisoned[seqs[0]] = true
					}
					return api.DeliverResult{}, err
				}
			}
			for _, s := range seqs {
				f.confirmed[s]++
			}
			return api.DeliverResult{Delivered: len(seqs)}, nil
		}).Maybe()
}

func isRefusal(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrDeliveryRefused
}

// orderViolations replays the attempts as a receiver saw them (a failed
// attempt may have been processed too) and lists every change of an order
// sent for the first time after a newer change of that order was sent.
func (f *laneFeed) orderViolations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	sent := map[int64]bool{}
	newest := map[string]int64{}
	var out []string
	for _, a := range f.attempts {
		for _, s := range a.Seqs {
			o := f.orders[s]
			if !sent[s] && s < newest[o] {
				out = append(out, fmt.Sprintf("order %s: change %d sent first after change %d", o, s, newest[o]))
			}
			sent[s], newest[o] = true, max(newest[o], s)
		}
	}
	return out
}

func lanesDestination(lanes int) api.DeliveryInput {
	d := testDestination()
	d.MaxInFlight, d.BreakerFailures = lanes, 0
	return api.DeliveryInput{Destination: d}
}

func flaky(req api.DeliverRequest, n int) error {
	h := fnv.New32a()
	fmt.Fprint(h, req.Seqs)
	if (h.Sum32()+uint32(n))%3 == 0 {
		return temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
	}
	return nil
}

func TestDeliveryLanesKeepEachOrderInOrderThroughFailures(t *testing.T) {
	for _, lanes := range []int{2, 4, 7} {
		t.Run(fmt.Sprintf("%d lanes", lanes), func(t *testing.T) {
			env := newEnv(t)
			f := newLaneFeed(60, 9)
			f.answer = flaky
			f.mock(env)
			var mu sync.Mutex
			started := map[string]int{}
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				mu.Lock()
				started["regular "+info.ActivityType.Name]++
				mu.Unlock()
			})
			env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
				mu.Lock()
				started["local "+info.ActivityType.Name]++
				mu.Unlock()
			})
			var st api.DeliveryStatus
			stopAt(env, 10*time.Minute, func() { st = deliveryStatus(t, env) })
			env.ExecuteWorkflow(api.DeliveryWorkflowType, lanesDestination(lanes))
			requireStopped(t, env)

			require.Empty(t, f.bad)
			require.Empty(t, f.orderViolations())
			require.Equal(t, int64(60), st.State.Acked)
			require.Nil(t, st.State.Pending)
			for _, s := range f.seqs {
				require.Equal(t, 1, f.confirmed[s], "change %d: confirmed once (a confirmed lane is not sent again)", s)
			}
			require.Positive(t, st.State.Counts.Failures, "the receiver failed some lanes")
			require.Equal(t, int64(60), st.State.Counts.Changes)
			// Lanes of one range went out at once: some listing covered
			// more than one batch.
			maxRange := int64(0)
			for i := 1; i < len(f.listings); i++ {
				maxRange = max(maxRange, f.listings[i]-f.listings[i-1])
			}
			require.Greater(t, maxRange, int64(testDestination().BatchSize))
			// Full ranges (a backlog) are listed and delivered in local
			// activities; after a failed lane, regular ones.
			mu.Lock()
			defer mu.Unlock()
			for _, k := range []string{"local NextBatch", "local DeliverChanges", "regular NextBatch", "regular DeliverChanges"} {
				require.Positive(t, started[k], "%s: %v", k, started)
			}
		})
	}
}

func TestDeliveryLanesRetryOnlyTheFailedLane(t *testing.T) {
	env := newEnv(t)
	f := newLaneFeed(12, 12)
	failing := true
	var failedLane int
	f.answer = func(req api.DeliverRequest, n int) error {
		if failing && slices.Contains(req.Seqs, 1) {
			failedLane = req.Lane
			return temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return nil
	}
	f.mock(env)
	var during api.DeliveryStatus
	var attemptsDuring int
	env.RegisterDelayedCallback(func() {
		during = deliveryStatus(t, env)
		f.mu.Lock()
		attemptsDuring = len(f.attempts)
		f.mu.Unlock()
		failing = false
	}, 30*time.Second)
	var after api.DeliveryStatus
	stopAt(env, 2*time.Minute, func() { after = deliveryStatus(t, env) })
	d := lanesDestination(4)
	d.Destination.BatchSize = 10
	env.ExecuteWorkflow(api.DeliveryWorkflowType, d)
	requireStopped(t, env)

	require.Equal(t, int64(0), during.State.Acked, "a lane is unconfirmed: the acknowledged seq stays")
	require.NotNil(t, during.State.Pending)
	require.Len(t, during.State.Pending.Left, 1, "only the failed lane is left")
	require.Equal(t, failedLane, during.State.Pending.Left[0].Lane)
	require.Contains(t, during.State.Pending.Left[0].Seqs, int64(1))
	f.mu.Lock()
	firstRound := map[int]bool{}
	for _, a := range f.attempts[:4] {
		firstRound[a.Lane] = true
	}
	for _, a := range f.attempts[4:attemptsDuring] {
		require.Equal(t, failedLane, a.Lane, "retries resend the failed lane only")
	}
	f.mu.Unlock()
	require.Greater(t, attemptsDuring, 5, "the failed lane was retried")
	require.Len(t, firstRound, 4, "four lanes went out at once")
	require.Equal(t, int64(12), after.State.Acked)
	require.Empty(t, f.orderViolations())
}

func TestDeliveryLanesSetAsideRefusedChanges(t *testing.T) {
	env := newEnv(t)
	f := newLaneFeed(24, 6)
	f.answer = func(req api.DeliverRequest, _ int) error {
		if slices.Contains(req.Seqs, 5) || slices.Contains(req.Seqs, 17) {
			return refused("HTTP 422")
		}
		return nil
	}
	f.mock(env)
	al := mockAlerts(env, 0)
	var st api.DeliveryStatus
	stopAt(env, 5*time.Minute, func() { st = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, lanesDestination(3))
	requireStopped(t, env)

	require.Empty(t, f.bad)
	require.Empty(t, f.orderViolations())
	require.Equal(t, int64(24), st.State.Acked)
	require.Equal(t, []int64{5, 17}, poisonSeqs(st), "set aside, lowest seq first")
	require.Len(t, al.all(), 2)
	for _, s := range f.seqs {
		if s != 5 && s != 17 {
			require.Equal(t, 1, f.confirmed[s], "change %d", s)
		}
	}
}

func TestDeliveryLanesBreakerKeepsThePendingRange(t *testing.T) {
	env := newEnv(t)
	f := newLaneFeed(8, 8)
	down := true
	f.answer = func(req api.DeliverRequest, _ int) error {
		if down && slices.Contains(req.Seqs, 3) {
			return temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return nil
	}
	f.mock(env)
	mockAlerts(env, 0)
	in := lanesDestination(4)
	in.Destination.BreakerFailures = 2
	var open, resumed api.DeliveryStatus
	env.RegisterDelayedCallback(func() {
		open = deliveryStatus(t, env)
		down = false
		env.SignalWorkflow(api.SignalDeliveryResume, json.RawMessage(`{}`))
	}, time.Minute)
	stopAt(env, 2*time.Minute, func() { resumed = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, in)
	requireStopped(t, env)

	require.True(t, open.State.BreakerOpen)
	require.Equal(t, int64(0), open.State.Acked)
	require.Len(t, open.State.Pending.Left, 1)
	require.Equal(t, int64(8), resumed.State.Acked)
	require.Empty(t, f.orderViolations())
	for _, s := range f.seqs {
		require.Equal(t, 1, f.confirmed[s], "change %d", s)
	}
}

func TestDeliveryLanesContinueAsNewCarriesThePendingRange(t *testing.T) {
	env := newEnv(t)
	f := newLaneFeed(30, 30)
	f.answer = func(req api.DeliverRequest, _ int) error {
		if slices.Contains(req.Seqs, 13) {
			return temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return nil
	}
	f.mock(env)
	in := lanesDestination(4)
	in.MaxBatchesPerRun = 6
	env.ExecuteWorkflow(api.DeliveryWorkflowType, in)
	var next api.DeliveryInput
	continuedAs(t, env, api.DeliveryWorkflowType, &next)
	require.NotNil(t, next.State.Pending, "the range with the failed lane travels")
	require.Len(t, next.State.Pending.Left, 1)
	require.Contains(t, next.State.Pending.Left[0].Seqs, int64(13))
	require.Less(t, next.State.Acked, int64(13))
	require.Equal(t, next.State.Acked, next.State.Pending.After)
}

// TestDeliveryLanesRefusedBeforeTheirVersion: a history from before
// delivery in lanes (no marker) keeps its verdicts: a start asking for
// several batches in flight failed, a config signal asking for them was
// refused.
func TestDeliveryLanesRefusedBeforeTheirVersion(t *testing.T) {
	t.Run("start", func(t *testing.T) {
		env := newEnv(t)
		env.OnGetVersion("delivery-lanes", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		env.ExecuteWorkflow(api.DeliveryWorkflowType, lanesDestination(4))
		require.ErrorContains(t, env.GetWorkflowError(), "max_in_flight")
	})
	t.Run("config signal", func(t *testing.T) {
		env := newEnv(t)
		env.OnGetVersion("delivery-lanes", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		f := &fakeDestination{seqs: []int64{1, 2, 3, 4, 5}}
		f.mock(env)
		wide := testDestination()
		wide.MaxInFlight = 4
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeliveryConfig, wide) }, time.Second)
		var st api.DeliveryStatus
		stopAt(env, time.Minute, func() { st = deliveryStatus(t, env) })
		env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
		requireStopped(t, env)
		require.Equal(t, 1, st.State.Rejected)
		require.Equal(t, 1, st.Settings.MaxInFlight)
	})
	t.Run("config signal today", func(t *testing.T) {
		env := newEnv(t)
		f := newLaneFeed(20, 5)
		f.mock(env)
		wide := testDestination()
		wide.MaxInFlight = 4
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeliveryConfig, wide) }, 0)
		var st api.DeliveryStatus
		stopAt(env, time.Minute, func() { st = deliveryStatus(t, env) })
		env.ExecuteWorkflow(api.DeliveryWorkflowType, lanesDestination(1))
		requireStopped(t, env)
		require.Zero(t, st.State.Rejected)
		require.Equal(t, 4, st.Settings.MaxInFlight)
		require.Equal(t, int64(20), st.State.Acked)
	})
}

// TestDeliveryLanesLocalFailureGoesAgainAsARegularActivity: a lane that
// fails as a local activity (one attempt) is sent again at once as a
// regular activity, with the destination's retries, and is not yet a
// failed batch for the breaker.
func TestDeliveryLanesLocalFailureGoesAgainAsARegularActivity(t *testing.T) {
	env := newEnv(t)
	f := newLaneFeed(40, 40)
	f.answer = func(req api.DeliverRequest, n int) error {
		if slices.Contains(req.Seqs, 30) && n == 1 {
			return temporal.NewApplicationError("HTTP 503", activities.ErrTransient)
		}
		return nil
	}
	f.mock(env)
	var mu sync.Mutex
	var kinds []string // how each attempt at the lane holding 30 ran
	record := func(kind string, args []any) {
		if req, ok := args[0].(api.DeliverRequest); ok && slices.Contains(req.Seqs, 30) {
			mu.Lock()
			kinds = append(kinds, kind)
			mu.Unlock()
		}
	}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var req api.DeliverRequest
		if info.ActivityType.Name == "DeliverChanges" && args.Get(&req) == nil {
			record("regular", []any{req})
		}
	})
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []any) {
		if info.ActivityType.Name == "DeliverChanges" {
			record("local", args)
		}
	})
	var st api.DeliveryStatus
	stopAt(env, time.Minute, func() { st = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, lanesDestination(4))
	requireStopped(t, env)

	require.Equal(t, []string{"local", "regular"}, kinds)
	require.Zero(t, st.State.Counts.Failures)
	require.Equal(t, int64(40), st.State.Acked)
	require.Empty(t, f.orderViolations())
}
