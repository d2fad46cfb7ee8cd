package api

import "time"

// ReconcileWorkflowType is the registered name of a platform's count
// reconciliation: for each closed window it compares the platform's count
// of orders whose current update time falls in it with the store's, and
// has the cursor reprocess a window that differs.
const ReconcileWorkflowType = "Reconcile"

// ReconcileWorkflowID is the ID of a platform's reconciliation:
// reconcile/<platform>, one per platform.
func ReconcileWorkflowID(platform string) string { return "reconcile/" + platform }

// QueryReconcile returns ReconcileStatus: the settings in force, where
// the checks stand and the last results.
const QueryReconcile = "reconcile"

// SignalReconcileConfig replaces the reconciliation's settings (Settings
// as JSON, as the cursor's `config`); reconcile: false ends it.
const SignalReconcileConfig = "config"

// SignalReconcileCheck asks for one window to be checked now, beside the
// grid (`ordersync reconcile run`). Payload: Range ({"start","end"}), at
// most MaxReconcileCheckSpan long; the cursor must have passed its end, as
// for every check. At most MaxReconcileChecksQueued wait; more are dropped.
const SignalReconcileCheck = "check"

// Bounds of a requested check.
const (
	MaxReconcileCheckSpan    = 7 * 24 * time.Hour
	MaxReconcileChecksQueued = 20
)

// ReconcileManual is the check of a window asked for by SignalReconcileCheck.
const ReconcileManual = "manual"

// AlertReconcile: a window's count still differs after its reprocess
// (once per window and check).
const AlertReconcile = "reconcile"

// ReconcilePriority is the Temporal priority key of reconciliation's
// tasks: after backfill (BackfillPriority), since a count is worth least
// while the cursor still has pages to fetch.
const ReconcilePriority = 4

// Checks of a window.
const (
	// ReconcileFirst: once the window settled and the cursor passed it.
	ReconcileFirst = "first"
	// ReconcileRecheck: reconcile_recheck after the window's end.
	ReconcileRecheck = "recheck"
)

// Outcomes of a check.
const (
	// ReconcileMatch: the counts agree.
	ReconcileMatch = "match"
	// ReconcileReprocessing: the platform counted more; the window is
	// being fetched again (a result seen only while that runs).
	ReconcileReprocessing = "reprocessing"
	// ReconcileClosed: the platform counted more, and after the reprocess
	// the counts agree.
	ReconcileClosed = "closed"
	// ReconcileOpen: the counts still differ after the reprocess: alerted.
	ReconcileOpen = "open"
	// ReconcileStoreAhead: the store holds more current versions in the
	// window than the platform counts (orders updated again since, whose
	// newer versions the cursor has not reached, or deleted on the
	// platform): reprocessing the window cannot change that.
	ReconcileStoreAhead = "store_ahead"
)

// ReconcileInput starts a Reconcile workflow, or continues one. The
// platform travels by reference (Settings: name, task queue, tuning).
type ReconcileInput struct {
	Platform Settings `json:"platform"`
	// Start is the cursor's resolved backfill start: the first window
	// checked is the first whole one after it.
	Start time.Time `json:"start"`
	// State is set when the workflow continues as new.
	State *ReconcileState `json:"state,omitempty"`
	// Alerts are the previous run's undelivered alerts.
	Alerts *AlertHandover `json:"alerts,omitempty"`
}

// ReconcileState is what a Reconcile workflow carries across
// continue-as-new.
type ReconcileState struct {
	// NextFirst is the start of the next window to check first;
	// NextRecheck the start of the next window to check again (windows
	// are contiguous, so two instants say which are done).
	NextFirst   time.Time `json:"next_first"`
	NextRecheck time.Time `json:"next_recheck"`
	// Results are the last checks, oldest first, at most a few dozen.
	Results []ReconcileResult `json:"results,omitempty"`
	// Requested are the windows asked for by SignalReconcileCheck, not
	// checked yet, oldest first.
	Requested []Range         `json:"requested,omitempty"`
	Counts    ReconcileCounts `json:"counts"`
	// LastError is the last failure to count, clipped.
	LastError string `json:"last_error,omitempty"`
	Runs      int    `json:"runs"`
}

// ReconcileCounts accumulate over the workflow's life.
type ReconcileCounts struct {
	Checks      int64 `json:"checks"`
	Differences int64 `json:"differences"`
	Reprocessed int64 `json:"reprocessed"`
	Closed      int64 `json:"closed"`
	Open        int64 `json:"open"`
	StoreAhead  int64 `json:"store_ahead"`
}

// ReconcileResult is one check of one window: counts and times only.
type ReconcileResult struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Check string    `json:"check"`
	// PlatformCount and Precision ("exact", "at_least") are the
	// platform's count; StoreCount the store's current versions.
	PlatformCount int    `json:"platform_count"`
	Precision     string `json:"precision"`
	StoreCount    int    `json:"store_count"`
	Outcome       string `json:"outcome"`
	// Reprocessed: the cursor was asked to fetch the window again; the
	// recounts are the counts after it.
	Reprocessed     bool      `json:"reprocessed,omitempty"`
	RecountPlatform int       `json:"recount_platform,omitempty"`
	RecountStore    int       `json:"recount_store,omitempty"`
	CheckedAt       time.Time `json:"checked_at"`
}

// Wait reasons of ReconcileStatus.Waiting.
const (
	// ReconcileWaitDue: the next window is not due yet.
	ReconcileWaitDue = "next window not due"
	// ReconcileWaitCursor: the cursor has not passed the window (or is
	// paused, or not running): a window is never reprocessed before it.
	ReconcileWaitCursor = "cursor not past the window"
	// ReconcileWaitRate: waiting for the platform's rate.
	ReconcileWaitRate = "platform rate"
	// ReconcileWaitReprocess: a reprocess runs; its recount follows.
	ReconcileWaitReprocess = "reprocess running"
	// ReconcileWaitRetry: the count failed; it is tried again.
	ReconcileWaitRetry = "retry after a failed count"
)

// ReconcileStatus answers QueryReconcile.
type ReconcileStatus struct {
	Platform string `json:"platform"`
	Kind     string `json:"kind"`
	// Window and Recheck are the settings in force ("0s": no recheck).
	Window      string    `json:"window"`
	Recheck     string    `json:"recheck"`
	NextFirst   time.Time `json:"next_first"`
	NextRecheck time.Time `json:"next_recheck"`
	Waiting     string    `json:"waiting,omitempty"`
	WaitUntil   time.Time `json:"wait_until,omitzero"`
	// Requested are the windows asked for that wait for their check.
	Requested []Range         `json:"requested,omitempty"`
	Counts    ReconcileCounts `json:"counts"`
	// Results are the last checks, newest last.
	Results   []ReconcileResult `json:"results,omitempty"`
	LastError string            `json:"last_error,omitempty"`
	Runs      int               `json:"runs"`
}
