package store

import (
	"context"
	"fmt"
	"time"
)

// Reconciliation is what count reconciliation asks of the store: the
// number of current versions per platform and window, and the results it
// keeps for `ordersync reconcile report` (table reconcile_results,
// migration 0011). The count reads index orders_by_updated
// (platform, updated_at, order_id) alone: it is a range scan of the
// window's entries, not of the platform's orders.
type Reconciliation interface {
	// CountUpdated counts the orders of platform whose stored (current)
	// version has updated_at in [from, to).
	CountUpdated(ctx context.Context, platform string, from, to time.Time) (int, error)
	// SaveReconcileResult keeps r, replacing the result of the same
	// platform, window and check.
	SaveReconcileResult(ctx context.Context, r ReconcileResult) error
	// ReconcileResults returns the newest results, by checked_at
	// descending, at most limit (0: MaxReconcileResults) of one platform
	// or of every platform when platform is "".
	ReconcileResults(ctx context.Context, platform string, limit int) ([]ReconcileResult, error)
}

// MaxReconcileResults bounds one ReconcileResults answer.
const MaxReconcileResults = 1000

// ReconcileResult is one check of one window: the platform's count, the
// store's, and what came of it. Counts and times only, no order data.
type ReconcileResult struct {
	Platform string    `json:"platform"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// Check is "first" (once the window settled) or "recheck" (after
	// reconcile_recheck).
	Check string `json:"check"`
	// PlatformCount and Precision are the platform's count of the window
	// ("exact", or "at_least" when it stopped at a limit).
	PlatformCount int    `json:"platform_count"`
	Precision     string `json:"precision"`
	StoreCount    int    `json:"store_count"`
	// Outcome: match, closed (a difference the reprocess closed), open
	// (one it did not: alerted), store_ahead (the store holds more: not
	// something reprocessing fixes).
	Outcome string `json:"outcome"`
	// Reprocessed says the window was fetched again; RecountPlatform and
	// RecountStore are the counts after it.
	Reprocessed     bool      `json:"reprocessed,omitempty"`
	RecountPlatform int       `json:"recount_platform,omitempty"`
	RecountStore    int       `json:"recount_store,omitempty"`
	CheckedAt       time.Time `json:"checked_at"`
}

// checkReconcileResult refuses a result that names no platform or window.
func checkReconcileResult(r ReconcileResult) error {
	switch {
	case r.Platform == "" || len(r.Platform) > 200:
		return fmt.Errorf("reconcile result: platform must be 1-200 bytes, got %d", len(r.Platform))
	case !r.From.Before(r.To):
		return fmt.Errorf("reconcile result of %s: empty window [%s, %s)", r.Platform, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	case len(r.Check) > 32 || len(r.Outcome) > 32 || len(r.Precision) > 32:
		return fmt.Errorf("reconcile result of %s: check, outcome and precision are at most 32 bytes", r.Platform)
	}
	return nil
}

func reconcileLimit(limit int) int {
	if limit <= 0 || limit > MaxReconcileResults {
		return MaxReconcileResults
	}
	return limit
}
