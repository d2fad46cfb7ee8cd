package tuning

import "time"

// Count reconciliation's defaults: a day's window, checked once it
// settled and again three days later.
const (
	DefaultReconcileWindow  = day
	DefaultReconcileRecheck = 3 * day
)

// Bounds of the reconcile settings (CheckRanges): a window under a minute
// would spend the platform's quota on counts; the recheck reaches a month
// back at most.
const (
	MinReconcileWindow  = time.Minute
	MaxReconcileWindow  = 7 * day
	MaxReconcileRecheck = 30 * day
)

// ReconcileOn says whether count reconciliation runs for the platform:
// unless `reconcile: false`.
func (s Settings) ReconcileOn() bool { return s.Reconcile == nil || *s.Reconcile }

// ReconcileWindowOrDefault is the reconcile window: reconcile_window, or
// DefaultReconcileWindow.
func (s Settings) ReconcileWindowOrDefault() time.Duration {
	if d := s.ReconcileWindow.D(); d > 0 {
		return d
	}
	return DefaultReconcileWindow
}

// ReconcileRecheckOrDefault is how long after a window's end it is
// checked again: reconcile_recheck (0: never), or DefaultReconcileRecheck
// when unset.
func (s Settings) ReconcileRecheckOrDefault() time.Duration {
	if s.ReconcileRecheck == nil {
		return DefaultReconcileRecheck
	}
	return max(s.ReconcileRecheck.D(), 0)
}

func reconcileRecheckValue(p Settings) Duration {
	if p.ReconcileRecheck == nil {
		return 0
	}
	return *p.ReconcileRecheck
}
