package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/slicequeue"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/internal/tuning"
)

// DefaultMaxSlicesPerRun caps one cursor run's history when the input does
// not say otherwise: after starting this many slices the cursor drains and
// continues as new, even if the server has not suggested it yet.
const DefaultMaxSlicesPerRun = 400

// MaxReprocessSlices bounds one reprocess request, so a typo in a year
// cannot queue a million slices into the cursor's state.
const MaxReprocessSlices = 10000

// PlatformCursor is the long-running workflow of one platform.
func PlatformCursor(ctx workflow.Context, in api.CursorInput) error {
	// The structural check only: stricter rules live at the edges (file,
	// CLI, validators), so tightening them never fails a replay here.
	if err := config.CheckSettingsStructure(in.Platform); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid platform settings: "+err.Error(), "InvalidInput", nil)
	}
	if in.Start.IsZero() && in.State == nil {
		return temporal.NewNonRetryableApplicationError("cursor input has no start time", "InvalidInput", nil)
	}
	c, err := newCursor(in)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	return c.run(ctx)
}

// cursor drives the slice lifecycle (internal/slicequeue) with Temporal:
// it starts the slices the queue hands out as child workflows, reports
// their results back, sleeps on timers until the next thing can happen,
// takes messages (cursor_messages.go) and continues as new with its state.
// Every decision about slices is the queue's.
type cursor struct {
	platform api.Settings
	windows  tuning.Windows
	start    time.Time
	q        *slicequeue.Queue
	rec      api.CursorRecord
	// maxSlicesPerRun comes from the input (see api.CursorInput).
	maxSlicesPerRun int
	// adaptiveSpan is set for runs that size backfill slices (versionAdaptiveSpan).
	adaptiveSpan bool
	// densityGrowth asks versionDensitySpan (one-step span growth and the
	// probing first slice); the queue calls it lazily.
	densityGrowth func() bool
	// alignedGrid is set for runs that place slices on the platform's grid
	// and name them in today's layout (versionSliceGrid).
	alignedGrid bool
	// stallAlert is set for runs that alert when no slice reports for
	// stall_alert (versionStallAlert).
	stallAlert bool
	// in is the input the queue is built from once the run knows its versions.
	in api.CursorInput
	// batch is how many intervals the next regular slice waits for (hybrid
	// pacing, cursor_pacing.go); 0 or 1: one.
	batch  int
	pacing pacing

	children       map[string]workflow.Future // running slices (child workflows or inline fetches), by ID
	alerts         alertSender                // alerts in flight (alerts.go)
	startedThisRun int
	draining       bool
	// now is the workflow's clock when the loop or a message last ran.
	now time.Time

	wake workflow.Channel // a message changed the state: the loop takes another turn
	// shownState is the PlatformState search attribute as last upserted;
	// shownDetails the current details without the lag (cursor_status.go).
	shownState   string
	shownDetails string

	timer       workflow.Future
	timerAt     time.Time
	cancelTimer workflow.CancelFunc
	// deafToCancel replays a history recorded before versionCancelWhileIdle:
	// its waits did not watch the cancellation.
	deafToCancel bool
}

func newCursor(in api.CursorInput) (*cursor, error) {
	ws, err := tuning.ParseWindows(in.Platform.Windows)
	if err != nil {
		return nil, err
	}
	c := &cursor{platform: withoutLegacyOptions(in.Platform), windows: ws, start: in.Start, maxSlicesPerRun: in.MaxSlicesPerRun,
		children: map[string]workflow.Future{}, in: in}
	if c.maxSlicesPerRun <= 0 {
		c.maxSlicesPerRun = DefaultMaxSlicesPerRun
	}
	if in.State != nil {
		c.rec = in.State.CursorRecord
	}
	return c, nil
}

