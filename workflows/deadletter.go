package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/textclip"
)

// DeadLetter holds a platform's failed slices until they are reprocessed or
// discarded. It is started by the first failure (signal-with-start) and runs
// for as long as the platform exists.
func DeadLetter(ctx workflow.Context, in api.DeadLetterInput) error {
	d := &deadLetter{platform: withoutLegacyOptions(in.Platform), entries: in.Entries, running: map[string]workflow.ChildWorkflowFuture{},
		rejected: in.Rejected, lastError: in.LastError}
	return d.run(ctx, in.Alerts)
}

type deadLetter struct {
	platform api.Settings
	entries  []api.DeadLetterEntry // sorted by slice start
	running  map[string]workflow.ChildWorkflowFuture
	alerts   alertSender // alerts in flight (alerts.go)
	// rejected counts refused signals; lastError says why the last one was.
	rejected  int
	lastError string
	// timer wakes the workflow for the earliest automatic retry
	// (deadletter_retry.go).
	timer retryTimer
	// settled is set when a slice run ended: the loop wakes to arm the
	// timer for the entry's next try and to update the Web UI's details.
	settled bool
	// discarded holds running slices an operator discarded: the failure
	// such a slice records on its way out is not an entry again
	// (deadletter_retry.go, discardedWhileRunning).
	discarded map[string]bool
}

func (d *deadLetter) run(ctx workflow.Context, carriedAlerts *api.AlertHandover) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryDeadLetterList, func() ([]api.DeadLetterEntry, error) {
		return d.entries, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryDeadLetterStatus, d.status); err != nil {
		return err
	}
	// Entries carried over continue-as-new were not reprocessing any more
	// (the workflow drains first); clear the flag defensively.
	for i := range d.entries {
		d.entries[i].Reprocessing = false
	}
	add := workflow.GetSignalChannel(ctx, api.SignalDeadLetterAdd)
	reprocess := workflow.GetSignalChannel(ctx, api.SignalDeadLetterReprocess)
	discard := workflow.GetSignalChannel(ctx, api.SignalDeadLetterDiscard)
	cfg := workflow.GetSignalChannel(ctx, api.SignalDeadLetterConfig)
	channels := []workflow.ReceiveChannel{add, reprocess, discard, cfg}
	d.alerts.resume(ctx, bookkeepingActivityContext(ctx, d.platform), carriedAlerts, nil)
	d.scheduleAll(ctx)
	handle := func(ch workflow.ReceiveChannel, raw json.RawMessage) {
		switch ch {
		case add:
			var e api.DeadLetterEntry
			if err := decodeSignal(ctx, raw, &e, false); err != nil {
				d.refuse(ctx, "add signal", err)
				return
			}
			if err := d.checkEntry(e); err != nil {
				if e.SliceID == "" || workflow.GetVersion(ctx, versionStrictMessages, workflow.DefaultVersion, 1) >= 1 {
					d.refuse(ctx, "add signal", err)
					return
				}
			}
			if d.discardedWhileRunning(ctx, e) {
				return
			}
			d.add(ctx, e)
		case reprocess, discard:
			name := map[workflow.ReceiveChannel]string{reprocess: "reprocess", discard: "discard"}[ch]
			var sel api.DeadLetterSelector
			if err := decodeSignal(ctx, raw, &sel, true); err != nil {
				d.refuse(ctx, name+" signal", err)
				return
			}
			if ch == reprocess {
				d.reprocess(ctx, sel)
			} else {
				d.discard(sel)
			}
		case cfg:
			var p api.Settings
			err := decodeSignal(ctx, raw, &p, false)
			if err == nil && p.Name != d.platform.Name {
				err = fmt.Errorf("settings are for platform %q, this dead-letter workflow is %q", p.Name, d.platform.Name)
			}
			p = settingsFromMessage(d.platform, p)
			if err == nil {
				err = judgeSettings(ctx, p, validateSettings)
			}
			if err != nil {
				d.refuse(ctx, "config signal", err)
				return
			}
			d.platform = p
			d.scheduleAll(ctx)
		}
	}
	for {
		d.retryDue(ctx)
		d.armTimer(ctx)
		if st, err := d.status(); err == nil {
			workflow.SetCurrentDetails(ctx, d.details(st))
		}
		err := workflow.Await(ctx, func() bool {
			if d.timerFired() || d.settled {
				return true
			}
			for _, ch := range channels {
				if ch.Len() > 0 {
					return true
				}
			}
			// With alerts in flight and the handover not yet decided,
			// wake up to decide it.
			return workflow.GetInfo(ctx).GetContinueAsNewSuggested() && len(d.running) == 0 &&
				(d.alerts.settled() || d.alerts.undecided())
		})
		if err != nil {
			return err
		}
		if d.timerFired() {
			d.timer.future, d.timer.cancel = nil, nil // retryDue starts what is due
		}
		d.settled = false
		for _, ch := range channels {
			var raw json.RawMessage
			for ch.ReceiveAsync(&raw) {
				handle(ch, raw)
				raw = nil
			}
		}
		// Alerts in flight go to the next run (alerts.go); a history from
		// before versionAlertHandover waits for them.
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() && len(d.running) == 0 && d.alerts.mayContinue(ctx) {
			return workflow.NewContinueAsNewError(ctx, api.DeadLetterWorkflowType,
				api.DeadLetterInput{Platform: d.platform, Entries: d.entries, Rejected: d.rejected, LastError: d.lastError,
					Alerts: d.alerts.handOver(ctx)})
		}
	}
}

