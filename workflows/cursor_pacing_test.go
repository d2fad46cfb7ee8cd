package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// pacedSlice is one slice child a cursor started: its window and when.
type pacedSlice struct {
	Start, End, At time.Time
}

// hybridRun runs a cursor of 1-minute intervals (10s settle) from t0,
// with webhook_interval as given, for the given time; lastEvent answers
// the WebhookActivity check at the test clock (zero: no event ever). It
// returns the slices started and the test clock of every check.
type hybridRun struct {
	slices []pacedSlice
	checks []time.Time
	mu     sync.Mutex
}

func hybridPlatform(t *testing.T, webhookInterval time.Duration) api.Settings {
	p := testPlatform(t)
	p.Start = t0.Format(time.RFC3339)
	p.Interval, p.Overlap, p.Settle = config.Duration(time.Minute), config.Duration(30*time.Second), config.Duration(10*time.Second)
	p.WebhookInterval = config.Duration(webhookInterval)
	require.NoError(t, config.ValidateSettings(p))
	return p
}

func (r *hybridRun) mock(env *testsuite.TestWorkflowEnvironment, lastEvent func(now time.Time) time.Time) {
	env.OnWorkflow(api.SliceWorkflowType, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
			r.slices = append(r.slices, pacedSlice{Start: in.Start.UTC(), End: in.End.UTC(), At: workflow.Now(ctx).UTC()})
			return api.SliceResult{Outcome: api.SliceCompleted, Pages: 1}, nil
		})
	env.OnActivity(acts.WebhookActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, platform string) (api.WebhookActivity, error) {
			if platform != platformName {
				panic("webhook activity of " + platform)
			}
			now := env.Now().UTC()
			r.mu.Lock()
			r.checks = append(r.checks, now)
			r.mu.Unlock()
			last := lastEvent(now)
			if last.IsZero() {
				return api.WebhookActivity{}, nil
			}
			return api.WebhookActivity{LastEventAt: last, Events: 7}, nil
		})
}

func (r *hybridRun) checkCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.checks)
}

// windows is the slices' windows as offsets from t0 ("0s-15m0s").
func (r *hybridRun) windows() []string {
	var out []string
	for _, s := range r.slices {
		out = append(out, s.Start.Sub(t0).String()+"-"+s.End.Sub(t0).String())
	}
	return out
}

// TestHybridPacingLiveWaitsForWebhookInterval: while the account's
// webhooks are live (an event within 2 x webhook_interval), the cursor
// asks the store once per slice, when its first minute has settled, holds
// it until webhook_interval has settled and fetches the 15 grid intervals
// as one slice. Status says the interval in force and why.
func TestHybridPacingLiveWaitsForWebhookInterval(t *testing.T) {
	env := newEnv(t)
	p := hybridPlatform(t, 15*time.Minute)
	run := &hybridRun{}
	run.mock(env, func(now time.Time) time.Time { return now.Add(-time.Minute) })
	var holding api.CursorStatus
	env.RegisterDelayedCallback(func() { holding = status(t, env) }, 5*time.Minute)
	stopAt(env, 40*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, []string{"0s-15m0s", "15m0s-30m0s"}, run.windows())
	require.Equal(t, at("15m10s"), run.slices[0].At, "started once the whole webhook_interval settled")
	require.Equal(t, at("30m10s"), run.slices[1].At)
	require.Equal(t, []time.Time{at("1m10s"), at("16m10s"), at("31m10s")}, run.checks, "one check per slice")

	require.Equal(t, api.WaitSettling, holding.Waiting)
	require.Equal(t, at("15m10s"), holding.WaitUntil.UTC())
	require.NotNil(t, holding.Pacing)
	require.True(t, holding.Pacing.Live)
	require.Equal(t, "15m0s", holding.Pacing.Interval)
	require.Equal(t, "30m0s", holding.Pacing.LiveFor)
	require.Equal(t, at("1m10s"), holding.Pacing.CheckedAt.UTC())
	require.Contains(t, holding.Pacing.Reason, "webhooks live: last event 2026-03-02T12:00:10Z")
}

// TestHybridPacingNotLivePollsAtInterval: the last event is older than
// 2 x webhook_interval (or there never was one): every slice starts as
// soon as its minute settled, as without webhooks, and status says since
// when the fast path is not live.
func TestHybridPacingNotLivePollsAtInterval(t *testing.T) {
	for name, last := range map[string]time.Time{"stale": at("-31m"), "never": {}} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			p := hybridPlatform(t, 15*time.Minute)
			run := &hybridRun{}
			run.mock(env, func(time.Time) time.Time { return last })
			var st api.CursorStatus
			stopAt(env, 4*time.Minute+30*time.Second, func() { st = status(t, env) })

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			require.Equal(t, []string{"0s-1m0s", "1m0s-2m0s", "2m0s-3m0s", "3m0s-4m0s"}, run.windows())
			require.Equal(t, at("1m10s"), run.slices[0].At)
			require.Equal(t, 4, run.checkCount())
			require.NotNil(t, st.Pacing)
			require.False(t, st.Pacing.Live)
			require.Equal(t, "1m0s", st.Pacing.Interval)
			if last.IsZero() {
				require.Equal(t, "webhooks not live: no event accepted yet", st.Pacing.Reason)
			} else {
				require.Equal(t, "webhooks not live since 2026-03-02T11:59:00Z: last event 2026-03-02T11:29:00Z", st.Pacing.Reason)
			}
		})
	}
}

