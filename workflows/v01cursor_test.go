package workflows

// This file is the cursor of release v0.1, frozen: PlatformCursor and its
// helpers as they were before the slice lifecycle moved into
// internal/slicequeue, renamed with a v01 prefix and with their own copies
// of the v0.1 state and status types. differential_test.go runs it beside
// today's cursor on random scenarios and requires the same commands, at
// the same times. Do not edit it; delete it (and the differential test)
// when a change guarded by a version in versions.go makes the two differ
// by design. (One edit since: v0.1 named slices with what is now
// api.SliceWorkflowIDV01; api.SliceWorkflowID prints today's layout.)

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/searchattr"
)

// ---- cursor.go (v0.1)

// v01DefaultMaxSlicesPerRun caps one cursor run's history when the input does
// not say otherwise: after starting this many slices the cursor drains and
// continues as new, even if the server has not suggested it yet.
const v01DefaultMaxSlicesPerRun = 400

// v01MaxReprocessSlices bounds one reprocess request, so a typo in a year
// cannot queue a million slices into the cursor's state.
const v01MaxReprocessSlices = 10000

// v01PlatformCursor is the long-running workflow of one platform.
func v01PlatformCursor(ctx workflow.Context, in v01CursorInput) error {
	// The structural check only: stricter rules live at the edges (file,
	// CLI, validators), so tightening them never fails a replay here.
	if err := in.Platform.ValidateStructure(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid platform settings: "+err.Error(), "InvalidInput", nil)
	}
	if in.Start.IsZero() && in.State == nil {
		return temporal.NewNonRetryableApplicationError("cursor input has no start time", "InvalidInput", nil)
	}
	c, err := v01NewCursor(in)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	return c.run(ctx)
}

