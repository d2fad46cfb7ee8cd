package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Reconcile is a platform's count reconciliation (ID
// api.ReconcileWorkflowID, one per platform, started and ended with its
// cursor). Windows of reconcile_window lie on a grid from the first whole
// window after the cursor's backfill start. Each window is checked once
// it is settle old and the cursor's watermark passed it, and again
// reconcile_recheck after its end: activities.ReconcileCount compares the
// platform's count of orders whose current update time falls in the
// window with the store's count of current versions in it. When the
// platform counts more, the cursor is asked to reprocess exactly that
// window (its `reprocess` signal, activities.ReconcileReprocess); once that
// ran, the window is counted again, and a difference that stays raises an
// api.AlertReconcile alert (once per window and check). Results are kept
// in the store (`reconcile report`), counted in the metrics and answered
// by the `reconcile` query.
//
// It sleeps on timers between windows, so a day's window costs a few
// actions a day. Its tasks run on the platform's task queue with the
// platform's fairness key and priority api.ReconcilePriority (after
// backfill); counts book the platform's rate like pages, and a 429 is a
// timer wait. It continues as new every maxReconcileTurns checks.
func Reconcile(ctx workflow.Context, in api.ReconcileInput) error {
	if in.Platform.Name == "" || in.Platform.TaskQueue == "" {
		return temporal.NewNonRetryableApplicationError("reconcile: the platform's name and task queue are required", "InvalidInput", nil)
	}
	r := &reconcileRun{in: in, p: in.Platform}
	if in.State != nil {
		r.st = *in.State
	} else {
		r.st.NextFirst = reconcileGridStart(in.Start, in.Platform.ReconcileWindowOrDefault())
		r.st.NextRecheck = r.st.NextFirst
	}
	return r.run(ctx)
}

// maxReconcileTurns bounds one run's history: each turn is a timer or a
// count (a few events), a difference a few more.
const maxReconcileTurns = 300

// maxReconcileResults bounds the results the state carries.
const maxReconcileResults = 20

// maxRecounts bounds the waits for a reprocess before the recount counts
// anyway.
const maxRecounts = 10

type reconcileRun struct {
	in      api.ReconcileInput
	p       api.Settings
	st      api.ReconcileState
	waiting string
	until   time.Time
	alerts  alertSender
	stop    bool                    // reconcile: false arrived
	checks  workflow.ReceiveChannel // SignalReconcileCheck
	// rateWait is the platform's last stated wait (a 429, a booked-out slot).
	rateWait time.Duration
}

func (r *reconcileRun) run(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryReconcile, func() (api.ReconcileStatus, error) { return r.status(), nil }); err != nil {
		return err
	}
	r.alerts.resume(ctx, r.bookkeeping(ctx), r.in.Alerts, nil)
	cfg := workflow.GetSignalChannel(ctx, api.SignalReconcileConfig)
	r.checks = workflow.GetSignalChannel(ctx, api.SignalReconcileCheck)
	for turn := 0; ; turn++ {
		if turn >= maxReconcileTurns || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			if r.alerts.mayContinue(ctx) {
				// Settings that arrived meanwhile travel on, not lost.
				for {
					var s api.Settings
					if !cfg.ReceiveAsync(&s) {
						break
					}
					r.configure(ctx, s)
				}
				r.takeChecks(ctx)
				if r.stop {
					return nil
				}
				st := r.st
				st.Runs++
				return workflow.NewContinueAsNewError(ctx, api.ReconcileWorkflowType, api.ReconcileInput{
					Platform: r.p, Start: r.in.Start, State: &st, Alerts: r.alerts.handOver(ctx)})
			}
		}
		if r.stop {
			return nil
		}
		r.takeChecks(ctx)
		now := workflow.Now(ctx)
		w, check, due := reconcileNext(r.st, r.p, now)
		if len(r.st.Requested) > 0 {
			w, check, due = r.st.Requested[0], api.ReconcileManual, now
		}
		if due.After(now) {
			if err := r.sleep(ctx, cfg, api.ReconcileWaitDue, due.Sub(now)); err != nil {
				return err
			}
			continue
		}
		done, err := r.check(ctx, cfg, w, check)
		if err != nil || done {
			return err
		}
	}
}

