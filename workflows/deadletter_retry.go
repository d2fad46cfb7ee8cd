package workflows

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
)

// Automatic dead-letter retry (versionDeadLetterAutoRetry).
//
// Most dead letters come from causes that pass: a platform outage, its
// pacing, a store failover. Before this, each waited for an operator's
// `dlq retry` while its orders were missing and the watermark moved on.
// Now a dead letter whose cause is in autoRetryCauses is run again by the
// dead-letter workflow itself, after the waits of the platform's
// dead_letter_retry schedule (config/deadletter_retry.go; 5m, 30m, 2h,
// then every 6h), on the path an operator's reprocess takes: success
// removes the entry, a failure updates it (through the add signal) and
// sets the next try. A cause outside the table waits for an operator.
//
// One timer, for the earliest due entry, however many entries wait; tries
// due within 30 seconds of it start with it, at most the platform's
// concurrency at once. The due times live in the entries
// (api.DeadLetterEntry.NextRetryAt), so continue-as-new carries the
// schedule. An operator's reprocess or discard of an entry takes it off
// the schedule. The entry's first failure alerts; a later failure alerts
// only when its cause no longer retries on its own (someone must act
// now), not for every failed automatic try.

// autoRetryCauses are the error types (api.DeadLetterEntry.ErrorType)
// whose dead letters retry on their own, with why. Every other type waits
// for an operator: activities.ErrPermanent (bad credentials, a rejected
// request, a platform paging in a cycle), no type (a runaway paging, an
// error ordersync does not classify) and any type not listed (a panic, a
// bug: nothing says a later try would help). docs/how-it-works.md's dead-letter
// section and docs/reliability.md mirror this table. Workflow code decides
// by it: moving a type in or out changes which timers and slices a
// recorded history issues, so it needs its own change ID.
var autoRetryCauses = map[string]string{
	activities.ErrTransient:   "network errors, HTTP 5xx, a request that timed out: the platform or the way to it was down",
	activities.ErrRateLimited: "the platform's pacing (429, THROTTLED) outlasted the page's rate_limit_wait; later its budget has refilled",
	"Timeout":                 "an activity timed out: a worker died or the platform hung",
	activities.ErrStore:       "the order store failed a write (outage, failover, full disk): nothing the platform did",
	activities.ErrMalformed:   "a body that did not parse, mostly a truncated response or a proxy's error page; a lasting one costs one slice run per wait",
	activities.ErrSlotWait:    "the platform's request rate was booked out for longer than the slice could wait",
	activities.ErrBulkBusy:    "another bulk operation held the shop's bulk slot",
	activities.ErrBulkExpired: "a bulk operation's results expired before they were read",
	activities.ErrNotDeclared: "every attempt ran on workers whose platforms file lacked the platform (a rolling change of the files): no request was sent",
}

// autoRetryable says whether a dead letter of this error type retries on
// its own (autoRetryCauses).
func autoRetryable(errorType string) bool {
	_, ok := autoRetryCauses[errorType]
	return ok
}

// retryTimer is the dead-letter workflow's one timer: for the earliest due
// automatic retry.
type retryTimer struct {
	future workflow.Future
	at     time.Time
	cancel workflow.CancelFunc
	// version is this run's answer to versionDeadLetterAutoRetry: 0 not
	// asked yet, 1 retry on the schedule, -1 not (a history from before).
	version int8
	// batchUntil is the end of the batch of tries that started with the
	// last one due (retryBatch).
	batchUntil time.Time
}

// retries says whether e retries on its own: the platform has the
// automatic retry on and e's cause is in autoRetryCauses.
func (d *deadLetter) retries(e api.DeadLetterEntry) bool {
	return d.platform.DeadLetterRetry.On() && autoRetryable(e.ErrorType)
}

// autoRetryOn asks versionDeadLetterAutoRetry, once a run. Call it only
// where the automatic retry decides differently from the code before it
// (an entry it would schedule, an alert it would not raise), so runs that
// never get there record no marker.
func (d *deadLetter) autoRetryOn(ctx workflow.Context) bool {
	if d.timer.version == 0 {
		d.timer.version = -1
		if workflow.GetVersion(ctx, versionDeadLetterAutoRetry, workflow.DefaultVersion, 1) >= 1 {
			d.timer.version = 1
		}
	}
	return d.timer.version > 0
}

// schedule sets when e is tried again on its own: the wait of its next
// try after now, or never when its cause waits for an operator.
func (d *deadLetter) schedule(ctx workflow.Context, e *api.DeadLetterEntry) {
	if !d.retries(*e) {
		e.NextRetryAt = time.Time{}
		return
	}
	if d.autoRetryOn(ctx) {
		e.NextRetryAt = workflow.Now(ctx).Add(d.platform.DeadLetterRetry.Wait(e.AutoRetries + 1))
	}
}

// scheduleAll brings every entry that is not running in line with the
// settings: entries carried over from a run of before the automatic retry
// (or from one that had it off) get their next try, entries whose cause
// no longer retries (it is off now) lose theirs. A due time already set
// stays: a changed schedule applies from each entry's next failure.
func (d *deadLetter) scheduleAll(ctx workflow.Context) {
	for i := range d.entries {
		e := &d.entries[i]
		if !e.Reprocessing && (e.NextRetryAt.IsZero() || !d.retries(*e)) {
			d.schedule(ctx, e)
		}
	}
}

