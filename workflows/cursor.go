package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/searchattr"
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
	if err := in.Platform.ValidateStructure(); err != nil {
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

type cursor struct {
	platform config.Platform
	windows  config.Windows
	start    time.Time
	st       api.CursorState
	// maxSlicesPerRun comes from the input (see api.CursorInput).
	maxSlicesPerRun int
	// adaptiveSpan is set for runs that size backfill slices (cursor_span.go).
	adaptiveSpan bool

	children       map[string]workflow.ChildWorkflowFuture // slices started by this run
	alerts         int                                     // alert activities in flight
	startedThisRun int
	draining       bool
	now            time.Time
	waiting        string
	waitUntil      time.Time

	wake        workflow.Channel // lets update handlers wake the main loop
	timer       workflow.Future
	timerAt     time.Time
	cancelTimer workflow.CancelFunc
}

func newCursor(in api.CursorInput) (*cursor, error) {
	ws, err := config.ParseWindows(in.Platform.Windows)
	if err != nil {
		return nil, err
	}
	c := &cursor{platform: in.Platform, windows: ws, start: in.Start, maxSlicesPerRun: in.MaxSlicesPerRun,
		children: map[string]workflow.ChildWorkflowFuture{}}
	if c.maxSlicesPerRun <= 0 {
		c.maxSlicesPerRun = DefaultMaxSlicesPerRun
	}
	if in.State != nil {
		c.st = *in.State
		// Nothing runs across continue-as-new (the cursor drains first); a
		// slice marked running was started by a run that ended abnormally and
		// is started again (its deterministic ID prevents a double run).
		for _, list := range c.lists() {
			for i := range *list {
				(*list)[i].Running = false
			}
		}
	} else {
		c.st.Next = in.Start.UTC()
	}
	return c, nil
}

func (c *cursor) run(ctx workflow.Context) error {
	c.adaptiveSpan = workflow.GetVersion(ctx, versionAdaptiveSpan, workflow.DefaultVersion, 1) == 1
	c.wake = workflow.NewBufferedChannel(ctx, 1)
	if err := c.registerHandlers(ctx); err != nil {
		return err
	}
	sig := c.signalChannels(ctx)
	for {
		c.now = workflow.Now(ctx)
		if err := ctx.Err(); err != nil {
			// Cancelled: stop here. Without this check every new timer and
			// child is cancelled at once and the loop never blocks again.
			return err
		}
		if !c.draining && (workflow.GetInfo(ctx).GetContinueAsNewSuggested() || c.startedThisRun >= c.maxSlicesPerRun) {
			c.draining = true
		}
		if c.draining && c.running() == 0 && c.alerts == 0 {
			sig.drain(ctx, c)
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			c.st.Runs++
			next := workflow.WithWorkflowTaskQueue(ctx, c.platform.TaskQueue)
			return workflow.NewContinueAsNewError(next, api.CursorWorkflowType,
				api.CursorInput{Platform: c.platform, Start: c.start, State: &c.st, MaxSlicesPerRun: c.maxSlicesPerRun})
		}
		if !c.draining {
			c.launch(ctx)
		}
		c.checkLag(ctx)
		wakeAt := c.computeWait()

		sel := workflow.NewSelector(ctx)
		c.addChildFutures(ctx, sel)
		sig.addTo(ctx, sel, c)
		sel.AddReceive(c.wake, func(ch workflow.ReceiveChannel, _ bool) { ch.ReceiveAsync(nil) })
		if !wakeAt.IsZero() {
			sel.AddFuture(c.ensureTimer(ctx, wakeAt), func(workflow.Future) { c.timer = nil })
		}
		sel.Select(ctx)
	}
}

// launch starts slices until the concurrency limit: waiting slices first
// (split halves, retries, reprocess requests), then the next regular slice
// once it has settled.
func (c *cursor) launch(ctx workflow.Context) {
	if c.st.Paused {
		return
	}
	open := c.windows.OpenAt(c.now)
	for c.running() < c.platform.Concurrency {
		if ref := c.nextWaiting(open); ref != nil {
			c.startChild(ctx, ref)
			continue
		}
		end := c.nextSliceEnd()
		if !open {
			return
		}
		if end.After(c.now.Add(-c.platform.Settle.D())) {
			// Caught up once every backfill slice has finished, not when the
			// last one starts: the lag alert applies from then on.
			if len(c.st.Pending) == 0 {
				c.st.CaughtUp = true
			}
			return
		}
		c.st.Pending = append(c.st.Pending, api.SliceRef{
			ID: api.SliceWorkflowID(c.platform.Name, c.st.Next, end), Start: c.st.Next, End: end,
		})
		c.st.Next = end
		if _, busy := c.children[c.st.Pending[len(c.st.Pending)-1].ID]; busy {
			continue // a reprocess of this very slice runs; it starts after that
		}
		c.startChild(ctx, &c.st.Pending[len(c.st.Pending)-1])
	}
}

func (c *cursor) nextWaiting(open bool) *api.SliceRef {
	for _, list := range c.lists() {
		for i := range *list {
			r := &(*list)[i]
			if _, busy := c.children[r.ID]; busy {
				continue // one workflow ID, one run at a time
			}
			if !r.Running && !r.Done && !r.NotBefore.After(c.now) && (open || r.Force) {
				return r
			}
		}
	}
	return nil
}

func (c *cursor) startChild(ctx workflow.Context, ref *api.SliceRef) {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            ref.ID,
		TaskQueue:             c.platform.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A slice finishes its fetch even if its cursor is terminated; storing is idempotent.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.Platform.ValueSet(c.platform.Name),
			searchattr.SliceStart.ValueSet(ref.Start),
			searchattr.SliceState.ValueSet(searchattr.StateRunning),
		),
	}
	c.children[ref.ID] = workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts),
		api.SliceWorkflowType, api.SliceInput{Platform: c.platform, Start: ref.Start, End: ref.End, Resweep: ref.Resweep, LocalFirst: true})
	ref.Running = true
	ref.StartedAt = c.now
	c.startedThisRun++
}