type v01Cursor struct {
	platform config.Platform
	windows  config.Windows
	start    time.Time
	st       v01CursorState
	// maxSlicesPerRun comes from the input (see v01CursorInput).
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

func v01NewCursor(in v01CursorInput) (*v01Cursor, error) {
	ws, err := config.ParseWindows(in.Platform.Windows)
	if err != nil {
		return nil, err
	}
	c := &v01Cursor{platform: in.Platform, windows: ws, start: in.Start, maxSlicesPerRun: in.MaxSlicesPerRun,
		children: map[string]workflow.ChildWorkflowFuture{}}
	if c.maxSlicesPerRun <= 0 {
		c.maxSlicesPerRun = v01DefaultMaxSlicesPerRun
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

func (c *v01Cursor) run(ctx workflow.Context) error {
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
				v01CursorInput{Platform: c.platform, Start: c.start, State: &c.st, MaxSlicesPerRun: c.maxSlicesPerRun})
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
func (c *v01Cursor) launch(ctx workflow.Context) {
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
		c.st.Pending = append(c.st.Pending, v01SliceRef{
			ID: api.SliceWorkflowIDV01(c.platform.Name, c.st.Next, end), Start: c.st.Next, End: end,
		})
		c.st.Next = end
		if _, busy := c.children[c.st.Pending[len(c.st.Pending)-1].ID]; busy {
			continue // a reprocess of this very slice runs; it starts after that
		}
		c.startChild(ctx, &c.st.Pending[len(c.st.Pending)-1])
	}
}

func (c *v01Cursor) nextWaiting(open bool) *v01SliceRef {
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

func (c *v01Cursor) startChild(ctx workflow.Context, ref *v01SliceRef) {
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
		api.SliceWorkflowType, api.SliceInput{Platform: c.platform.Settings(), Start: ref.Start, End: ref.End, Resweep: ref.Resweep, LocalFirst: true})
	ref.Running = true
	ref.StartedAt = c.now
	c.startedThisRun++
}

// addChildFutures adds running children in state order, so the selector is
// built the same way on every replay.
func (c *v01Cursor) addChildFutures(ctx workflow.Context, sel workflow.Selector) {
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

func (c *v01Cursor) onChildDone(ctx workflow.Context, id string, f workflow.Future) {
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
		halves := []v01SliceRef{
			{ID: api.SliceWorkflowIDV01(c.platform.Name, ref.Start, mid), Start: ref.Start, End: mid, Force: ref.Force},
			{ID: api.SliceWorkflowIDV01(c.platform.Name, mid, ref.End), Start: mid, End: ref.End, Force: ref.Force},
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
func (c *v01Cursor) compact() {
	n := 0
	for n < len(c.st.Pending) && c.st.Pending[n].Done {
		n++
	}
	c.st.Pending = c.st.Pending[n:]
	for _, list := range []*[]v01SliceRef{&c.st.Reprocess, &c.st.Resweep} {
		kept := (*list)[:0]
		for _, r := range *list {
			if !r.Done {
				kept = append(kept, r)
			}
		}
		*list = kept
	}
}

func (c *v01Cursor) count(res api.SliceResult, resweep bool) {
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
func (c *v01Cursor) findRunning(id string) (*[]v01SliceRef, int) {
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
func (c *v01Cursor) willRun(id string) bool {
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
func (c *v01Cursor) lists() []*[]v01SliceRef {
	return []*[]v01SliceRef{&c.st.Pending, &c.st.Reprocess, &c.st.Resweep}
}

func (c *v01Cursor) running() int {
	return len(c.children)
}

// watermark: every instant before it is covered by a finished slice.
func (c *v01Cursor) watermark() time.Time {
	if len(c.st.Pending) > 0 {
		return c.st.Pending[0].Start
	}
	return c.st.Next
}

// ---- cursor_guards.go (v0.1)

// scheduleResweep queues a second fetch of a regular slice's window once the
// window is resweep_delay old, unless the first fetch already started that
// late (backfill slices of old history need no second look). A window whose
// due time has passed meanwhile is swept at once.
func (c *v01Cursor) scheduleResweep(ctx workflow.Context, ref v01SliceRef) {
	delay := c.platform.ResweepDelay.D()
	if delay <= 0 {
		return
	}
	due := ref.End.Add(delay)
	firstFetch := c.now
	if workflow.GetVersion(ctx, resweepFromFetchStart, workflow.DefaultVersion, 1) >= 1 && !ref.StartedAt.IsZero() {
		firstFetch = ref.StartedAt
	}
	if !due.After(firstFetch) {
		return
	}
	c.st.Resweep = append(c.st.Resweep, v01SliceRef{
		ID: ref.ID, Start: ref.Start, End: ref.End, NotBefore: due, Resweep: true,
	})
}

// trackFailures runs the circuit breaker: after breaker_failures failed
// slices in a row the platform is probably down or refusing us, so the
// cursor pauses itself instead of dead-lettering slice after slice.
func (c *v01Cursor) trackFailures(ctx workflow.Context, res api.SliceResult) {
	switch res.Outcome {
	case api.SliceCompleted:
		c.st.ConsecutiveFailures = 0
	case api.SliceFailed:
		c.st.ConsecutiveFailures++
		n := c.platform.BreakerFailures
		if n <= 0 || c.st.ConsecutiveFailures < n || c.st.BreakerOpen {
			return
		}
		c.st.BreakerOpen = true
		c.st.Paused = true
		c.st.PauseReason = fmt.Sprintf("%d failed slices in a row (last: %s); resume to close it",
			c.st.ConsecutiveFailures, res.Error)
		c.alert(ctx, api.Alert{
			Kind:     api.AlertBreakerOpen,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s: circuit breaker open, cursor paused: %s", c.platform.Name, c.st.PauseReason),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertBreakerOpen, c.platform.Name, c.now.UnixMilli()),
		})
	}
}

// closeBreaker is part of resume.
func (c *v01Cursor) closeBreaker() {
	c.st.BreakerOpen = false
	c.st.ConsecutiveFailures = 0
}

// checkLag alerts once when the watermark falls more than lag_alert behind
// now after the cursor has caught up, and re-arms when the lag recovers.
func (c *v01Cursor) checkLag(ctx workflow.Context) {
	limit := c.platform.LagAlert.D()
	if limit <= 0 || !c.st.CaughtUp || c.st.Paused {
		return // a paused cursor is behind on purpose
	}
	lag := c.now.Sub(c.watermark())
	switch {
	case lag > limit && !c.st.LagAlerted:
		c.st.LagAlerted = true
		c.alert(ctx, api.Alert{
			Kind:     api.AlertLag,
			Platform: c.platform.Name,
			Message:  fmt.Sprintf("%s is %s behind (lag_alert %s); watermark %s", c.platform.Name, lag.Round(time.Second), limit, c.watermark().Format(time.RFC3339)),
			At:       c.now,
			Key:      fmt.Sprintf("%s/%s/%d", api.AlertLag, c.platform.Name, c.watermark().UnixMilli()),
		})
	case lag <= limit:
		c.st.LagAlerted = false
	}
}

// lagAlertDue is when the lag will cross lag_alert if nothing moves, so the
// cursor wakes to alert even while it only waits on a stuck slice.
func (c *v01Cursor) lagAlertDue() time.Time {
	if c.platform.LagAlert <= 0 || !c.st.CaughtUp || c.st.LagAlerted || c.st.Paused {
		return time.Time{}
	}
	return c.watermark().Add(c.platform.LagAlert.D() + time.Millisecond)
}

// alert sends an alert without blocking the loop; continue-as-new waits for
// alerts in flight so none is lost.
func (c *v01Cursor) alert(ctx workflow.Context, a api.Alert) {
	c.alerts++
	f := workflow.ExecuteActivity(bookkeepingActivityContext(ctx, c.platform.Settings()), acts.SendAlert, a)
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.alerts--; c.poke() }()
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("alert not delivered", "key", a.Key, "error", err)
		}
	})
}

// ---- cursor_handlers.go (v0.1)

// registerHandlers installs the status query and the updates. Updates share
// the signal names; unlike signals they answer the caller and reject bad
// input in a validator, so nothing invalid reaches history.
func (c *v01Cursor) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (v01CursorStatus, error) {
		return c.status(), nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	updates := []struct {
		name    string
		handler any
		opts    workflow.UpdateHandlerOptions
	}{
		{api.SignalPause, func(ctx workflow.Context, raw json.RawMessage) (v01CursorStatus, error) {
			var req api.PauseRequest
			_ = v01DecodeOptional(raw, &req) // the validator checked it strictly
			c.applyPause(req)
			c.poke()
			return c.status(), nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var req api.PauseRequest
			return v01DecodeStrict(raw, &req)
		}}},
		{api.SignalResume, func(ctx workflow.Context) (v01CursorStatus, error) {
			c.applyResume()
			c.poke()
			return c.status(), nil
		}, workflow.UpdateHandlerOptions{}},
		{api.SignalReprocess, func(ctx workflow.Context, raw json.RawMessage) (int, error) {
			var req api.ReprocessRequest
			if err := v01DecodeOptional(raw, &req); err != nil {
				return 0, err
			}
			c.now = workflow.Now(ctx)
			n, err := c.applyReprocess(req)
			c.poke()
			return n, err
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var req api.ReprocessRequest
			if err := v01DecodeStrict(raw, &req); err != nil {
				return err
			}
			return c.validateReprocess(req, workflow.Now(ctx))
		}}},
		{api.SignalConfig, func(ctx workflow.Context, raw json.RawMessage) (v01CursorStatus, error) {
			var p config.Platform
			if err := v01DecodeOptional(raw, &p); err != nil {
				return c.status(), err
			}
			err := c.applyConfig(p) // judged by the validator when it was accepted
			c.poke()
			return c.status(), err
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var p config.Platform
			if err := v01DecodeStrict(raw, &p); err != nil {
				return err
			}
			return c.validateConfig(p)
		}}},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, u.opts); err != nil {
			return fmt.Errorf("register update %s: %w", u.name, err)
		}
	}
	return nil
}

