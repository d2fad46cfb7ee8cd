package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// The differential test runs the frozen v0.1 cursor (v01cursor_test.go)
// and today's PlatformCursor side by side on random scenarios: slices that
// take random times and complete, split, fail into the dead-letter
// workflow, end without reporting or report an unknown outcome; pause,
// resume, reprocess and config by signal and by update, valid or not, with
// unknown fields or not; work windows, re-sweeps, the breaker, the lag
// alert, adaptive spans, continue-as-new by cap and by suggestion. Both must
// issue the same commands with the same content at the same workflow time,
// answer updates alike, show the same state in status, and carry the same
// state across continue-as-new; the next generation is then run from each
// carried form (v0.1's, and today's read both ways) and compared again.
//
// Today's cursor answers versionSliceGrid and versionDensitySpan with
// their old branches here (see run): with the aligned grid and one-step
// span growth the two place other slices by design.
//
// ORDERSYNC_DIFF_SEEDS sets how many scenarios run (default 60, 10 with
// -short); 300 take about a minute on two cores.

var diffT0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) // a Monday noon

func TestDifferentialAgainstV01(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	if s := os.Getenv("ORDERSYNC_DIFF_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		seeds = n
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			sc := newDiffScenario(seed, diffT0)
			v01 := sc.run(t, "v0.1", sc.freshInput("v0.1"))
			now := sc.run(t, "today", sc.freshInput("today"))
			requireSameRun(t, sc, "generation 1", v01, now)
			if v01.carried == nil {
				return
			}
			// The next generation, from what v0.1 carried (a cursor that
			// continued as new before the upgrade) and from what today's
			// code carried, read by today's code and by v0.1 (a worker of
			// the old release continuing a run the new one started).
			next := newDiffScenario(seed*7919, v01.endedAt)
			fromV01 := next.run(t, "v0.1", v01.carried)
			upgraded := next.run(t, "today", v01.carried)
			requireSameRun(t, next, "generation 2, v0.1 state read by today", fromV01, upgraded)
			continued := next.run(t, "today", now.carried)
			requireSameRun(t, next, "generation 2, today's state", fromV01, continued)
			// Today's state read by v0.1 (a rollback) is no longer
			// compared: from v0.8 inputs carry settings by reference, and
			// v0.1 to v0.7 refuse settings without an endpoint (see
			// versions.go, "Settings by reference").
		})
	}
}

// newerThanV01 are change IDs today's cursor asks that v0.1 did not know:
// a run records their markers where v0.1 recorded nothing, and the
// commands they guard (a search attribute upsert) are not commands the
// recorder compares.
var newerThanV01 = map[string]bool{versionPlatformState: true}

// withoutNewerMarkers drops the markers of newerThanV01 from a run's commands.
func withoutNewerMarkers(cmds []command) []command {
	var out []command
	for _, c := range cmds {
		if c.Kind == "version" && newerThanV01[c.Name] {
			continue
		}
		out = append(out, c)
	}
	return out
}

func requireSameRun(t *testing.T, sc *diffScenario, what string, want, got diffRun) {
	t.Helper()
	if d := diffCommands(withoutNewerMarkers(want.cmds), withoutNewerMarkers(got.cmds), sameForV01); d != "" {
		t.Fatalf("%s (%s): %s\nscenario: %s", what, got.impl, d, sc)
	}
	require.Equal(t, want.updates, got.updates, "%s (%s): update answers\nscenario: %s", what, got.impl, sc)
	require.Equal(t, len(want.statuses), len(got.statuses))
	for i := range want.statuses {
		w, g := want.statuses[i], got.statuses[i]
		if w.Waiting == "" {
			// v0.1 left the reason empty while it waited for a retry, a
			// re-sweep or the lag alert; today every wait has a name.
			if got.impl == "today" {
				require.NotEmpty(t, g.Waiting, "%s: status at %s has no wait reason\nscenario: %s", what, g.At, sc)
			}
			g.Waiting, g.WaitUntil = "", time.Time{}
		}
		require.Equal(t, w, g, "%s (%s): status at %s\nscenario: %s", what, got.impl, w.At, sc)
	}
	require.Equal(t, want.end, got.end, "%s (%s): how the run ended\nscenario: %s", what, got.impl, sc)
	require.Equal(t, string(want.carriedV01), string(got.carriedV01), "%s (%s): carried state\nscenario: %s", what, got.impl, sc)
}