// addChildFutures adds running children in state order, so the selector is
// built the same way on every replay.
func (c *cursor) addChildFutures(ctx workflow.Context, sel workflow.Selector) {
	for _, list := range c.lists() {
		for _, r := range *list {
			f, ok := c.children[r.ID]
			if !ok || !r.Running {
				continue
			}
			id := r.ID
			sel.AddFuture(f, func(f workflow.Future) { c.onChildDone(ctx, id, f) })
		}
	}
}

func (c *cursor) onChildDone(ctx workflow.Context, id string, f workflow.Future) {
	c.now = workflow.Now(ctx) // the loop read the clock before it blocked
	delete(c.children, id)
	var res api.SliceResult
	err := f.Get(ctx, &res)
	list, i := c.findRunning(id)
	if i < 0 {
		return
	}
	ref := &(*list)[i]
	ref.Running = false
	if err != nil {
		// The child could not start (another run of the same slice is open)
		// or ended without reporting (terminated, timed out). Try again later;
		// the watermark stays put, so nothing is skipped meanwhile.
		ref.NotBefore = c.now.Add(max(c.platform.RetryInterval.D(), 10*time.Second))
		c.st.LastError = fmt.Sprintf("slice %s: %v", id, err)
		workflow.GetLogger(ctx).Warn("slice did not report; will retry", "slice", id, "error", err)
		return
	}
	c.count(res, ref.Resweep)
	c.trackFailures(ctx, res)
	if list == &c.st.Pending {
		c.adaptSpan(ctx, *ref, res)
	}
	if res.Outcome == api.SliceCompleted && list == &c.st.Pending {
		c.scheduleResweep(ctx, *ref)
	}
	switch res.Outcome {
	case api.SliceSplit:
		mid := ref.Start.Add(ref.End.Sub(ref.Start) / 2).Truncate(time.Microsecond)
		halves := []api.SliceRef{
			{ID: api.SliceWorkflowID(c.platform.Name, ref.Start, mid), Start: ref.Start, End: mid, Force: ref.Force},
			{ID: api.SliceWorkflowID(c.platform.Name, mid, ref.End), Start: mid, End: ref.End, Force: ref.Force},
		}
		*list = append((*list)[:i], append(halves, (*list)[i+1:]...)...)
	case api.SliceFailed:
		c.st.LastError = fmt.Sprintf("slice %s dead-lettered: %s", id, res.Error)
		ref.Done = true
	default:
		ref.Done = true
	}
	c.compact()
}

// compact drops finished reprocess slices and moves the watermark over the
// contiguous finished prefix of regular slices.
func (c *cursor) compact() {
	n := 0
	for n < len(c.st.Pending) && c.st.Pending[n].Done {
		n++
	}
	c.st.Pending = c.st.Pending[n:]
	for _, list := range []*[]api.SliceRef{&c.st.Reprocess, &c.st.Resweep} {
		kept := (*list)[:0]
		for _, r := range *list {
			if !r.Done {
				kept = append(kept, r)
			}
		}
		*list = kept
	}
}

func (c *cursor) count(res api.SliceResult, resweep bool) {
	k := &c.st.Counts
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

// findRunning finds the ref whose child just ended: a regular slice and a
// reprocess request may share an ID, but only one of them runs at a time.
func (c *cursor) findRunning(id string) (*[]api.SliceRef, int) {
	for _, list := range c.lists() {
		for i := range *list {
			if (*list)[i].ID == id && (*list)[i].Running {
				return list, i
			}
		}
	}
	return nil, -1
}

// willRun says whether a slice with this ID is queued or running, so a
// reprocess request need not queue it again.
func (c *cursor) willRun(id string) bool {
	for _, list := range c.lists() {
		for _, r := range *list {
			if r.ID == id && !r.Done {
				return true
			}
		}
	}
	return false
}

// lists are the slice lists in launch priority: regular slices (they move
// the watermark), then reprocess requests, then re-sweeps.
func (c *cursor) lists() []*[]api.SliceRef {
	return []*[]api.SliceRef{&c.st.Pending, &c.st.Reprocess, &c.st.Resweep}
}

func (c *cursor) running() int {
	return len(c.children)
}

// watermark: every instant before it is covered by a finished slice.
func (c *cursor) watermark() time.Time {
	if len(c.st.Pending) > 0 {
		return c.st.Pending[0].Start
	}
	return c.st.Next
}