// poke wakes the main loop after an update changed the state.
func (c *v01Cursor) poke() { c.wake.SendAsync(true) }

func (c *v01Cursor) status() v01CursorStatus {
	s := v01CursorStatus{
		Platform:   c.platform.Name,
		Kind:       c.platform.Kind,
		Start:      c.start,
		Watermark:  c.watermark(),
		Next:       c.st.Next,
		AsOf:       c.now,
		LagSeconds: c.now.Sub(c.watermark()).Seconds(),
		Paused:     c.st.Paused,
		Waiting:    c.waiting,
		WaitUntil:  c.waitUntil,
		InFlight:   []v01SliceRef{},
		Counts:     c.st.Counts,
		LastError:  c.st.LastError,
		Runs:       c.st.Runs,
		Interval:   c.platform.Interval.String(),
		SliceSpan:  (time.Duration(c.spanIntervals()) * c.platform.Interval.D()).String(),
		TaskQueue:  c.platform.TaskQueue,
		Settings:   c.platform,

		ConsecutiveFailures: c.st.ConsecutiveFailures,
		BreakerOpen:         c.st.BreakerOpen,
	}
	if c.st.Paused {
		// Derived from state: an update answers before the loop has run.
		s.Waiting, s.WaitUntil = api.WaitPaused, time.Time{}
		if c.st.BreakerOpen {
			s.Waiting = api.WaitBreaker
		}
		if c.st.PauseReason != "" {
			s.Waiting += ": " + c.st.PauseReason
		}
	}
	for _, list := range c.lists() {
		for _, r := range *list {
			switch {
			case r.Running:
				s.InFlight = append(s.InFlight, r)
			case !r.Done:
				s.Queued = append(s.Queued, r)
			}
		}
	}
	return s
}