// check runs one check of window w; done when the workflow ends (the
// kind cannot count).
func (r *reconcileRun) check(ctx workflow.Context, cfg workflow.ReceiveChannel, w api.Range, check string) (bool, error) {
	in := activities.ReconcileCountInput{Platform: r.p, From: w.Start, To: w.End, Check: check}
	res, wait, err := r.count(ctx, in)
	if err != nil {
		return false, err
	}
	if wait != "" {
		return false, r.sleep(ctx, cfg, wait, r.waitFor(wait, w.End, res.Watermark))
	}
	if res.Unsupported {
		workflow.GetLogger(ctx).Warn("reconcile: the platform has no count call; reconciliation ends", "platform", r.p.Name, "kind", r.p.Kind)
		return true, nil
	}
	now := workflow.Now(ctx)
	if check == api.ReconcileManual {
		r.st.Requested = r.st.Requested[1:]
	} else {
		r.st = reconcileAdvance(r.st, r.p, w, check, now)
	}
	r.st.Counts.Checks++
	result := res.Result
	if result.Outcome == api.ReconcileReprocessing {
		r.st.Counts.Differences++
		if err := workflow.ExecuteActivity(r.bookkeeping(ctx), acts.ReconcileReprocess,
			activities.ReconcileReprocessInput{Platform: r.p.Name, From: w.Start, To: w.End}).Get(ctx, nil); err != nil {
			return false, err
		}
		r.st.Counts.Reprocessed++
		first := result
		in.First = &first
		if result, err = r.recount(ctx, cfg, in); err != nil {
			return false, err
		}
		switch result.Outcome {
		case api.ReconcileClosed:
			r.st.Counts.Closed++
		case api.ReconcileOpen:
			r.st.Counts.Open++
			r.alert(ctx, result)
		}
	}
	if result.Outcome == api.ReconcileStoreAhead {
		r.st.Counts.StoreAhead++
	}
	r.st.Results = append(r.st.Results, result)
	if n := len(r.st.Results) - maxReconcileResults; n > 0 {
		r.st.Results = append([]api.ReconcileResult(nil), r.st.Results[n:]...)
	}
	return false, nil
}

// recount counts the window again once its reprocess ran: it waits while
// the cursor shows the reprocess queued or running, up to maxRecounts
// waits, then counts regardless. A window that cannot be counted again
// within 3 × maxRecounts waits (the platform keeps failing) is open.
func (r *reconcileRun) recount(ctx workflow.Context, cfg workflow.ReceiveChannel, in activities.ReconcileCountInput) (api.ReconcileResult, error) {
	for i := 1; i <= 3*maxRecounts; i++ {
		if err := r.sleep(ctx, cfg, api.ReconcileWaitReprocess, r.recountWait()); err != nil {
			return api.ReconcileResult{}, err
		}
		in.Force = i >= maxRecounts
		res, wait, err := r.count(ctx, in)
		if err != nil {
			return api.ReconcileResult{}, err
		}
		if wait == "" && res.Gate == "" && !res.Unsupported {
			return res.Result, nil
		}
	}
	open := *in.First
	open.Outcome, open.Reprocessed, open.RecountPlatform, open.RecountStore = api.ReconcileOpen, true, in.First.PlatformCount, in.First.StoreCount
	return open, nil
}

// count runs ReconcileCount: its result, or the wait reason (a gate, the
// platform's rate, a failure to retry later).
func (r *reconcileRun) count(ctx workflow.Context, in activities.ReconcileCountInput) (activities.ReconcileCountResult, string, error) {
	var res activities.ReconcileCountResult
	err := workflow.ExecuteActivity(r.activity(ctx), acts.ReconcileCount, in).Get(ctx, &res)
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &canceled):
		return res, "", err
	case err != nil:
		if d, _, ok := refetchWait(err); ok {
			r.rateWait = d
			return res, api.ReconcileWaitRate, nil
		}
		r.st.LastError = textclip.Message(fmt.Sprintf("count [%s, %s): %s", in.From.Format(time.RFC3339), in.To.Format(time.RFC3339), rootMessage(err)))
		return res, api.ReconcileWaitRetry, nil
	case res.Gate != "" && in.First == nil:
		return res, res.Gate, nil
	}
	r.st.LastError = ""
	return res, "", nil
}