// v01View is a cursor input as v0.1 reads it: today's input carries the
// slices twice, in today's form and in v0.1's, and v0.1 ignores the former.
func v01View(raw []byte) ([]byte, error) {
	var v01 v01CursorInput
	if err := json.Unmarshal(raw, &v01); err != nil {
		return nil, err
	}
	if v01.State != nil && v01.State.Pending == nil {
		v01.State.Pending = []v01SliceRef{} // v0.1 wrote null or [] for none; both read alike
	}
	return json.Marshal(v01)
}

// sameForV01 compares two continue-as-new inputs as v0.1 reads them, and
// two slice inputs but for the input versions v0.1 did not set; every
// other input must be equal byte for byte.
func sameForV01(kind, want, got string) error {
	want, got = settingsByReference(want), settingsByReference(got)
	if kind == "child" {
		want = withoutNewerSliceInputVersions(got, want)
		got = withoutNewerSliceInputVersions(want, got)
	}
	if kind == "continue-as-new" {
		w, err := v01View([]byte(want))
		if err != nil {
			return err
		}
		g, err := v01View([]byte(got))
		if err != nil {
			return err
		}
		want, got = string(w), string(g)
	}
	if want != got {
		return fmt.Errorf("\nwant %s\ngot  %s", indentJSON(want), indentJSON(got))
	}
	return nil
}

// diffScenario is one random scenario, the same for both cursors.
type diffScenario struct {
	seed       int64
	t0         time.Time
	platform   config.Platform
	start      time.Time
	maxSlices  int
	messages   []diffMessage
	suggestCAN time.Duration // 0: never
	stopAfter  time.Duration
	queries    []time.Duration
	alertDelay time.Duration
}

type diffMessage struct {
	after   time.Duration
	name    string
	payload any // nil: none
	update  bool
}

func (sc *diffScenario) String() string {
	b, _ := json.Marshal(map[string]any{
		"seed": sc.seed, "t0": sc.t0, "concurrency": sc.platform.Concurrency, "windows": sc.platform.Windows,
		"span": sc.platform.BackfillMaxSpan, "resweep": sc.platform.ResweepDelay, "breaker": sc.platform.BreakerFailures,
		"lag": sc.platform.LagAlert, "max_slices": sc.maxSlices, "messages": len(sc.messages), "suggest_can": sc.suggestCAN.String(),
		"alert_delay": sc.alertDelay.String(),
	})
	return string(b)
}