// ---- cursor_signals.go (v0.1)

type v01CursorSignals struct {
	pause, resume, reprocess, config workflow.ReceiveChannel
}

func (c *v01Cursor) signalChannels(ctx workflow.Context) *v01CursorSignals {
	return &v01CursorSignals{
		pause:     workflow.GetSignalChannel(ctx, api.SignalPause),
		resume:    workflow.GetSignalChannel(ctx, api.SignalResume),
		reprocess: workflow.GetSignalChannel(ctx, api.SignalReprocess),
		config:    workflow.GetSignalChannel(ctx, api.SignalConfig),
	}
}

// Signal payloads arrive as raw JSON so a malformed one (a typo in a
// hand-written `temporal workflow signal`) is reported in status instead of
// failing the workflow task; one with unknown fields is refused the same way.
func (s *v01CursorSignals) handlers(ctx workflow.Context, c *v01Cursor) map[workflow.ReceiveChannel]func(json.RawMessage) {
	return map[workflow.ReceiveChannel]func(json.RawMessage){
		s.pause: func(raw json.RawMessage) {
			var req api.PauseRequest
			if err := v01DecodeSignal(ctx, raw, &req, true); err != nil {
				c.st.LastError = "pause signal: " + err.Error()
				return
			}
			c.applyPause(req)
		},
		s.resume: func(json.RawMessage) { c.applyResume() },
		s.reprocess: func(raw json.RawMessage) {
			var req api.ReprocessRequest
			if err := v01DecodeSignal(ctx, raw, &req, false); err != nil {
				c.st.LastError = "reprocess signal: " + err.Error()
				return
			}
			if _, err := c.applyReprocess(req); err != nil {
				c.st.LastError = "reprocess signal: " + err.Error()
			}
		},
		s.config: func(raw json.RawMessage) {
			var p config.Platform
			if err := v01DecodeSignal(ctx, raw, &p, false); err != nil {
				c.st.LastError = "config signal: " + err.Error()
				return
			}
			if err := v01JudgeSettings(ctx, p, c.validateConfig); err != nil {
				c.st.LastError = "config signal: " + err.Error()
				return
			}
			if err := c.applyConfig(p); err != nil {
				c.st.LastError = "config signal: " + err.Error()
			}
		},
	}
}

func (s *v01CursorSignals) ordered() []workflow.ReceiveChannel {
	return []workflow.ReceiveChannel{s.pause, s.resume, s.reprocess, s.config}
}

func (s *v01CursorSignals) addTo(ctx workflow.Context, sel workflow.Selector, c *v01Cursor) {
	h := s.handlers(ctx, c)
	for _, ch := range s.ordered() {
		apply := h[ch]
		sel.AddReceive(ch, func(ch workflow.ReceiveChannel, _ bool) {
			var raw json.RawMessage
			ch.Receive(ctx, &raw)
			c.now = workflow.Now(ctx) // the loop read the clock before it blocked
			apply(raw)
		})
	}
}

// drain applies every signal already delivered, so none is lost when the
// cursor continues as new.
func (s *v01CursorSignals) drain(ctx workflow.Context, c *v01Cursor) {
	h := s.handlers(ctx, c)
	for _, ch := range s.ordered() {
		for {
			var raw json.RawMessage
			if !ch.ReceiveAsync(&raw) {
				break
			}
			h[ch](raw)
		}
	}
}

func (c *v01Cursor) applyPause(req api.PauseRequest) {
	c.st.Paused = true
	c.st.PauseReason = req.Reason
	if c.st.PauseReason == "" {
		c.st.PauseReason = "paused by operator"
	}
}

func (c *v01Cursor) applyResume() {
	c.st.Paused = false
	c.st.PauseReason = ""
	c.closeBreaker()
}

