package api

import (
	"time"

	"github.com/ordersync/ordersync/internal/slicequeue"
)

// Cursor signals and updates. Each name is both a signal (fire and forget,
// works from `temporal workflow signal`) and an update (the caller gets an
// answer, and invalid input is rejected before it reaches history).
const (
	// SignalPause stops new slices from starting; in-flight slices finish.
	// Payload: PauseRequest (optional).
	SignalPause = "pause"
	// SignalResume lets a paused cursor continue (and closes a tripped breaker).
	SignalResume = "resume"
	// SignalReprocess fetches a range again. Payload: ReprocessRequest.
	SignalReprocess = "reprocess"
	// SignalConfig replaces the platform's tuning from the next slice on.
	// Payload: Settings as JSON. A payload that still carries the platform's
	// identity (endpoint, credentials, options, allow_plaintext: old CLIs,
	// the whole platform entry sent by hand) is accepted with those fields
	// ignored: identity is the registry's, never a message's. Any other
	// unknown field is refused, by name.
	SignalConfig = "config"
	// QueryStatus returns CursorStatus.
	QueryStatus = "status"
)

// CursorInput starts a cursor, or continues one with its carried state.
type CursorInput struct {
	Platform Settings `json:"platform"`
	// Start is the resolved backfill start (UTC).
	Start time.Time `json:"start"`
	// State is set when the cursor continues as new.
	State *CursorState `json:"state,omitempty"`
	// MaxSlicesPerRun caps one run's history: after starting this many slices
	// the cursor drains and continues as new. It travels in the input (0:
	// the default) so that changing the default never changes how a
	// recorded history replays.
	MaxSlicesPerRun int `json:"max_slices_per_run,omitempty"`
	// Alerts are the previous run's undelivered alerts, sent again first.
	Alerts *AlertHandover `json:"alerts,omitempty"`
}

// PauseRequest is the optional payload of SignalPause.
type PauseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ReprocessRequest asks for [From, To) to be fetched again.
type ReprocessRequest struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Force runs the range even outside the platform's work windows.
	Force bool `json:"force,omitempty"`
}