func newDiffScenario(seed int64, t0 time.Time) *diffScenario {
	rng := rand.New(rand.NewSource(seed))
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.Endpoint = "shop-x", "sim", "http://127.0.0.1:1/shops/x"
	p.Credentials = config.CredentialRef{Env: "X"}
	p.TaskQueue = "orders-x"
	p.Interval = config.Duration(15 * time.Minute)
	p.Overlap = config.Duration(2 * time.Minute)
	p.Settle = config.Duration(time.Minute)
	p.Retries, p.RetryInterval = 2, config.Duration(time.Duration(1+rng.Intn(30))*time.Second)
	p.Concurrency = 1 + rng.Intn(4)
	p.MaxPages = 4 + rng.Intn(8)
	p.PageSize = 50
	p.BackfillMaxSpan = config.Duration([]time.Duration{0, 0, 2 * time.Hour, 8 * time.Hour}[rng.Intn(4)])
	p.ResweepDelay = config.Duration([]time.Duration{0, 10 * time.Minute, 40 * time.Minute}[rng.Intn(3)])
	p.BreakerFailures = []int{0, 2, 3}[rng.Intn(3)]
	p.LagAlert = config.Duration([]time.Duration{0, 30 * time.Minute, 2 * time.Hour}[rng.Intn(3)])
	if rng.Intn(3) == 0 {
		p.Windows = []string{"MON-SUN 12:20-13:10", "MON-SUN 13:40-15:30 Europe/Berlin"}
	}
	sc := &diffScenario{seed: seed, t0: t0, platform: p,
		start:      t0.Add(-time.Duration(1+rng.Intn(10)) * time.Hour).Truncate(time.Minute),
		maxSlices:  []int{0, 5, 12, 30}[rng.Intn(4)],
		stopAfter:  time.Duration(2+rng.Intn(5)) * time.Hour,
		alertDelay: []time.Duration{0, 3 * time.Minute}[rng.Intn(2)],
	}
	if rng.Intn(4) == 0 {
		sc.suggestCAN = time.Duration(10+rng.Intn(120)) * time.Minute
	}
	// Queries fall between the cursor's own wake-ups (whole minutes and
	// seconds), so none races a timer.
	for d := 7*time.Minute + 7777777777; d < sc.stopAfter; d += time.Duration(5+rng.Intn(20)) * time.Minute {
		sc.queries = append(sc.queries, d)
	}
	for i, n := 0, rng.Intn(9); i < n; i++ {
		after := time.Duration(rng.Int63n(int64(sc.stopAfter)))
		sc.messages = append(sc.messages, sc.randomMessage(rng, after))
	}
	return sc
}

func (sc *diffScenario) randomMessage(rng *rand.Rand, after time.Duration) diffMessage {
	m := diffMessage{after: after, update: rng.Intn(2) == 0}
	at := sc.t0.Add(after)
	switch rng.Intn(5) {
	case 0:
		m.name, m.payload = api.SignalPause, map[string]any{"reason": fmt.Sprint("r", rng.Intn(100))}
		if rng.Intn(5) == 0 {
			m.payload = map[string]any{"reason": "x", "bogus": 1}
		}
	case 1, 2:
		m.name = api.SignalResume
	case 3:
		m.name = api.SignalReprocess
		var from, to time.Time
		switch rng.Intn(4) {
		case 0: // anywhere, often in the future
			from = at.Add(-time.Duration(rng.Intn(12*60)) * time.Minute).Truncate(time.Duration(1+rng.Intn(15)) * time.Minute)
			to = from.Add(time.Duration(1+rng.Intn(120)) * time.Minute)
		case 1, 2: // whole slices of the backfill, some queued or running already
			from = sc.start.Add(time.Duration(rng.Intn(int(at.Sub(sc.start)/time.Hour)*4+1)) * 15 * time.Minute)
			to = from.Add(time.Duration(1+rng.Intn(4)) * 15 * time.Minute)
			if to.After(at) {
				to = at.Truncate(time.Second)
			}
		case 3: // not a range
			from = at.Add(-time.Hour)
			to = []time.Time{{}, from, from.Add(-time.Minute), at.Add(time.Hour)}[rng.Intn(4)]
		}
		req := map[string]any{"from": from, "to": to}
		if rng.Intn(3) == 0 {
			req["force"] = true
		}
		if rng.Intn(8) == 0 {
			req["forse"] = true
		}
		m.payload = req
	case 4:
		m.name = api.SignalConfig
		p := sc.platform
		switch rng.Intn(6) {
		case 0:
			p.Concurrency = 1 + rng.Intn(4)
		case 1:
			p.PageSize = 10 + rng.Intn(100)
		case 2:
			p.Interval = config.Duration(30 * time.Minute)
		case 3:
			p.Windows = nil
		case 4:
			p.Interval = 0 // invalid
		case 5:
			p.Name = "shop-y" // another platform's
		}
		raw, _ := json.Marshal(p)
		var cfg map[string]any
		_ = json.Unmarshal(raw, &cfg)
		if rng.Intn(8) == 0 {
			cfg["bogus"] = 1
		}
		m.payload = cfg
	}
	return m
}