// alert raises the window's api.AlertReconcile alert; its key names the
// window and check, so one episode alerts once.
func (r *reconcileRun) alert(ctx workflow.Context, res api.ReconcileResult) {
	key := fmt.Sprintf("reconcile/%s/%s-%s/%s", r.p.Name, res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339), res.Check)
	msg := fmt.Sprintf("platform %s: the platform counts %d orders updated in [%s, %s), the store %d, after reprocessing the window (before it: %d and %d); see `ordersync reconcile report --platform %s`",
		r.p.Name, res.RecountPlatform, res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339), res.RecountStore,
		res.PlatformCount, res.StoreCount, r.p.Name)
	r.alerts.send(ctx, r.bookkeeping(ctx), api.Alert{Kind: api.AlertReconcile, Platform: r.p.Name, Message: msg, At: workflow.Now(ctx), Key: key}, nil)
}

// sleep waits d on a timer; a config signal ends the wait early with the
// new settings in force.
func (r *reconcileRun) sleep(ctx workflow.Context, cfg workflow.ReceiveChannel, why string, d time.Duration) error {
	r.waiting, r.until = why, workflow.Now(ctx).Add(d)
	defer func() { r.waiting, r.until = "", time.Time{} }()
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, d)
	var timerErr error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(f workflow.Future) { timerErr = f.Get(ctx, nil) })
	sel.AddReceive(cfg, func(c workflow.ReceiveChannel, _ bool) {
		var s api.Settings
		c.Receive(ctx, &s)
		r.configure(ctx, s)
	})
	if why == api.ReconcileWaitDue {
		// A requested check ends the wait for the grid's next window.
		sel.AddReceive(r.checks, func(c workflow.ReceiveChannel, _ bool) {
			var w api.Range
			c.Receive(ctx, &w)
			r.takeCheck(ctx, w)
		})
	}
	sel.Select(ctx)
	return timerErr
}

// takeChecks queues the windows SignalReconcileCheck asked for: a window
// that is empty, longer than api.MaxReconcileCheckSpan or not yet ended is
// dropped (logged), as are requests beyond api.MaxReconcileChecksQueued.
func (r *reconcileRun) takeChecks(ctx workflow.Context) {
	for {
		var w api.Range
		if !r.checks.ReceiveAsync(&w) {
			return
		}
		r.takeCheck(ctx, w)
	}
}

func (r *reconcileRun) takeCheck(ctx workflow.Context, w api.Range) {
	switch {
	case w.Start.IsZero() || !w.Start.Before(w.End) || w.End.Sub(w.Start) > api.MaxReconcileCheckSpan || w.End.After(workflow.Now(ctx)):
		workflow.GetLogger(ctx).Warn("reconcile: a requested check is not a closed window of at most 7 days; dropped",
			"platform", r.p.Name, "start", w.Start, "end", w.End)
	case len(r.st.Requested) >= api.MaxReconcileChecksQueued:
		workflow.GetLogger(ctx).Warn("reconcile: too many requested checks wait; dropped", "platform", r.p.Name, "start", w.Start, "end", w.End)
	default:
		r.st.Requested = append(r.st.Requested, api.Range{Start: w.Start.UTC(), End: w.End.UTC()})
	}
}

// configure takes new settings of the same platform; reconcile: false
// ends the workflow after the current wait.
func (r *reconcileRun) configure(ctx workflow.Context, s api.Settings) {
	if s.Name != r.p.Name || s.TaskQueue == "" || s.Interval <= 0 {
		workflow.GetLogger(ctx).Warn("reconcile: config for another platform or without task queue or interval ignored", "platform", r.p.Name)
		return
	}
	r.p = s
	r.stop = !s.ReconcileOn()
}

