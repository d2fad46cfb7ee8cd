package api

import (
	"time"
)

// SliceInput starts a FetchSlice workflow for [Start, End). The request sent
// to the platform covers [Start - overlap, End).
type SliceInput struct {
	Platform Settings  `json:"platform"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Resweep marks a second fetch of a closed window; orders it inserts
	// are late arrivals.
	Resweep bool `json:"resweep,omitempty"`
	// LocalFirst makes each page's first attempt a local activity (retries
	// stay regular activities). Cursors and dead-letter workflows set it
	// from this version on; slices started before carry no such field and
	// page with regular activities only, as their histories recorded. The
	// input is the version, so a slice needs no GetVersion marker.
	LocalFirst bool `json:"local_first,omitempty"`
	// FailedAsError makes a dead-lettered slice end its workflow FAILED,
	// with an ErrSliceDeadLettered application error that carries the
	// SliceResult as its details, so the Web UI shows it as failed. Without
	// it the slice completes with Outcome "failed", as before. Cursors and
	// dead-letter workflows that understand the error set it; the input is
	// the version (workflows/versions.go).
	FailedAsError bool `json:"failed_as_error,omitempty"`
	// Handover is where the cursor's own fetch of this window stopped (an
	// inline live window, live_windows: inline): the slice goes on from
	// there instead of from page 1. Set only by cursors that fetch
	// inline; the input is the version.
	Handover *Handover `json:"handover,omitempty"`
}

// Handover is an inline fetch handed to a slice workflow: the page to go
// on from, its next-page token, that page's failed first attempt if it
// was tried (the slice goes on from it as after its own local first
// attempt, so attempts and waits are those of one page with the
// platform's retry policy and the platform is not asked once more), and
// the counts of the pages stored before it.
type Handover struct {
	Page    int            `json:"page"`
	Token   string         `json:"token,omitempty"`
	Attempt *FailedAttempt `json:"attempt,omitempty"`
	Counted SliceResult    `json:"counted"`
}

// FailedAttempt is a failed page attempt, as the error's type, clipped
// message, whether it may be retried, and the wait the platform asked for.
type FailedAttempt struct {
	Message      string        `json:"message"`
	Type         string        `json:"type,omitempty"`
	NonRetryable bool          `json:"non_retryable,omitempty"`
	RetryAfter   time.Duration `json:"retry_after,omitempty"`
}

// ErrSliceDeadLettered is the application error type a FetchSlice
// workflow fails with when it was asked to (SliceInput.FailedAsError) and
// its failure is recorded in the dead-letter workflow. Its details are
// the SliceResult, Outcome SliceFailed.
const ErrSliceDeadLettered = "SliceDeadLettered"

// Slice outcomes.
const (
	SliceCompleted = "completed"
	// SliceFailed: retries exhausted or a permanent error; the slice is in
	// the dead-letter workflow.
	SliceFailed = "failed"
	// SliceSplit: the window held more pages than max_pages; the caller runs
	// the two halves instead.
	SliceSplit = "split"
)

// SliceResult is what a slice reports: counts only, never order data.
type SliceResult struct {
	Outcome            string `json:"outcome"`
	Pages              int    `json:"pages"`
	OrdersFetched      int    `json:"orders_fetched"`
	OrdersInserted     int    `json:"orders_inserted"`
	OrdersUpdated      int    `json:"orders_updated"`
	OrdersUnchanged    int    `json:"orders_unchanged"`
	OrdersOutsideRange int    `json:"orders_outside_range"`
	// OrdersRejected are orders the platform sent that could not be stored
	// (no usable updated_at, ...): each rejected alone, the rest of its
	// page stored.
	OrdersRejected int `json:"orders_rejected,omitempty"`
	// OrdersFutureStamped are versions stamped further ahead of now than
	// the allowed skew: not stored, since they would pin the order.
	OrdersFutureStamped int `json:"orders_future_stamped,omitempty"`
	// BulkOperations counts the bulk queries the slice started (Shopify
	// bulk backfill); each stored result counts as one page.
	BulkOperations int `json:"bulk_operations,omitempty"`
	// StatedRate is the request rate the platform last stated in the
	// slice's answers (requests/s; 0: none stated).
	StatedRate float64 `json:"stated_rate,omitempty"`
	Error      string  `json:"error,omitempty"`
	ErrorType  string  `json:"error_type,omitempty"`
}