// freshInput starts a cursor of impl: settings by value for v0.1, by
// reference (api.Settings) from v0.8 on.
func (sc *diffScenario) freshInput(impl string) any {
	if impl == "v0.1" {
		return v01CursorInput{Platform: sc.platform, Start: sc.start, MaxSlicesPerRun: sc.maxSlices}
	}
	return api.CursorInput{Platform: sc.platform.Settings(), Start: sc.start, MaxSlicesPerRun: sc.maxSlices}
}

// child decides what the slice with this ID does on its n-th start.
func (sc *diffScenario) child(id string, n int, in api.SliceInput) (time.Duration, api.SliceResult, error) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", sc.seed, id, n)
	rng := rand.New(rand.NewSource(int64(h.Sum64())))
	// Never two children finishing at the same instant: the test
	// environment delivers simultaneous completions in no fixed order.
	d := time.Duration(1 + rng.Int63n(int64(time.Second)))
	if rng.Intn(3) > 0 {
		d += time.Duration(1+rng.Intn(25)) * time.Minute
	}
	res := api.SliceResult{Pages: 1 + rng.Intn(in.Platform.MaxPages), OrdersFetched: rng.Intn(400)}
	res.OrdersInserted = res.OrdersFetched / 2
	res.OrdersUpdated = res.OrdersFetched / 4
	switch r := rng.Intn(100); {
	case r < 6:
		return d, api.SliceResult{}, temporal.NewApplicationError("worker lost", "Terminated")
	case r < 16 && in.End.Sub(in.Start) >= 2*time.Minute:
		res.Outcome, res.Pages = api.SliceSplit, in.Platform.MaxPages
	case r < 24:
		res.Outcome, res.Error = api.SliceFailed, "HTTP 503"
		if in.FailedAsError {
			// Today's cursor asks for the failed form and must read it as
			// v0.1 read the result.
			return d, api.SliceResult{}, temporal.NewNonRetryableApplicationError("dead-lettered", api.ErrSliceDeadLettered, nil, res)
		}
	case r < 25:
		res.Outcome = "" // a result from a release that says something else
	default:
		res.Outcome = api.SliceCompleted
	}
	return d, res, nil
}

// diffRun is what one cursor did in one scenario.
type diffRun struct {
	impl     string
	cmds     []command
	statuses []diffStatus
	updates  []string
	end      string
	endedAt  time.Time
	// carried is the continue-as-new input, as it travels; carriedV01 is
	// the part of it v0.1 reads, normalised.
	carried    json.RawMessage
	carriedV01 []byte
}

// diffStatus is what both cursors' status answers say, in one shape.
type diffStatus struct {
	At                  time.Time
	Watermark, Next     time.Time
	AsOf                time.Time
	Paused              bool
	Waiting             string
	WaitUntil           time.Time
	InFlight, Queued    []string
	Counts              api.Counts
	LastError           string
	Runs                int
	Interval, SliceSpan string
	ConsecutiveFailures int
	BreakerOpen         bool
	PageSize            int
}