// newQueue builds the slice queue from the input, by the rules of the
// versions this run asked for.
func (c *cursor) newQueue() {
	if c.in.State != nil {
		c.q = slicequeue.Restore(carriedSlices(*c.in.State), c.rules(), c.sliceID)
	} else {
		c.q = slicequeue.New(c.in.Start, c.rules(), c.sliceID)
	}
}

// sliceID names a slice's child workflow.
func (c *cursor) sliceID(start, end time.Time) string {
	if !c.alignedGrid {
		return api.SliceWorkflowIDV01(c.platform.Name, start, end)
	}
	return api.SliceWorkflowID(c.platform.Name, start, end)
}

// rules are the settings the queue decides by.
func (c *cursor) rules() slicequeue.Rules {
	maxSpan := 1
	if iv := c.platform.Interval.D(); c.adaptiveSpan && c.platform.BackfillMaxSpan > 0 && iv > 0 {
		maxSpan = max(1, int(c.platform.BackfillMaxSpan.D()/iv))
	}
	return slicequeue.Rules{
		Interval:      c.platform.Interval.D(),
		Settle:        c.platform.Settle.D(),
		MaxSpan:       maxSpan,
		PageSize:      c.platform.PageSize,
		MaxPages:      c.platform.MaxPages,
		ResweepDelay:  c.platform.ResweepDelay.D(),
		Aligned:       c.alignedGrid,
		Phase:         slicequeue.PhaseOf(c.platform.Name, c.platform.Interval.D()),
		DensityGrowth: c.densityGrowth,
		ProbeFirst:    c.densityGrowth,
		Batch:         c.batch,
	}
}

func (c *cursor) run(ctx workflow.Context) error {
	c.adaptiveSpan = workflow.GetVersion(ctx, versionAdaptiveSpan, workflow.DefaultVersion, 1) == 1
	c.alignedGrid = workflow.GetVersion(ctx, versionSliceGrid, workflow.DefaultVersion, 1) == 1
	c.densityGrowth = func() bool {
		return workflow.GetVersion(ctx, versionDensitySpan, workflow.DefaultVersion, 1) >= 1
	}
	c.stallAlert = workflow.GetVersion(ctx, versionStallAlert, workflow.DefaultVersion, 1) == 1
	if c.stallAlert && c.rec.ProgressAt.IsZero() {
		c.rec.ProgressAt = workflow.Now(ctx) // a run of before carried none
	}
	c.newQueue()
	c.wake = workflow.NewBufferedChannel(ctx, 1)
	c.shownState, _ = workflow.GetTypedSearchAttributes(ctx).GetKeyword(searchattr.PlatformState)
	if err := c.registerMessages(ctx); err != nil {
		return err
	}
	c.alerts.resume(ctx, bookkeepingActivityContext(ctx, c.platform), c.in.Alerts, c.alertDone)
	for {
		c.now = workflow.Now(ctx)
		c.wake.ReceiveAsync(nil) // this turn sees every change a message made so far
		if err := ctx.Err(); err != nil {
			// Cancelled: stop here. Without this check every new timer and
			// child is cancelled at once and the loop never blocks again.
			return err
		}
		if !c.draining && (workflow.GetInfo(ctx).GetContinueAsNewSuggested() || c.startedThisRun >= c.maxSlicesPerRun) {
			c.draining = true
		}
		// Alerts in flight are handed to the next run, not waited for
		// (alerts.go), except by a history from before versionAlertHandover.
		if c.draining && c.running() == 0 && c.alerts.mayContinue(ctx) {
			return c.continueAsNew(ctx)
		}
		c.idleIsProgress() // before launch: a slice started now starts the clock
		if !c.draining {
			c.pace(ctx)
			c.launch(ctx)
			c.paceMoved()
		}
		c.checkLag(ctx)
		c.checkStall(ctx)
		wakeAt := c.wait().wake
		c.publish(ctx)

		c.block(ctx, wakeAt)
	}
}

