package metrics

import "github.com/prometheus/client_golang/prometheus"

// reconcileMetrics make count reconciliation visible: every check of a
// window by outcome (match, closed, open, store_ahead), and the difference
// the last check of a platform left (platform's count minus the store's:
// above zero, orders the store lacks).
type reconcileMetrics struct {
	checks     *prometheus.CounterVec
	difference *prometheus.GaugeVec
}

func newReconcileMetrics() reconcileMetrics {
	return reconcileMetrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_checks_total",
			Help: "Windows whose platform count was compared with the store's, by check (first, recheck) and outcome (match; closed: a difference the reprocess closed; open: one it did not, alerted; store_ahead: the store holds more).",
		}, []string{"platform", "check", "outcome"}),
		difference: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "reconcile_difference",
			Help: "The platform's count minus the store's after the last reconcile check of the platform (after its reprocess, if any): above zero, orders the store still lacks.",
		}, []string{"platform"}),
	}
}

// ReconcileChecked counts one finished check and the difference it left.
func (r *Recorder) ReconcileChecked(platform, check, outcome string, difference int) {
	if r == nil {
		return
	}
	r.reconcile.checks.WithLabelValues(platform, check, outcome).Inc()
	r.reconcile.difference.WithLabelValues(platform).Set(float64(difference))
}