func (sc *diffScenario) run(t *testing.T, impl string, input any) diffRun {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	// Without this a slice can start late in workflow time under load.
	freezeWallClock(t, env)
	rec := &commandRecorder{workflowType: api.CursorWorkflowType, stamp: true,
		answer: map[string]time.Duration{"SendAlert": sc.alertDelay}}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}})
	if impl == "v0.1" {
		env.RegisterWorkflowWithOptions(v01PlatformCursor, workflow.RegisterOptions{Name: api.CursorWorkflowType})
	} else {
		env.RegisterWorkflowWithOptions(PlatformCursor, workflow.RegisterOptions{Name: api.CursorWorkflowType})
	}
	// Slices are a workflow of the scenario's, not a mock: the test
	// environment runs mocks on goroutines and meanwhile fires timers by
	// wall-clock time, which makes identical runs differ under load. It
	// starts child workflows on goroutines too, hence freezeWallClock.
	starts := map[string]int{}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		starts[id]++
		d, res, err := sc.child(id, starts[id], in)
		if err := workflow.Sleep(ctx, d); err != nil {
			return api.SliceResult{}, err
		}
		return res, err
	}, workflow.RegisterOptions{Name: api.SliceWorkflowType})
	if impl == "today" {
		// The one tolerated difference: today's cursor runs on v0.1's slice
		// grid and ID layout, as a run that began before versionSliceGrid
		// replays. The aligned grid places other slices by design; it is
		// checked by internal/slicequeue's tests and cursor_grid_test.go.
		env.OnGetVersion(versionSliceGrid, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		// Likewise v0.1's eightfold span growth, as a run recorded before
		// versionDensitySpan replays; the one-step growth is checked by
		// internal/slicequeue's TestSpanDensityGrowth and cursor_span_test.go.
		env.OnGetVersion(versionDensitySpan, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		// And v0.1's wait for alerts in flight before continue-as-new, as
		// a run recorded before versionAlertHandover replays; the handover
		// is checked by alerts_test.go.
		env.OnGetVersion(versionAlertHandover, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		// And v0.1's timers without the stall alert, as a run begun before
		// versionStallAlert replays; the alert is checked by
		// cursor_guards_test.go.
		env.OnGetVersion(versionStallAlert, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		// And a child workflow per live window, as a run recorded before
		// versionInlineLive replays; inline windows are checked by
		// cursor_inline_test.go.
		env.OnGetVersion(versionInlineLive, workflow.DefaultVersion, inlineWindowActivity).Return(workflow.DefaultVersion)
	}
	env.SetStartTime(sc.t0)
	env.SetTestTimeout(time.Minute)

	run := diffRun{impl: impl}
	for i, m := range sc.messages {
		env.RegisterDelayedCallback(func() {
			var args []any
			if m.payload != nil {
				raw, err := json.Marshal(m.payload)
				require.NoError(t, err)
				args = append(args, json.RawMessage(raw))
			}
			if !m.update {
				if len(args) == 0 {
					args = append(args, nil)
				}
				env.SignalWorkflow(m.name, args[0])
				return
			}
			env.UpdateWorkflow(m.name, fmt.Sprintf("u%d", i), &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) {
					run.updates = append(run.updates, fmt.Sprintf("%d %s rejected: %v", i, m.name, err))
				},
				OnComplete: func(res any, err error) {
					run.updates = append(run.updates, fmt.Sprintf("%d %s: %s %v", i, m.name, projectUpdateResult(t, res), err))
				},
			}, args...)
		}, m.after)
	}
	for _, q := range sc.queries {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(api.QueryStatus)
			require.NoError(t, err)
			var raw json.RawMessage
			require.NoError(t, v.Get(&raw))
			run.statuses = append(run.statuses, projectStatus(t, env.Now().UTC(), raw))
		}, q)
	}
	// The run ends by continuing as new, which waits for every slice in
	// flight: cancelling it would leave abandoned children that report to
	// a parent the test environment has closed.
	end := sc.stopAfter
	if sc.suggestCAN > 0 {
		end = min(end, sc.suggestCAN)
	}
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, end)

	func() {
		defer func() {
			if r := recover(); r != nil {
				for _, c := range rec.cmds {
					t.Log(c.Kind, c.ID, c.Extra)
				}
				t.Log("now", env.Now(), "messages", sc.messages)
				panic(r)
			}
		}()
		env.ExecuteWorkflow(api.CursorWorkflowType, input)
	}()

	require.True(t, env.IsWorkflowCompleted())
	run.cmds, run.endedAt = rec.cmds, env.Now().UTC()
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	switch {
	case err == nil:
		run.end = "completed"
	case temporal.IsCanceledError(err):
		run.end = "cancelled"
	case errors.As(err, &can):
		run.end = "continued as new at " + run.endedAt.Format(time.RFC3339Nano)
		require.Len(t, can.Input.GetPayloads(), 1)
		run.carried = can.Input.GetPayloads()[0].GetData()
		run.carriedV01, err = v01View([]byte(settingsByReference(string(run.carried))))
		require.NoError(t, err)
	default:
		run.end = "failed: " + err.Error()
	}
	return run
}