// waitFor is how long to wait for a reason. The rate: as the platform
// said. A cursor about to pass the window (its watermark within a window
// of the end, or unknown): an interval and its settle, between 5 s and 15
// minutes. A cursor further behind (a backfill) and a failed count: a
// quarter window, between 10 s and an hour, so a long backfill costs a few
// actions an hour.
func (r *reconcileRun) waitFor(why string, end, watermark time.Time) time.Duration {
	w := r.p.ReconcileWindowOrDefault()
	switch {
	case why == api.ReconcileWaitRate && r.rateWait > 0:
		return r.rateWait
	case why == api.ReconcileWaitCursor && (watermark.IsZero() || end.Sub(watermark) <= w):
		return min(max(r.p.Interval.D()+r.p.Settle.D(), 5*time.Second), 15*time.Minute, max(w/4, 10*time.Second))
	}
	return min(max(w/4, 10*time.Second), time.Hour)
}

// recountWait is the wait before a recount: an interval of the cursor
// (it starts the reprocess at once), between 10 s and 15 minutes.
func (r *reconcileRun) recountWait() time.Duration {
	return min(max(r.p.Interval.D(), 10*time.Second), 15*time.Minute)
}

func (r *reconcileRun) status() api.ReconcileStatus {
	return api.ReconcileStatus{Platform: r.p.Name, Kind: r.p.Kind, Window: r.p.ReconcileWindowOrDefault().String(),
		Recheck: r.p.ReconcileRecheckOrDefault().String(), NextFirst: r.st.NextFirst, NextRecheck: r.st.NextRecheck,
		Waiting: r.waiting, WaitUntil: r.until, Requested: r.st.Requested, Counts: r.st.Counts, Results: r.st.Results, LastError: r.st.LastError, Runs: r.st.Runs}
}

// activity is the count's options: the platform's task queue, fairness
// key and retry settings (as a page), at api.ReconcilePriority.
func (r *reconcileRun) activity(ctx workflow.Context) workflow.Context {
	opts := pageActivityOptions(r.p)
	opts.Priority = ReconcileTaskPriority(r.p.Name)
	return workflow.WithActivityOptions(ctx, opts)
}

// bookkeeping is for the reprocess signal and alerts: retried until done.
func (r *reconcileRun) bookkeeping(ctx workflow.Context) workflow.Context {
	return bookkeepingActivityContext(ctx, r.p)
}

// ReconcileTaskPriority is the Temporal priority of a reconciliation's
// workflow and activity tasks: api.ReconcilePriority with the platform's
// fairness key.
func ReconcileTaskPriority(platform string) temporal.Priority {
	pr := fairness.Priority(platform)
	pr.PriorityKey = api.ReconcilePriority
	return pr
}

// reconcileGridStart is the first window start at or after start on the
// grid of window (multiples of it since the Unix epoch, in UTC).
func reconcileGridStart(start time.Time, window time.Duration) time.Time {
	t := start.UTC().Truncate(window)
	if t.Before(start) {
		t = t.Add(window)
	}
	return t
}

// reconcileNext says which check is next and when it is due: the next
// window's first check at its end plus settle, or an earlier window's
// recheck at its end plus reconcile_recheck, whichever is due first.
func reconcileNext(st api.ReconcileState, p api.Settings, now time.Time) (api.Range, string, time.Time) {
	w := p.ReconcileWindowOrDefault()
	first := api.Range{Start: st.NextFirst, End: st.NextFirst.Add(w)}
	firstDue := first.End.Add(p.Settle.D())
	if rc := p.ReconcileRecheckOrDefault(); rc > 0 && st.NextRecheck.Before(st.NextFirst) {
		again := api.Range{Start: st.NextRecheck, End: st.NextRecheck.Add(w)}
		if due := again.End.Add(rc); !due.After(firstDue) {
			return again, api.ReconcileRecheck, due
		}
	}
	return first, api.ReconcileFirst, firstDue
}

// reconcileAdvance moves past a checked window. A window first checked
// when its recheck is already due (history older than
// reconcile_recheck, or no recheck at all) needs none.
func reconcileAdvance(st api.ReconcileState, p api.Settings, w api.Range, check string, now time.Time) api.ReconcileState {
	if check == api.ReconcileRecheck {
		st.NextRecheck = w.End
		return st
	}
	st.NextFirst = w.End
	if rc := p.ReconcileRecheckOrDefault(); (rc == 0 || !now.Before(w.End.Add(rc))) && !st.NextRecheck.Before(w.Start) {
		st.NextRecheck = w.End
	}
	return st
}
