package api

import (
	"time"
)

// Dead-letter signals and query.
const (
	// SignalDeadLetterAdd records a failed slice. Payload: DeadLetterEntry.
	SignalDeadLetterAdd = "add"
	// SignalDeadLetterReprocess runs one slice again, or all. Payload:
	// DeadLetterSelector. Automatic retries (DeadLetterEntry.NextRetryAt)
	// take the same path.
	SignalDeadLetterReprocess = "reprocess"
	// SignalDeadLetterDiscard drops one slice, or all, without running it. Payload: DeadLetterSelector.
	SignalDeadLetterDiscard = "discard"
	// SignalDeadLetterConfig updates the settings reprocessing uses.
	// Payload: Settings, read like SignalConfig's (identity ignored).
	SignalDeadLetterConfig = "config"
	// QueryDeadLetterList returns []DeadLetterEntry, oldest slice first.
	QueryDeadLetterList = "list"
	// QueryDeadLetterStatus returns DeadLetterStatus: counts and the last
	// signal the workflow refused.
	QueryDeadLetterStatus = "status"
)

// DeadLetterStatus summarises a dead-letter workflow for operators.
type DeadLetterStatus struct {
	Platform     string `json:"platform"`
	Entries      int    `json:"entries"`
	Reprocessing int    `json:"reprocessing"`
	// Rejected counts signals refused (malformed, unknown fields, a slice
	// of another platform); LastError says why the last one was.
	Rejected  int    `json:"rejected"`
	LastError string `json:"last_error,omitempty"`
	// AlertsPending counts alerts not yet delivered; AlertsDropped those
	// dropped at continue-as-new because too many waited.
	AlertsPending int   `json:"alerts_pending,omitempty"`
	AlertsDropped int64 `json:"alerts_dropped,omitempty"`
	// AutoRetry is "on" or "off" (the platform's dead_letter_retry);
	// Scheduled counts the entries with an automatic retry due, the
	// earliest at NextRetryAt; Waiting those that wait for an operator.
	AutoRetry   string    `json:"auto_retry,omitempty"`
	Scheduled   int       `json:"scheduled,omitempty"`
	NextRetryAt time.Time `json:"next_retry_at,omitzero"`
	Waiting     int       `json:"waiting_for_operator,omitempty"`
}

// DeadLetterInput starts or continues a dead-letter workflow.
type DeadLetterInput struct {
	Platform Settings          `json:"platform"`
	Entries  []DeadLetterEntry `json:"entries,omitempty"`
	// Rejected and LastError carry DeadLetterStatus across continue-as-new.
	Rejected  int    `json:"rejected,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Alerts are the previous run's undelivered alerts, sent again first.
	Alerts *AlertHandover `json:"alerts,omitempty"`
}

// DeadLetterEntry is one slice that exhausted its retries.
type DeadLetterEntry struct {
	SliceID   string    `json:"slice_id"`
	Platform  string    `json:"platform"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Error     string    `json:"error"`
	ErrorType string    `json:"error_type,omitempty"`
	// Attempts is how many times the failing page was tried in the last failure.
	Attempts      int       `json:"attempts"`
	Failures      int       `json:"failures"`
	FirstFailedAt time.Time `json:"first_failed_at"`
	LastFailedAt  time.Time `json:"last_failed_at"`
	Reprocessing  bool      `json:"reprocessing,omitempty"`
	// NextRetryAt is when the dead-letter workflow runs the slice again on
	// its own (the platform's dead_letter_retry schedule); zero while it
	// runs, and for a cause that waits for an operator. AutoRetries counts
	// the automatic tries started so far. Both are the workflow's own: an
	// add signal's values are ignored. Zero values are left out, so an
	// entry of before them is carried over continue-as-new as it was.
	NextRetryAt time.Time `json:"next_retry_at,omitzero"`
	AutoRetries int       `json:"auto_retries,omitempty"`
}

// DeadLetterSelector picks one slice by ID, or all of them.
type DeadLetterSelector struct {
	SliceID string `json:"slice_id,omitempty"`
	All     bool   `json:"all,omitempty"`
}

// Alert kinds.
const (
	AlertDeadLetter  = "dead_letter"
	AlertBreakerOpen = "breaker_open"
	AlertLag         = "lag"
	// AlertStalled: slices are in flight and none has finished for the
	// platform's stall_alert (a cursor making no progress).
	AlertStalled = "stalled"
)

// Alert is posted to the webhook (or logged).
type Alert struct {
	Kind     string    `json:"kind"`
	Platform string    `json:"platform"`
	Message  string    `json:"message"`
	SliceID  string    `json:"slice_id,omitempty"`
	At       time.Time `json:"at"`
	// Key identifies the alert so a receiver can drop duplicates of a retried POST.
	Key string `json:"key"`
}