// validateReprocess checks a request against now; it changes nothing, as
// update validators do not run on replay.
func (c *v01Cursor) validateReprocess(req api.ReprocessRequest, now time.Time) error {
	switch {
	case req.From.IsZero() || req.To.IsZero():
		return fmt.Errorf("from and to are both required (RFC3339 times)")
	case !req.From.Before(req.To):
		return fmt.Errorf("from %s is not before to %s", req.From.Format(time.RFC3339), req.To.Format(time.RFC3339))
	case req.To.After(now):
		return fmt.Errorf("to %s is in the future (now %s)", req.To.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if n := int(req.To.Sub(req.From)/c.platform.Interval.D()) + 1; n > v01MaxReprocessSlices {
		return fmt.Errorf("range needs %d slices of %s, more than %d; ask for a shorter range", n, c.platform.Interval, v01MaxReprocessSlices)
	}
	return nil
}

// applyReprocess queues [From, To) in interval-sized slices, exactly that
// range; a slice already queued or running is not queued twice.
func (c *v01Cursor) applyReprocess(req api.ReprocessRequest) (int, error) {
	if err := c.validateReprocess(req, c.now); err != nil {
		return 0, err
	}
	from, to := req.From.UTC(), req.To.UTC()
	queued := 0
	for s := from; s.Before(to); s = s.Add(c.platform.Interval.D()) {
		e := s.Add(c.platform.Interval.D())
		if e.After(to) {
			e = to
		}
		id := api.SliceWorkflowIDV01(c.platform.Name, s, e)
		if c.willRun(id) {
			continue
		}
		c.st.Reprocess = append(c.st.Reprocess, v01SliceRef{ID: id, Start: s, End: e, Force: req.Force})
		queued++
	}
	return queued, nil
}

// validateConfig is the full settings check of today's release. It runs in
// the update validator (never replayed) and, for signals, inside a recorded
// verdict (v01JudgeSettings), so it may grow stricter between releases.
func (c *v01Cursor) validateConfig(p config.Platform) error {
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	return v01ValidateSettings(p)
}

// applyConfig takes effect from the next slice; running slices keep the
// settings they started with. The settings were judged already (validator
// or recorded verdict).
func (c *v01Cursor) applyConfig(p config.Platform) error {
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	ws, err := config.ParseWindows(p.Windows)
	if err != nil {
		return err
	}
	c.platform, c.windows = p, ws
	return nil
}

// ---- cursor_span.go (v0.1)

// Adaptive slice sizing. Every slice costs the same orchestration (a child
// workflow, its tasks and visibility records) however few orders it holds,
// so a backfill of sparse history in 15-minute slices spends nearly all its
// time on bookkeeping (docs/performance.md). While far behind, the cursor
// therefore widens the slice span whenever a slice of the current span took
// at most a quarter of max_pages: by the factor that would fill a quarter
// of max_pages at the density just seen, at least 2 and at most 8 (a jump
// into denser history then costs at most one split). It halves the span
// when a slice split or failed, and never exceeds backfill_max_span. Spans stay whole multiples of interval
// and start where the last slice ended, so the slices still tile time with
// no gap; near the present only settled intervals fit, so slices are one
// interval again.

// How much one sparse slice may widen the span.
const (
	v01MinSpanGrowth = 2
	v01MaxSpanGrowth = 8
)

// maxSpanIntervals is the most intervals one regular slice may cover.
func (c *v01Cursor) maxSpanIntervals() int {
	iv := c.platform.Interval.D()
	if !c.adaptiveSpan || c.platform.BackfillMaxSpan <= 0 || iv <= 0 {
		return 1
	}
	return max(1, int(c.platform.BackfillMaxSpan.D()/iv))
}

// spanIntervals is how many intervals the next regular slice may cover.
func (c *v01Cursor) spanIntervals() int {
	return min(max(c.st.SpanIntervals, 1), c.maxSpanIntervals())
}

// nextSliceEnd is the end of the next regular slice: the current span, cut
// to the intervals that have settled, but at least one interval (launch
// waits until that one has settled).
func (c *v01Cursor) nextSliceEnd() time.Time {
	iv := c.platform.Interval.D()
	n := c.spanIntervals()
	if n > 1 {
		settled := int(c.now.Add(-c.platform.Settle.D()).Sub(c.st.Next) / iv)
		n = max(1, min(n, settled))
	}
	return c.st.Next.Add(time.Duration(n) * iv)
}

// adaptSpan learns from a finished regular slice.
func (c *v01Cursor) adaptSpan(ctx workflow.Context, ref v01SliceRef, res api.SliceResult) {
	limit := c.maxSpanIntervals()
	if limit <= 1 {
		return
	}
	cur := c.spanIntervals()
	covered := int(ref.End.Sub(ref.Start) / c.platform.Interval.D()) // 0 for a split half under one interval
	next := cur
	switch res.Outcome {
	case api.SliceCompleted:
		// Only a slice as wide as the current span says the span is sparse;
		// narrower ones finishing (near the present, split halves) do not.
		if res.Pages*4 <= c.platform.MaxPages && covered >= cur {
			target := c.platform.PageSize * c.platform.MaxPages / 4
			factor := min(max(target/max(res.OrdersFetched, 1), v01MinSpanGrowth), v01MaxSpanGrowth)
			next = min(cur*factor, limit)
		}
	case api.SliceSplit, api.SliceFailed:
		next = max(1, min(cur, max(covered, 1))/2)
	}
	if next != cur {
		workflow.GetLogger(ctx).Debug("backfill slice span", "intervals", next, "after", ref.ID, "pages", res.Pages)
		c.st.SpanIntervals = next
	}
}

// ---- cursor_wait.go (v0.1)

// computeWait says what the cursor waits for and returns when to wake up on
// its own (zero: only a signal or a finishing slice can move it on).
func (c *v01Cursor) computeWait() time.Time {
	c.waiting, c.waitUntil = "", time.Time{}
	switch {
	case c.st.Paused && c.st.BreakerOpen:
		c.waiting = api.WaitBreaker
		return time.Time{}
	case c.st.Paused:
		c.waiting = api.WaitPaused
		return time.Time{}
	case c.draining:
		c.waiting = api.WaitDraining
		return c.lagAlertDue()
	case c.running() >= c.platform.Concurrency:
		c.waiting = api.WaitConcurrency
		return c.lagAlertDue()
	}
	open := c.windows.OpenAt(c.now)
	var wake time.Time
	earliest := func(t time.Time) {
		if t.After(c.now) && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	earliest(c.lagAlertDue())
	for _, list := range c.lists() {
		for _, r := range *list {
			if !r.Running && !r.Done && (open || r.Force) {
				earliest(r.NotBefore)
			}
		}
	}
	if !open {
		opens := c.windows.NextOpen(c.now)
		c.waiting, c.waitUntil = api.WaitWindow, opens
		earliest(opens)
		return wake
	}
	settled := c.st.Next.Add(c.platform.Interval.D() + c.platform.Settle.D())
	if settled.After(c.now) && (wake.IsZero() || !settled.After(wake)) {
		c.waiting, c.waitUntil = api.WaitSettling, settled
	}
	earliest(settled)
	return wake
}

// ensureTimer keeps one timer for the wanted wake-up time instead of a new
// timer per loop turn, which would fill history with started and cancelled
// timers.
func (c *v01Cursor) ensureTimer(ctx workflow.Context, at time.Time) workflow.Future {
	if c.timer != nil && c.timerAt.Equal(at) {
		return c.timer
	}
	if c.cancelTimer != nil {
		c.cancelTimer()
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	c.timer = workflow.NewTimer(timerCtx, max(at.Sub(c.now), time.Millisecond))
	c.timerAt, c.cancelTimer = at, cancel
	return c.timer
}

// ---- messages.go (v0.1)

// Messages (signals and updates) are untrusted input: anyone who can reach
// the Temporal frontend can send them, by hand or by script. Every payload
// is decoded strictly, as the platforms file is: an unknown field is a
// mistake (a typo, or a payload meant for something else), not something to
// ignore.

// v01DecodeOptional reads a payload leniently (unknown fields ignored); an
// empty payload or null leaves v as it is. Histories recorded before
// versionStrictMessages replay with it.
func v01DecodeOptional(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("payload %.200s is not valid: %w", string(raw), err)
	}
	return nil
}

// v01DecodeStrict reads a payload like v01DecodeOptional but refuses unknown
// fields and anything after the value.
func v01DecodeStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if p, ok := v.(*config.Platform); ok {
		// Names nested unknown fields (rate_limit.burts) and, unlike
		// encoding/json, does not take "Kind" for "kind".
		decoded, err := config.DecodePlatformJSON(raw)
		if err != nil {
			return fmt.Errorf("settings are not valid: %w", err)
		}
		*p = decoded
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("payload %.200s is not valid: %w", string(raw), err)
	}
	if dec.More() {
		return fmt.Errorf("payload %.200s is not valid: more than one JSON value", string(raw))
	}
	return nil
}

// v01DecodeSignal decodes a signal payload strictly. oldAccepted says whether
// the code before versionStrictMessages acted on a payload it could not
// decode (a pause without a readable reason still paused); when the old
// code would have acted, the version is asked, so histories recorded before
// it replay the old decision.
func v01DecodeSignal(ctx workflow.Context, raw json.RawMessage, v any, oldAcceptedMalformed bool) error {
	strictErr := v01DecodeStrict(raw, v)
	if strictErr == nil {
		return nil
	}
	lenientErr := v01DecodeOptional(raw, v)
	if lenientErr == nil || oldAcceptedMalformed {
		if workflow.GetVersion(ctx, versionStrictMessages, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return nil
		}
	}
	return strictErr
}

// v01JudgeSettings is the settings check of a `config` signal, as recorded in
// history. The check may grow stricter in later releases (it lives at the
// edges: the platforms file, the CLI, update validators); recording its
// verdict keeps an accepted signal accepted on replay. Runs from before
// versionConfigVerdict replay the structural check they were judged by.
func v01JudgeSettings(ctx workflow.Context, p config.Platform, check func(config.Platform) error) error {
	if workflow.GetVersion(ctx, versionConfigVerdict, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return p.ValidateStructure()
	}
	var verdict string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := check(p); err != nil {
			return err.Error()
		}
		return ""
	}).Get(&verdict)
	if err != nil {
		return fmt.Errorf("read the settings verdict: %w", err)
	}
	if verdict != "" {
		return errors.New(verdict)
	}
	return nil
}