// checkEntry refuses an entry that does not belong here: another
// platform's slice would raise an alert under the wrong name and, on
// reprocess, run with this platform's settings.
func (d *deadLetter) checkEntry(e api.DeadLetterEntry) error {
	if e.SliceID == "" {
		return fmt.Errorf("entry has no slice_id")
	}
	// The signal is untrusted: what it quotes is clipped (refuse keeps it).
	if e.Platform != d.platform.Name {
		return fmt.Errorf("slice %s is for platform %q, this dead-letter workflow is %q", textclip.Value(e.SliceID), textclip.Value(e.Platform), d.platform.Name)
	}
	platform, start, end, err := api.ParseSliceWorkflowID(e.SliceID)
	switch {
	case err != nil:
		return errors.New(textclip.Message(err.Error()))
	case platform != d.platform.Name:
		return fmt.Errorf("slice %s belongs to platform %q, this dead-letter workflow is %q", textclip.Value(e.SliceID), textclip.Value(platform), d.platform.Name)
	case !start.Equal(e.Start.Truncate(time.Microsecond)) || !end.Equal(e.End.Truncate(time.Microsecond)):
		return fmt.Errorf("slice %s does not match its window [%s, %s)", textclip.Value(e.SliceID), e.Start.Format(time.RFC3339Nano), e.End.Format(time.RFC3339Nano))
	}
	return nil
}

// refuse records a signal the workflow would not apply, for the status
// query and the log; the signal changes nothing else.
func (d *deadLetter) refuse(ctx workflow.Context, what string, err error) {
	d.rejected++
	d.lastError = refusal(what, err)
	workflow.GetLogger(ctx).Error("dead-letter signal refused", "platform", d.platform.Name, "error", d.lastError)
}

func (d *deadLetter) status() (api.DeadLetterStatus, error) {
	s := api.DeadLetterStatus{Platform: d.platform.Name, Entries: len(d.entries), Rejected: d.rejected, LastError: d.lastError,
		AlertsPending: d.alerts.pending(), AlertsDropped: d.alerts.dropped}
	s.AutoRetry = "off"
	if d.platform.DeadLetterRetry.On() {
		s.AutoRetry = "on"
	}
	for _, e := range d.entries {
		switch {
		case e.Reprocessing:
			s.Reprocessing++
		case !e.NextRetryAt.IsZero():
			s.Scheduled++
			if s.NextRetryAt.IsZero() || e.NextRetryAt.Before(s.NextRetryAt) {
				s.NextRetryAt = e.NextRetryAt
			}
		default:
			s.Waiting++
		}
	}
	return s, nil
}