// block waits for the next thing that moves the cursor: a slice ending, a
// message, its timer, or its cancellation. Before versionCancelWhileIdle
// the wait did not watch the cancellation, so a cursor with no timer and
// no slice in flight (paused, nothing running) stayed open after a cancel
// request; a history recorded so replays the old wait.
func (c *cursor) block(ctx workflow.Context, wakeAt time.Time) {
	for {
		cancelled := false
		sel := workflow.NewSelector(ctx)
		c.addChildFutures(ctx, sel)
		c.addSignals(ctx, sel)
		sel.AddReceive(c.wake, func(ch workflow.ReceiveChannel, _ bool) { ch.ReceiveAsync(nil) })
		if !wakeAt.IsZero() {
			sel.AddFuture(c.ensureTimer(ctx, wakeAt), func(workflow.Future) { c.timer = nil })
		}
		if !c.deafToCancel {
			// Added last: any other ready case is handled first, as before.
			sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true })
		}
		sel.Select(ctx)
		if !cancelled {
			return
		}
		if workflow.GetVersion(ctx, versionCancelWhileIdle, workflow.DefaultVersion, 1) >= 1 {
			return // the loop's next turn sees ctx.Err and ends the run
		}
		c.deafToCancel = true
	}
}

// continueAsNew ends the run once no slice runs: it lets every message
// handler finish, applies the signals already delivered (none is lost),
// and carries the state, and the alerts still in flight, to the next run.
func (c *cursor) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	c.drainSignals(ctx)
	c.rec.Runs++
	next := workflow.WithWorkflowTaskQueue(ctx, c.platform.TaskQueue)
	return workflow.NewContinueAsNewError(next, api.CursorWorkflowType,
		api.CursorInput{Platform: c.platform, Start: c.start, State: c.carried(), MaxSlicesPerRun: c.maxSlicesPerRun,
			Alerts: c.alerts.handOver(ctx)})
}

// launch starts the slices the queue hands out, up to the concurrency limit.
func (c *cursor) launch(ctx workflow.Context) {
	if c.rec.Paused {
		return
	}
	for _, s := range c.q.Launch(c.now, c.windows.OpenAt(c.now), c.platform.Concurrency) {
		if c.inlineEligible(s) {
			if v := workflow.GetVersion(ctx, versionInlineLive, workflow.DefaultVersion, inlineWindowActivity); v >= inlinePageActivities {
				c.startInline(ctx, s, v)
				continue
			}
		}
		c.startChild(ctx, s)
	}
}

func (c *cursor) startChild(ctx workflow.Context, s slicequeue.Slice) {
	c.children[s.ID] = c.executeSlice(ctx, s, c.sliceInput(s))
	c.startedThisRun++
}

// sliceInput is the input of s's child workflow.
func (c *cursor) sliceInput(s slicequeue.Slice) api.SliceInput {
	return api.SliceInput{Platform: c.platform, Start: s.Start, End: s.End, Resweep: s.Sweep, LocalFirst: true, FailedAsError: true}
}

// executeSlice starts s's child workflow with in.
func (c *cursor) executeSlice(ctx workflow.Context, s slicequeue.Slice, in api.SliceInput) workflow.ChildWorkflowFuture {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            s.ID,
		TaskQueue:             c.platform.TaskQueue,
		Priority:              fairness.Priority(c.platform.Name),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A slice finishes its fetch even if its cursor is terminated; storing is idempotent.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.Platform.ValueSet(c.platform.Name),
			searchattr.SliceStart.ValueSet(s.Start),
			searchattr.SliceState.ValueSet(searchattr.StateRunning),
		),
	}
	// User metadata for the Web UI; the replayer compares none of it.
	opts.StaticSummary = sliceSummary(s.Kind.String(), s.Start, s.End)
	opts.StaticDetails = sliceStaticDetails(s.Kind.String(), c.platform.Name, s.Start, s.End, c.platform.Overlap.D(), kindWhy[s.Kind]+handoverWhy(in.Handover))
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), api.SliceWorkflowType, in)
}