// statusShapes reads both releases' status answers.
type statusShapes struct {
	Watermark           time.Time       `json:"watermark"`
	Next                time.Time       `json:"next"`
	AsOf                time.Time       `json:"as_of"`
	Paused              bool            `json:"paused"`
	Waiting             string          `json:"waiting"`
	WaitUntil           time.Time       `json:"wait_until"`
	InFlight            []sliceShapes   `json:"in_flight"`
	Queued              []sliceShapes   `json:"queued"`
	Counts              api.Counts      `json:"counts"`
	LastError           string          `json:"last_error"`
	Runs                int             `json:"runs"`
	Interval            string          `json:"interval"`
	SliceSpan           string          `json:"slice_span"`
	ConsecutiveFailures int             `json:"consecutive_failures"`
	BreakerOpen         bool            `json:"breaker_open"`
	Settings            config.Platform `json:"settings"`
}

// sliceShapes reads a v0.1 api.SliceRef and today's api.SliceView.
type sliceShapes struct {
	ID        string    `json:"id"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Force     bool      `json:"force"`
	Resweep   bool      `json:"resweep"`
	NotBefore time.Time `json:"not_before"`
	StartedAt time.Time `json:"started_at"`
}

func (s sliceShapes) String() string {
	return fmt.Sprintf("%s [%s, %s) force=%v resweep=%v not_before=%s started=%s", s.ID,
		s.Start.UTC().Format(time.RFC3339Nano), s.End.UTC().Format(time.RFC3339Nano), s.Force, s.Resweep,
		s.NotBefore.UTC().Format(time.RFC3339Nano), s.StartedAt.UTC().Format(time.RFC3339Nano))
}

func projectStatus(t *testing.T, at time.Time, raw json.RawMessage) diffStatus {
	t.Helper()
	var s statusShapes
	require.NoError(t, json.Unmarshal(raw, &s))
	d := diffStatus{At: at, Watermark: s.Watermark.UTC(), Next: s.Next.UTC(), AsOf: s.AsOf.UTC(), Paused: s.Paused,
		Waiting: s.Waiting, WaitUntil: s.WaitUntil.UTC(), Counts: s.Counts, LastError: s.LastError, Runs: s.Runs,
		Interval: s.Interval, SliceSpan: s.SliceSpan, ConsecutiveFailures: s.ConsecutiveFailures,
		BreakerOpen: s.BreakerOpen, PageSize: s.Settings.PageSize}
	for _, r := range s.InFlight {
		d.InFlight = append(d.InFlight, r.String())
	}
	for _, r := range s.Queued {
		d.Queued = append(d.Queued, r.String())
	}
	return d
}

// projectUpdateResult reads an update's answer: a number, or a status of
// either release (what both releases fill in alike).
func projectUpdateResult(t *testing.T, res any) string {
	t.Helper()
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	var s statusShapes
	if json.Unmarshal(raw, &s) != nil {
		return string(raw)
	}
	var inFlight, queued []string
	for _, r := range s.InFlight {
		inFlight = append(inFlight, r.ID)
	}
	for _, r := range s.Queued {
		queued = append(queued, r.ID)
	}
	return fmt.Sprintf("paused=%v watermark=%s next=%s interval=%s page_size=%d in_flight=%v queued=%v last_error=%q",
		s.Paused, s.Watermark.UTC(), s.Next.UTC(), s.Interval, s.Settings.PageSize, inFlight, queued, s.LastError)
}
