package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pointsWaits make a wait for a cost-metered platform's points visible
// (Shopify's GraphQL bucket): how often a page found no room in the bucket
// within its attempt, and how long the last such booking would have had
// to wait. A platform whose count climbs while its pages do not is starved
// of points (issue 23).
type pointsWaits struct {
	waits   *prometheus.CounterVec
	seconds *prometheus.GaugeVec
}

func newPointsWaits() pointsWaits {
	return pointsWaits{
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "points_waits_total",
			Help: "Page attempts that found no room in the platform's points bucket within the attempt and handed the wait to the slice (Shopify GraphQL).",
		}, []string{"platform"}),
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "points_wait_seconds",
			Help: "How long the last booking that found no room in the platform's points bucket would have had to wait.",
		}, []string{"platform"}),
	}
}

// PointsWait counts one wait for points of d.
func (r *Recorder) PointsWait(platform string, d time.Duration) {
	if r == nil {
		return
	}
	r.points.waits.WithLabelValues(platform).Inc()
	r.points.seconds.WithLabelValues(platform).Set(d.Seconds())
}