// Bounds on the entries, which continue-as-new carries in one payload
// under Temporal's 2 MB limit (three entries of ~934 KB each once made
// every continue-as-new fail, and with it every query): an entry's error
// is clipped to textclip.MessageMax; past deadLetterBudget the errors are
// shortened to shortEntryError, oldest slices first; a new slice past
// maxDeadLetterEntries is kept by merging two neighbouring entries into one
// window (coalesce), so 1,000 entries of at most ~1 KB each stay under
// 1 MiB and no failed window is dropped.
const (
	maxDeadLetterEntries = 1000
	deadLetterBudget     = 1 << 20
	shortEntryError      = 256
	shortEntryErrorType  = 64
	// entryOverhead bounds an entry's JSON besides its strings: keys,
	// five timestamps, counts (deadletter_bounds_internal_test.go checks
	// it; next_retry_at and auto_retries took it from 400).
	entryOverhead = 480
)

// entrySize bounds an entry's JSON-encoded size.
func entrySize(e api.DeadLetterEntry) int {
	return entryOverhead + textclip.JSONLen(e.SliceID) + textclip.JSONLen(e.Platform) +
		textclip.JSONLen(e.Error) + textclip.JSONLen(e.ErrorType)
}

// bound shortens entries' errors, oldest slices first, until the entries
// fit deadLetterBudget. It changes state only, no command.
func (d *deadLetter) bound() {
	total := 0
	for _, e := range d.entries {
		total += entrySize(e)
	}
	for i := range d.entries {
		if total <= deadLetterBudget {
			return
		}
		e := &d.entries[i]
		before := entrySize(*e)
		e.Error, e.ErrorType = textclip.Clip(e.Error, shortEntryError), textclip.Clip(e.ErrorType, shortEntryErrorType)
		total -= before - entrySize(*e)
	}
}

// add records a failure, or another failure of a known slice, and alerts.
// Its text is clipped; once the workflow holds maxDeadLetterEntries, a new
// slice is kept by merging the two closest neighbouring entries into one
// window (coalesce, versionBoundedText), so no failed window ever leaves
// the dead-letter workflow unrecorded.
func (d *deadLetter) add(ctx workflow.Context, e api.DeadLetterEntry) {
	defer d.bound() // entries carried from a run of before are bounded too
	e.Error, e.ErrorType = textclip.Message(e.Error), textclip.Value(e.ErrorType)
	i := d.index(e.SliceID)
	merged := false
	if i < 0 && len(d.entries) >= maxDeadLetterEntries {
		merged = d.fit(ctx, maxDeadLetterEntries-1)
	}
	// The schedule is the workflow's own, whatever the signal says.
	e.NextRetryAt, e.AutoRetries = time.Time{}, 0
	alert := true
	if i >= 0 {
		old := d.entries[i]
		e.FirstFailedAt = old.FirstFailedAt
		e.Failures = old.Failures + 1
		e.Reprocessing = old.Reprocessing
		e.AutoRetries = old.AutoRetries
		alert = d.alertsAgain(ctx, old, e)
		d.schedule(ctx, &e)
		d.entries[i] = e
	} else {
		e.Failures = 1
		d.schedule(ctx, &e)
		d.entries = append(d.entries, e)
		sort.SliceStable(d.entries, func(a, b int) bool { return d.entries[a].Start.Before(d.entries[b].Start) })
	}
	if !alert {
		return
	}
	a := api.Alert{
		Kind:     api.AlertDeadLetter,
		Platform: e.Platform,
		SliceID:  e.SliceID,
		Message:  fmt.Sprintf("slice %s of %s failed after %d attempt(s): %s", e.SliceID, e.Platform, e.Attempts, e.Error),
		At:       e.LastFailedAt,
		Key:      fmt.Sprintf("%s/%s/%d", api.AlertDeadLetter, e.SliceID, e.Failures),
	}
	if merged {
		a.Message += fmt.Sprintf(" (the dead-letter workflow holds %d entries, its limit: two neighbouring entries were merged into one window)", maxDeadLetterEntries)
	}
	d.alerts.send(ctx, bookkeepingActivityContext(ctx, d.platform), a, nil)
}