// TestHybridPacingFallsBackWhenEventsStop: events stop at 10m, so the fast
// path is dead from 40m (2 x webhook_interval later). The cursor notices
// at its next check, at most one webhook_interval later, and polls every
// minute again by itself, from where the last batch ended: no gap.
func TestHybridPacingFallsBackWhenEventsStop(t *testing.T) {
	env := newEnv(t)
	p := hybridPlatform(t, 15*time.Minute)
	run := &hybridRun{}
	run.mock(env, func(now time.Time) time.Time {
		if now.After(at("10m")) {
			return at("10m")
		}
		return now.Add(-30 * time.Second)
	})
	var after api.CursorStatus
	stopAt(env, 48*time.Minute+30*time.Second, func() { after = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, []string{"0s-15m0s", "15m0s-30m0s", "30m0s-45m0s", "45m0s-46m0s", "46m0s-47m0s", "47m0s-48m0s"}, run.windows())
	dead := at("40m")
	back := run.slices[3].At
	require.Equal(t, at("46m10s"), back)
	require.LessOrEqual(t, back.Sub(dead), 15*time.Minute, "back at interval within one webhook_interval of the fast path dying")
	require.False(t, after.Pacing.Live)
	require.Equal(t, "1m0s", after.Pacing.Interval)
	require.Equal(t, "webhooks not live since 2026-03-02T12:40:00Z: last event 2026-03-02T12:10:00Z", after.Pacing.Reason)
}

// TestNoWebhookIntervalNoCheck: a platform without webhook_interval never
// asks the store (no extra action) and shows no pacing; a `config` message
// that sets it reaches the running cursor, which asks from its next slice.
func TestNoWebhookIntervalNoCheck(t *testing.T) {
	env := newEnv(t)
	p := hybridPlatform(t, 0)
	run := &hybridRun{}
	run.mock(env, func(now time.Time) time.Time { return now })
	var before api.CursorStatus
	var checksBefore int
	env.RegisterDelayedCallback(func() {
		before, checksBefore = status(t, env), run.checkCount()
		change := p
		change.WebhookInterval = config.Duration(15 * time.Minute)
		env.SignalWorkflow(api.SignalConfig, change)
	}, 5*time.Minute+30*time.Second)
	stopAt(env, 25*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Zero(t, checksBefore, "no webhook_interval: the store is never asked")
	require.Nil(t, before.Pacing)
	require.Equal(t, []string{"0s-1m0s", "1m0s-2m0s", "2m0s-3m0s", "3m0s-4m0s", "4m0s-5m0s", "5m0s-20m0s"}, run.windows())
	require.Equal(t, []time.Time{at("6m10s"), at("21m10s")}, run.checks)
}

// TestHybridPacingDecidesWhileASliceRuns: a wide slice that takes three
// minutes does not delay the next decision: the cursor asks when the next
// slice's first minute settles (16m10s), not when the running one reports.
func TestHybridPacingDecidesWhileASliceRuns(t *testing.T) {
	env := newEnv(t)
	p := hybridPlatform(t, 15*time.Minute)
	run := &hybridRun{}
	env.OnWorkflow(api.SliceWorkflowType, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
			run.slices = append(run.slices, pacedSlice{Start: in.Start.UTC(), End: in.End.UTC(), At: workflow.Now(ctx).UTC()})
			if err := workflow.Sleep(ctx, 3*time.Minute); err != nil {
				return api.SliceResult{}, err
			}
			return api.SliceResult{Outcome: api.SliceCompleted, Pages: 1}, nil
		})
	env.OnActivity(acts.WebhookActivity, mock.Anything, mock.Anything).Return(
		func(context.Context, string) (api.WebhookActivity, error) {
			now := env.Now().UTC()
			run.mu.Lock()
			run.checks = append(run.checks, now)
			run.mu.Unlock()
			return api.WebhookActivity{LastEventAt: now.Add(-time.Minute), Events: 3}, nil
		})
	stopAt(env, 20*time.Minute, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, []string{"0s-15m0s"}, run.windows())
	require.Equal(t, []time.Time{at("1m10s"), at("16m10s")}, run.checks)
}