// alertsAgain says whether another failure of a dead-lettered slice
// raises an alert: always, but for a failure of a slice that retries on
// its own and did so before this failure too: the first failure told the
// operator, and the automatic tries are its business. old is the entry
// before the failure, e the failure.
func (d *deadLetter) alertsAgain(ctx workflow.Context, old, e api.DeadLetterEntry) bool {
	return !(d.retries(old) && d.retries(e) && d.autoRetryOn(ctx))
}

// discardedWhileRunning says whether e is the failure of a slice an
// operator discarded while it ran (an automatic try, or a reprocess): the
// discard wins, and the failure is dropped instead of coming back as a new
// entry with a new alert, as it did before versionDeadLetterAutoRetry. The
// mark is used once: a later failure of the same window (a re-sweep) is
// recorded as usual.
func (d *deadLetter) discardedWhileRunning(ctx workflow.Context, e api.DeadLetterEntry) bool {
	if !d.discarded[e.SliceID] {
		return false
	}
	delete(d.discarded, e.SliceID)
	if !d.autoRetryOn(ctx) {
		return false
	}
	workflow.GetLogger(ctx).Info("dead-letter: dropped the failure of a slice discarded while it ran", "slice", e.SliceID)
	return true
}

// nextRetry is the entry that is due first (-1: none) among those not
// running.
func (d *deadLetter) nextRetry() int {
	next := -1
	for i, e := range d.entries {
		if e.Reprocessing || e.NextRetryAt.IsZero() {
			continue
		}
		if next < 0 || e.NextRetryAt.Before(d.entries[next].NextRetryAt) {
			next = i
		}
	}
	return next
}

// retryBatch is how early a try may start with one that is due: the
// slices of one outage fail within seconds of each other, and one timer
// then wakes the workflow for all of them instead of one timer each. It
// stays below config.MinDeadLetterRetryWait, so a try that failed is never
// in the batch that started it: it waits at least the difference.
const retryBatch = 30 * time.Second

// retryDue starts the automatic tries that are due, with those due within
// retryBatch after one that is, oldest window first, while fewer than the
// platform's concurrency slices of this workflow run: a long outage must
// not come back as hundreds of slices at once. The rest stay due and
// start as running ones end. None starts once the run should continue as
// new: the next run starts them at once, and this one is not held by new
// slices.
func (d *deadLetter) retryDue(ctx workflow.Context) {
	if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		return
	}
	now := workflow.Now(ctx)
	if i := d.nextRetry(); i >= 0 && !d.entries[i].NextRetryAt.After(now) {
		d.timer.batchUntil = now.Add(retryBatch)
	}
	horizon := later(now, d.timer.batchUntil)
	for i := range d.entries {
		e := &d.entries[i]
		if len(d.running) >= max(d.platform.Concurrency, 1) {
			return
		}
		if e.Reprocessing || e.NextRetryAt.IsZero() || e.NextRetryAt.After(horizon) {
			continue
		}
		e.Reprocessing, e.NextRetryAt = true, time.Time{}
		e.AutoRetries++
		d.startSlice(ctx, e.SliceID, e.Start, e.End, true)
	}
}

// armTimer keeps the one timer on the earliest due entry: a new timer
// only when that time changes, none when nothing is due (an operator
// discarded or reprocessed the last scheduled entry) or when it waits for
// room (retryDue left it; a slice that ends wakes the workflow).
func (d *deadLetter) armTimer(ctx workflow.Context) {
	var at time.Time
	if i := d.nextRetry(); i >= 0 && d.entries[i].NextRetryAt.After(later(workflow.Now(ctx), d.timer.batchUntil)) {
		at = d.entries[i].NextRetryAt
	}
	if d.timer.future != nil && d.timer.at.Equal(at) {
		return
	}
	if d.timer.cancel != nil {
		d.timer.cancel()
	}
	d.timer.future, d.timer.at, d.timer.cancel = nil, time.Time{}, nil
	if at.IsZero() {
		return
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	d.timer.future = workflow.NewTimerWithOptions(timerCtx, at.Sub(workflow.Now(ctx)),
		workflow.TimerOptions{Summary: "next automatic dead-letter retry"})
	d.timer.at, d.timer.cancel = at, cancel
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// timerFired says whether the retry timer has fired; a wait condition.
func (d *deadLetter) timerFired() bool { return d.timer.future != nil && d.timer.future.IsReady() }

// details is the dead-letter workflow's current details for the Web UI:
// how many entries, which retry on their own and when, which wait for an
// operator.
func (d *deadLetter) details(s api.DeadLetterStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%d dead-lettered slice(s)** · %d running · %d retrying on their own · %d waiting for an operator",
		s.Entries, s.Reprocessing, s.Scheduled, s.Waiting)
	if i := d.nextRetry(); i >= 0 {
		e := d.entries[i]
		fmt.Fprintf(&b, "\n\n**Next automatic retry** %s: %s (try %d)", e.NextRetryAt.UTC().Format(uiTime), e.SliceID, e.AutoRetries+1)
	}
	fmt.Fprintf(&b, "\n\n**Automatic retry** %s", d.platform.DeadLetterRetry)
	if d.platform.DeadLetterRetry.On() {
		fmt.Fprintf(&b, " (causes: %s)", strings.Join(autoRetryTypes(), ", "))
	}
	if s.LastError != "" {
		fmt.Fprintf(&b, "\n\n**Last refused signal** %s", s.LastError)
	}
	return b.String()
}

// autoRetryTypes lists autoRetryCauses' types in a stable order: sorted,
// so the map's iteration order cannot reach workflow state or details.
//
//workflowcheck:ignore
func autoRetryTypes() []string {
	return slices.Sorted(maps.Keys(autoRetryCauses))
}