// fit merges neighbouring entries (coalesce) until the workflow holds at
// most limit entries or no pair is free to merge, and says whether it
// merged any. A failed slice past the limit and a dead-lettered window that
// split in two both go through it. Asked lazily (versionBoundedText), only
// when over the limit.
func (d *deadLetter) fit(ctx workflow.Context, limit int) bool {
	if len(d.entries) <= limit || workflow.GetVersion(ctx, versionBoundedText, workflow.DefaultVersion, 1) < 1 {
		return false
	}
	merged := false
	for len(d.entries) > limit && d.coalesce(ctx) {
		merged = true
	}
	return merged
}

// coalesce makes room for one more entry by merging the two neighbouring
// entries (by start) with the smallest gap between them, neither of them
// running, into one entry for the window that covers both. Fetching the gap
// again is harmless (the store keeps the newest version), losing a window
// is not. It says whether it merged; with every pair running it does not,
// and the workflow holds one entry more than its limit for a while.
func (d *deadLetter) coalesce(ctx workflow.Context) bool {
	best := -1
	var bestGap time.Duration
	for j := 0; j+1 < len(d.entries); j++ {
		a, b := d.entries[j], d.entries[j+1]
		if a.Reprocessing || b.Reprocessing {
			continue
		}
		if gap := b.Start.Sub(a.End); best < 0 || gap < bestGap {
			best, bestGap = j, gap
		}
	}
	if best < 0 {
		return false
	}
	a, b := d.entries[best], d.entries[best+1]
	m := a
	if b.End.After(m.End) {
		m.End = b.End
	}
	m.SliceID = d.sliceID(ctx, m.Start, m.End)
	m.Platform = d.platform.Name
	m.Error = textclip.Message(fmt.Sprintf("merged %s and %s: %s", a.SliceID, b.SliceID, b.Error))
	m.ErrorType = mergedErrorType(a.ErrorType, b.ErrorType)
	m.Attempts = max(a.Attempts, b.Attempts)
	m.Failures = a.Failures + b.Failures
	if b.FirstFailedAt.Before(m.FirstFailedAt) {
		m.FirstFailedAt = b.FirstFailedAt
	}
	if b.LastFailedAt.After(m.LastFailedAt) {
		m.LastFailedAt = b.LastFailedAt
	}
	m.AutoRetries = min(a.AutoRetries, b.AutoRetries)
	m.NextRetryAt = time.Time{}
	if autoRetryable(m.ErrorType) {
		m.NextRetryAt = earliest(a.NextRetryAt, b.NextRetryAt)
	}
	d.entries = append(d.entries[:best], append([]api.DeadLetterEntry{m}, d.entries[best+2:]...)...)
	return true
}

// mergedErrorType is the cause a merged entry is judged by: one that waits
// for an operator wins, so merging never turns a permanent failure into an
// automatic retry.
func mergedErrorType(a, b string) string {
	if !autoRetryable(a) {
		return a
	}
	return b
}

// earliest is the earlier of two due times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

func (d *deadLetter) reprocess(ctx workflow.Context, sel api.DeadLetterSelector) {
	for i := range d.entries {
		e := &d.entries[i]
		if e.Reprocessing || !(sel.All || sel.SliceID == e.SliceID) {
			continue
		}
		// An operator's request takes the entry off the automatic schedule;
		// a new failure puts it back on.
		e.Reprocessing, e.NextRetryAt = true, time.Time{}
		d.startSlice(ctx, e.SliceID, e.Start, e.End, false)
	}
}

