package api

import (
	"time"

	"github.com/ordersync/ordersync/config"
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
	// SignalConfig replaces the platform's settings from the next slice on.
	// Payload: config.Platform as JSON (the platform's entry, merged).
	SignalConfig = "config"
	// QueryStatus returns CursorStatus.
	QueryStatus = "status"
)

// CursorInput starts a cursor, or continues one with its carried state.
type CursorInput struct {
	Platform config.Platform `json:"platform"`
	// Start is the resolved backfill start (UTC).
	Start time.Time `json:"start"`
	// State is set when the cursor continues as new.
	State *CursorState `json:"state,omitempty"`
	// MaxSlicesPerRun caps one run's history: after starting this many slices
	// the cursor drains and continues as new. It travels in the input (0:
	// the default) so that changing the default never changes how a
	// recorded history replays.
	MaxSlicesPerRun int `json:"max_slices_per_run,omitempty"`
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

// SliceRef is one slice the cursor tracks.
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

// CursorState is everything a cursor carries across continue-as-new.
type CursorState struct {
	// Next is the start of the next regular slice to schedule.
	Next time.Time `json:"next"`
	// Pending holds the regular slices not yet below the watermark, in time
	// order: running, done but held back, or waiting (split halves, retries).
	// The watermark is the start of the first one, or Next when empty.
	Pending []SliceRef `json:"pending"`
	// Reprocess holds requested re-fetches; they never move the watermark.
	Reprocess   []SliceRef `json:"reprocess,omitempty"`
	Paused      bool       `json:"paused"`
	PauseReason string     `json:"pause_reason,omitempty"`
	Counts      Counts     `json:"counts"`
	LastError   string     `json:"last_error,omitempty"`
	// Runs counts continue-as-new generations, for the status output.
	Runs int `json:"runs"`
	// Resweep holds windows waiting for their re-sweep (resweep_delay).
	Resweep []SliceRef `json:"resweep,omitempty"`
	// ConsecutiveFailures counts failed slices in a row, for the breaker.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// BreakerOpen is set when the breaker paused the cursor; resume closes it.
	BreakerOpen bool `json:"breaker_open,omitempty"`
	// LagAlerted is set while the lag is above lag_alert and the alert went out.
	LagAlerted bool `json:"lag_alerted,omitempty"`
	// CaughtUp is set once the backfill reached the present; the lag alert
	// only applies from then on (a backfill is behind by design).
	CaughtUp bool `json:"caught_up,omitempty"`
	// SpanIntervals is how many intervals the next backfill slice may
	// cover (adaptive slice sizing, backfill_max_span); 0 means one.
	SpanIntervals int `json:"span_intervals,omitempty"`
}

// Wait reasons reported in CursorStatus.Waiting.
const (
	WaitPaused      = "paused"
	WaitWindow      = "outside work window"
	WaitSettling    = "settling"
	WaitConcurrency = "concurrency limit"
	WaitDraining    = "draining before continue-as-new"
	WaitBreaker     = "circuit breaker open"
)

// CursorStatus answers QueryStatus.
type CursorStatus struct {
	Platform  string    `json:"platform"`
	Kind      string    `json:"kind"`
	Start     time.Time `json:"start"`
	Watermark time.Time `json:"watermark"`
	Next      time.Time `json:"next"`
	// AsOf is the workflow's clock when it last ran; lag is AsOf - Watermark.
	AsOf       time.Time  `json:"as_of"`
	LagSeconds float64    `json:"lag_seconds"`
	Paused     bool       `json:"paused"`
	Waiting    string     `json:"waiting,omitempty"`
	WaitUntil  time.Time  `json:"wait_until,omitzero"`
	InFlight   []SliceRef `json:"in_flight"`
	Queued     []SliceRef `json:"queued,omitempty"`
	Counts     Counts     `json:"counts"`
	LastError  string     `json:"last_error,omitempty"`
	Runs       int        `json:"runs"`
	Interval   string     `json:"interval"`
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
	Settings config.Platform `json:"settings"`
}