// v01ValidateSettings is config.Platform.Validate as a plain error (a nil
// *ValidationError must not become a non-nil error).
func v01ValidateSettings(p config.Platform) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return nil
}

// ---- api types of v0.1 (api/cursor.go), as the v0.1 cursor read and wrote them

type v01CursorInput struct {
	Platform        config.Platform `json:"platform"`
	Start           time.Time       `json:"start"`
	State           *v01CursorState `json:"state,omitempty"`
	MaxSlicesPerRun int             `json:"max_slices_per_run,omitempty"`
}

type v01SliceRef struct {
	ID        string    `json:"id"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Force     bool      `json:"force,omitempty"`
	Running   bool      `json:"running"`
	Done      bool      `json:"done,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
	Resweep   bool      `json:"resweep,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
}

type v01CursorState struct {
	Next                time.Time     `json:"next"`
	Pending             []v01SliceRef `json:"pending"`
	Reprocess           []v01SliceRef `json:"reprocess,omitempty"`
	Paused              bool          `json:"paused"`
	PauseReason         string        `json:"pause_reason,omitempty"`
	Counts              api.Counts    `json:"counts"`
	LastError           string        `json:"last_error,omitempty"`
	Runs                int           `json:"runs"`
	Resweep             []v01SliceRef `json:"resweep,omitempty"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	BreakerOpen         bool          `json:"breaker_open,omitempty"`
	LagAlerted          bool          `json:"lag_alerted,omitempty"`
	CaughtUp            bool          `json:"caught_up,omitempty"`
	SpanIntervals       int           `json:"span_intervals,omitempty"`
}

type v01CursorStatus struct {
	Platform            string          `json:"platform"`
	Kind                string          `json:"kind"`
	Start               time.Time       `json:"start"`
	Watermark           time.Time       `json:"watermark"`
	Next                time.Time       `json:"next"`
	AsOf                time.Time       `json:"as_of"`
	LagSeconds          float64         `json:"lag_seconds"`
	Paused              bool            `json:"paused"`
	Waiting             string          `json:"waiting,omitempty"`
	WaitUntil           time.Time       `json:"wait_until,omitzero"`
	InFlight            []v01SliceRef   `json:"in_flight"`
	Queued              []v01SliceRef   `json:"queued,omitempty"`
	Counts              api.Counts      `json:"counts"`
	LastError           string          `json:"last_error,omitempty"`
	Runs                int             `json:"runs"`
	Interval            string          `json:"interval"`
	SliceSpan           string          `json:"slice_span,omitempty"`
	TaskQueue           string          `json:"task_queue"`
	ConsecutiveFailures int             `json:"consecutive_failures"`
	BreakerOpen         bool            `json:"breaker_open"`
	Settings            config.Platform `json:"settings"`
}