// startSlice runs the slice again under its own deterministic ID, on an
// operator's request or as an automatic retry (auto); success removes the
// entry, a new failure updates it through the add signal.
func (d *deadLetter) startSlice(ctx workflow.Context, id string, start, end time.Time, auto bool) {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		TaskQueue:             d.platform.TaskQueue,
		Priority:              fairness.Priority(d.platform.Name),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.Platform.ValueSet(d.platform.Name),
			searchattr.SliceStart.ValueSet(start),
			searchattr.SliceState.ValueSet(searchattr.StateRunning),
		),
	}
	// User metadata is not compared on replay (versions.go, "Not versioned").
	kind, why := "dead-letter reprocess", "A dead-lettered slice run again on request: success removes it from the dead-letter workflow, a new failure updates its entry."
	if auto {
		kind, why = "dead-letter automatic retry", "A dead-lettered slice with a transient cause run again on the platform's dead_letter_retry schedule: success removes it from the dead-letter workflow, a new failure updates its entry and sets its next try."
	}
	opts.StaticSummary = sliceSummary(kind, start, end)
	opts.StaticDetails = sliceStaticDetails(kind, d.platform.Name, start, end, d.platform.Overlap.D(), why)
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), api.SliceWorkflowType,
		api.SliceInput{Platform: d.platform, Start: start, End: end, LocalFirst: true, FailedAsError: true})
	d.running[id] = f
	workflow.Go(ctx, func(ctx workflow.Context) {
		// A slice that failed again ends FAILED (FailedAsError) with its
		// result: the same outcome as a "failed" result, not "could not run".
		res, err := sliceOutcome(ctx, f)
		delete(d.running, id)
		d.settled = true
		if err != nil || res.Outcome != api.SliceFailed {
			delete(d.discarded, id) // no failure of it is on its way
		}
		i := d.index(id)
		if i < 0 {
			return // discarded while it ran
		}
		e := &d.entries[i]
		switch {
		case err != nil:
			e.Reprocessing = false
			e.Error = textclip.Message("reprocess could not run: " + err.Error())
			defer d.bound()
			d.schedule(ctx, e)
		case res.Outcome == api.SliceCompleted:
			d.entries = append(d.entries[:i], d.entries[i+1:]...)
		case res.Outcome == api.SliceSplit:
			mid := e.Start.Add(e.End.Sub(e.Start) / 2).Truncate(time.Microsecond)
			first, second := *e, *e
			first.SliceID, first.End = d.sliceID(ctx, e.Start, mid), mid
			second.SliceID, second.Start = d.sliceID(ctx, mid, e.End), mid
			d.entries = append(d.entries[:i], append([]api.DeadLetterEntry{first, second}, d.entries[i+1:]...)...)
			d.startSlice(ctx, first.SliceID, first.Start, first.End, auto)
			d.startSlice(ctx, second.SliceID, second.Start, second.End, auto)
			d.fit(ctx, maxDeadLetterEntries) // the halves run; merging waits for free pairs
			d.bound()
		default: // failed again: the add signal has updated the entry
			e.Reprocessing = false
			if e.NextRetryAt.IsZero() {
				d.schedule(ctx, e) // in case the add signal never came
			}
		}
	})
}

func (d *deadLetter) discard(sel api.DeadLetterSelector) {
	kept := d.entries[:0]
	for _, e := range d.entries {
		if sel.All || sel.SliceID == e.SliceID {
			if _, running := d.running[e.SliceID]; running {
				if d.discarded == nil {
					d.discarded = map[string]bool{}
				}
				d.discarded[e.SliceID] = true
			}
			continue
		}
		kept = append(kept, e)
	}
	d.entries = kept
}

func (d *deadLetter) index(id string) int {
	for i, e := range d.entries {
		if e.SliceID == id {
			return i
		}
	}
	return -1
}

// sliceID names a split half. Workflows that split before versionSliceIDLayout
// named halves in the v0.1 layout; the version is asked only where the two
// layouts differ, so most splits record no marker.
func (d *deadLetter) sliceID(ctx workflow.Context, start, end time.Time) string {
	id, v01 := api.SliceWorkflowID(d.platform.Name, start, end), api.SliceWorkflowIDV01(d.platform.Name, start, end)
	if id == v01 || workflow.GetVersion(ctx, versionSliceIDLayout, workflow.DefaultVersion, 1) == 1 {
		return id
	}
	return v01
}