// addChildFutures adds the running slices in the queue's order, so the
// selector is built the same way on every replay.
func (c *cursor) addChildFutures(ctx workflow.Context, sel workflow.Selector) {
	for _, s := range c.q.Running() {
		f, ok := c.children[s.ID]
		if !ok {
			continue
		}
		id := s.ID
		sel.AddFuture(f, func(f workflow.Future) { c.onChildDone(ctx, id, f) })
	}
}

// onChildDone reports a slice's result to the queue.
func (c *cursor) onChildDone(ctx workflow.Context, id string, f workflow.Future) {
	c.now = workflow.Now(ctx) // the loop read the clock before it blocked
	delete(c.children, id)
	res, err := sliceOutcome(ctx, f)
	if err != nil {
		// The child could not start (another run of the same slice is open)
		// or ended without reporting (terminated, timed out). Try again later;
		// the watermark stays put, so nothing is skipped meanwhile.
		if _, ok := c.q.Retry(id, c.now.Add(max(c.platform.RetryInterval.D(), 10*time.Second))); !ok {
			return
		}
		c.rec.LastError = textclip.Message(fmt.Sprintf("slice %s: %v", id, err))
		workflow.GetLogger(ctx).Warn("slice did not report; will retry", "slice", id, "error", err)
		return
	}
	done, ok := c.q.Finish(id, reportOf(res), c.now, func() bool {
		return workflow.GetVersion(ctx, resweepFromFetchStart, workflow.DefaultVersion, 1) >= 1
	})
	if !ok {
		return
	}
	if c.stallAlert {
		c.rec.ProgressAt, c.rec.StallAlerted = c.now, false // a slice reported: progress
	}
	if done.Span != 0 {
		workflow.GetLogger(ctx).Debug("backfill slice span", "intervals", done.Span, "after", id, "pages", res.Pages)
	}
	c.count(res, done.Slice.Sweep)
	c.trackFailures(ctx, res)
	if res.Outcome == api.SliceFailed {
		c.rec.LastError = textclip.Message(fmt.Sprintf("slice %s dead-lettered: %s", id, res.Error)) // a slice of before may not have clipped it
	}
}

// reportOf is what the queue learns from a slice's result.
func reportOf(res api.SliceResult) slicequeue.Report {
	r := slicequeue.Report{Outcome: slicequeue.Unknown, Pages: res.Pages, Fetched: res.OrdersFetched}
	switch res.Outcome {
	case api.SliceCompleted:
		r.Outcome = slicequeue.Completed
	case api.SliceFailed:
		r.Outcome = slicequeue.DeadLettered
	case api.SliceSplit:
		r.Outcome = slicequeue.Split
	}
	return r
}

func (c *cursor) count(res api.SliceResult, resweep bool) {
	if res.StatedRate > 0 {
		c.rec.StatedRate = res.StatedRate
	}
	k := &c.rec.Counts
	if resweep && res.Outcome == api.SliceCompleted {
		// Versions a re-sweep stored were missed by the first fetch: the
		// platform showed them later than the overlap allowed for.
		k.Resweeps++
		k.LateArrivals += int64(res.OrdersInserted + res.OrdersUpdated)
	}
	switch res.Outcome {
	case api.SliceCompleted:
		k.SlicesCompleted++
	case api.SliceFailed:
		k.SlicesFailed++
	case api.SliceSplit:
		k.SlicesSplit++
	}
	k.Pages += int64(res.Pages)
	k.OrdersFetched += int64(res.OrdersFetched)
	k.OrdersInserted += int64(res.OrdersInserted)
	k.OrdersUpdated += int64(res.OrdersUpdated)
	k.OrdersUnchanged += int64(res.OrdersUnchanged)
	k.OrdersOutsideRange += int64(res.OrdersOutsideRange)
	k.OrdersRejected += int64(res.OrdersRejected)
	k.OrdersFutureStamped += int64(res.OrdersFutureStamped)
}

func (c *cursor) running() int {
	return len(c.children)
}