// Range is a half-open time range [Start, End).
type Range struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// SliceRef is one slice in the v0.1 form of the carried state (SlicesV01):
// its status as a mix of flags. Today's cursor reads it from runs that
// continued as new under v0.1 and writes it beside Slices for v0.1 workers
// during an upgrade; status shows slices as SliceView.
type SliceRef struct {
	ID    string    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Force ignores work windows (reprocess with force).
	Force bool `json:"force,omitempty"`
	// Running is true once the child has been started.
	Running bool `json:"running"`
	// Done is true once a regular slice completed or was dead-lettered but
	// an earlier slice still holds the watermark back.
	Done bool `json:"done,omitempty"`
	// NotBefore delays a retry of a slice whose child could not run, and a
	// re-sweep until its window is resweep_delay old.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Resweep marks the second fetch of a closed window.
	Resweep bool `json:"resweep,omitempty"`
	// StartedAt is when the cursor last started this slice's child.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Counts accumulate over the cursor's life, across continue-as-new.
type Counts struct {
	SlicesCompleted    int64 `json:"slices_completed"`
	SlicesFailed       int64 `json:"slices_failed"`
	SlicesSplit        int64 `json:"slices_split"`
	Pages              int64 `json:"pages"`
	OrdersFetched      int64 `json:"orders_fetched"`
	OrdersInserted     int64 `json:"orders_inserted"`
	OrdersUpdated      int64 `json:"orders_updated"`
	OrdersUnchanged    int64 `json:"orders_unchanged"`
	OrdersOutsideRange int64 `json:"orders_outside_range"`
	// OrdersRejected and OrdersFutureStamped count platform data that was
	// not stored: see api.SliceResult.
	OrdersRejected      int64 `json:"orders_rejected,omitempty"`
	OrdersFutureStamped int64 `json:"orders_future_stamped,omitempty"`
	// LateArrivals are orders first seen by a re-sweep: the platform showed
	// them later than the overlap allowed for. Non-zero means the overlap is
	// too small for this platform.
	LateArrivals int64 `json:"late_arrivals"`
	Resweeps     int64 `json:"resweeps"`
}

// CursorState is everything a cursor carries across continue-as-new: its
// record (pause, counts, errors, breaker, lag alert) and its slices. It is
// not the operators' view: that is CursorStatus.
//
// The slices travel as Slices from v0.2 on. A run that continued as new
// under v0.1 carries only the v0.1 form (SlicesV01), which today's cursor
// reads when Slices is absent; and today's cursor writes the v0.1 form
// beside Slices, so that a v0.1 worker that picks up the next run during a
// rolling upgrade still finds its slices. The v0.1 form can stop being
// written once no v0.1 worker runs (see workflows/versions.go).
type CursorState struct {
	CursorRecord
	// Slices is the slice lifecycle (internal/slicequeue): Next, the
	// backfill span, whether the backfill caught up, and every slice still
	// tracked, with its kind and state.
	Slices *slicequeue.Snapshot `json:"slices,omitempty"`
	SlicesV01
}

// CursorRecord is the carried state that is not about slices.
type CursorRecord struct {
	Paused      bool   `json:"paused"`
	PauseReason string `json:"pause_reason,omitempty"`
	Counts      Counts `json:"counts"`
	LastError   string `json:"last_error,omitempty"`
	// Runs counts continue-as-new generations, for the status output.
	Runs int `json:"runs"`
	// ConsecutiveFailures counts failed slices in a row, for the breaker.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// BreakerOpen is set when the breaker paused the cursor; resume closes it.
	BreakerOpen bool `json:"breaker_open,omitempty"`
	// LagAlerted is set while the lag is above lag_alert and the alert went out.
	LagAlerted bool `json:"lag_alerted,omitempty"`
	// ProgressAt is when the cursor last made progress: a slice reported,
	// or nothing was in flight (waiting for time is not stalling).
	// StallAlerted is set while no slice has reported for stall_alert
	// since then and the alert went out.
	ProgressAt   time.Time `json:"progress_at,omitzero"`
	StallAlerted bool      `json:"stall_alerted,omitempty"`
	// StatedRate is the request rate (per second) the platform last stated
	// in a slice's answers, the limit requests are paced to when it is
	// below rate_limit.rps; 0 until it states one.
	StatedRate float64 `json:"stated_rate,omitempty"`
}

// SlicesV01 is the v0.1 form of the carried slices: three lists of flagged
// SliceRefs.
type SlicesV01 struct {
	// Next is the start of the next regular slice to schedule.
	Next time.Time `json:"next"`
	// Pending holds the regular slices not yet below the watermark, in time
	// order: running, done but held back, or waiting (split halves, retries).
	// The watermark is the start of the first one, or Next when empty.
	Pending []SliceRef `json:"pending"`
	// Reprocess holds requested re-fetches; they never move the watermark.
	Reprocess []SliceRef `json:"reprocess,omitempty"`
	// Resweep holds windows waiting for their re-sweep (resweep_delay).
	Resweep []SliceRef `json:"resweep,omitempty"`
	// CaughtUp is set once the backfill reached the present; the lag alert
	// only applies from then on (a backfill is behind by design).
	CaughtUp bool `json:"caught_up,omitempty"`
	// SpanIntervals is how many intervals the next backfill slice may
	// cover (adaptive slice sizing, backfill_max_span); 0 means one.
	SpanIntervals int `json:"span_intervals,omitempty"`
}

// Wait reasons reported in CursorStatus.Waiting: why the cursor starts no
// more slices now. Every wait has one; WaitUntil says until when, where
// that is known.
const (
	// WaitPaused: paused by an operator (": <reason>" follows).
	WaitPaused = "paused"
	// WaitBreaker: the circuit breaker paused the cursor (": <why>" follows).
	WaitBreaker = "circuit breaker open"
	// WaitDraining: the cursor waits for its slices before it continues as new.
	WaitDraining = "draining before continue-as-new"
	// WaitConcurrency: concurrency slices run; the next starts when one ends.
	WaitConcurrency = "concurrency limit"
	// WaitWindow: outside the platform's work windows, until the next opens.
	WaitWindow = "outside work window"
	// WaitSettling: the next slice starts once its end is settle old.
	WaitSettling = "settling"
	// WaitRetry: a slice whose child ended without a report starts again
	// after a back-off.
	WaitRetry = "retry back-off"
	// WaitResweep: the next slice to start is a re-sweep that is not due yet.
	WaitResweep = "re-sweep pending"
	// WaitStarting: slices may start; the cursor starts them on its next
	// turn (seen only in the answer to a message that made room).
	WaitStarting = "starting slices"
)

// SliceView is one slice as status shows it.
type SliceView struct {
	ID    string    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Kind is regular (moves the watermark), reprocess or resweep.
	Kind string `json:"kind"`
	// State is running, queued, or waiting (queued, not before NotBefore).
	State string `json:"state"`
	// NotBefore is when a queued slice may start: the back-off of a retry,
	// a re-sweep's due time.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Force runs the slice outside the work windows.
	Force bool `json:"force,omitempty"`
	// Resweep marks a re-sweep's fetch: what it stores are late arrivals.
	Resweep bool `json:"resweep,omitempty"`
	// StartedAt is when the slice's child last started.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Slice view states.
const (
	SliceRunning = "running"
	SliceQueued  = "queued"
	SliceWaiting = "waiting"
)

// CursorStatus answers QueryStatus.
type CursorStatus struct {
	Platform  string    `json:"platform"`
	Kind      string    `json:"kind"`
	Start     time.Time `json:"start"`
	Watermark time.Time `json:"watermark"`
	Next      time.Time `json:"next"`
	// AsOf is the workflow's clock when it last ran; lag is AsOf - Watermark.
	AsOf       time.Time `json:"as_of"`
	LagSeconds float64   `json:"lag_seconds"`
	Paused     bool      `json:"paused"`
	// PlatformState is the cursor's state in one word, the value of its
	// PlatformState search attribute: backfilling, caught_up, paused or
	// breaker_open (empty from workers older than that attribute).
	PlatformState string `json:"platform_state,omitempty"`
	// Waiting says why the cursor starts no more slices now (a Wait
	// reason), and WaitUntil until when, where that is known.
	Waiting   string    `json:"waiting,omitempty"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
	// InFlight are the running slices and Queued those waiting to start,
	// in the order they start. Finished slices held behind an unfinished
	// one are in neither.
	InFlight  []SliceView `json:"in_flight"`
	Queued    []SliceView `json:"queued,omitempty"`
	Counts    Counts      `json:"counts"`
	LastError string      `json:"last_error,omitempty"`
	Runs      int         `json:"runs"`
	Interval  string      `json:"interval"`
	// StatedRate is the request rate the platform last stated
	// (CursorRecord.StatedRate); 0 until it states one.
	StatedRate float64 `json:"stated_rate,omitempty"`
	// SliceSpan is how long the next backfill slice may be (adaptive
	// slice sizing); one interval once the cursor follows the present.
	SliceSpan           string `json:"slice_span,omitempty"`
	TaskQueue           string `json:"task_queue"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	BreakerOpen         bool   `json:"breaker_open"`
	// CaughtUp is set once the backfill reached the present: from then on a
	// growing lag is a problem, not the backfill's normal state.
	CaughtUp bool `json:"caught_up"`
	// Settings are the platform settings the cursor runs with now.
	Settings Settings `json:"settings"`
	// AlertsPending counts alerts not yet delivered (a webhook down keeps
	// them pending); AlertsDropped those dropped at continue-as-new over
	// the cursor's life because too many waited (workflows, alerts.go).
	AlertsPending int   `json:"alerts_pending,omitempty"`
	AlertsDropped int64 `json:"alerts_dropped,omitempty"`
	// Pacing says which interval the cursor polls at and why; set only
	// for a platform with webhook_interval (hybrid pacing).
	Pacing *Pacing `json:"pacing,omitempty"`
}

// Pacing is the hybrid pacing of a cursor whose platform sets
// webhook_interval: it polls every webhook_interval while the account's
// webhooks are live (an event accepted within LiveFor), else every interval.
type Pacing struct {
	// Interval is the interval in force: webhook_interval or interval.
	Interval string `json:"interval"`
	// Live says the webhooks were live at the last check.
	Live bool `json:"live"`
	// Reason says why, in words ("webhooks live: last event ... ").
	Reason string `json:"reason"`
	// LastEventAt is the last accepted webhook event the check saw (zero:
	// none ever), Events how many were accepted, CheckedAt when the cursor
	// last asked (zero: not yet, the next slice is not due).
	LastEventAt time.Time `json:"last_event_at,omitzero"`
	Events      int64     `json:"events,omitempty"`
	CheckedAt   time.Time `json:"checked_at,omitzero"`
	// LiveFor is how recent the last event must be to count as live.
	LiveFor string `json:"live_for"`
}

// WebhookActivity is what the cursor's pacing check learns from the store
// (activity WebhookActivity): the time of the platform's last accepted
// webhook event and how many were accepted. Counts and times only, no
// order data.
type WebhookActivity struct {
	LastEventAt time.Time `json:"last_event_at,omitzero"`
	Events      int64     `json:"events,omitempty"`
}
