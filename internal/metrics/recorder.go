package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every ordersync series.
const Namespace = "ordersync"

// Upsert results, the values of the `result` label of orders_upserted_total.
const (
	ResultInserted  = "inserted"
	ResultUpdated   = "updated"
	ResultUnchanged = "unchanged"
)

// Reasons FetchPage set an order aside instead of storing it, the values of
// the `reason` label of orders_not_stored_total.
const (
	// ReasonRejected: the order cannot be stored (no id, zero updated_at).
	ReasonRejected = "rejected"
	// ReasonFutureStamped: its updated_at lies further ahead of now than the
	// allowed skew, so it cannot be trusted as the newest version.
	ReasonFutureStamped = "future_stamped"
)

// Error classes, the values of the `class` label of api_errors_total. They
// follow the activity error types that drive the retry policy.
const (
	ClassRateLimited = "rate_limited"
	ClassTransient   = "transient"
	ClassMalformed   = "malformed"
	ClassPermanent   = "permanent"
	ClassStore       = "store"
)

// Recorder owns a process's registry and the counters the activities bump.
// A nil *Recorder records nothing, so activities and tests need no setup.
type Recorder struct {
	registry        *prometheus.Registry
	ordersUpserted  *prometheus.CounterVec
	ordersNotStored *prometheus.CounterVec
	pages           *prometheus.CounterVec
	apiErrors       *prometheus.CounterVec
	rateLimited     *prometheus.CounterVec
	requests        *prometheus.CounterVec
	learnedRate     *prometheus.GaugeVec
	credRefresh     *prometheus.CounterVec // credentials.go
	points          pointsWaits
	reconcile       reconcileMetrics // reconcile.go
	readiness       *Readiness
}

// New returns a Recorder with a fresh registry holding ordersync's counters
// and the Go runtime and process collectors.
func New() *Recorder {
	r := &Recorder{
		registry: prometheus.NewRegistry(),
		ordersUpserted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "orders_upserted_total",
			Help: "Orders written to the store by FetchPage, by upsert result (inserted, updated, unchanged).",
		}, []string{"platform", "result"}),
		ordersNotStored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "orders_not_stored_total",
			Help: "Orders FetchPage set aside instead of storing, by reason (rejected: no id or zero updated_at; future_stamped: updated_at beyond now plus the allowed skew).",
		}, []string{"platform", "reason"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "pages_total",
			Help: "Pages fetched from the platform and stored.",
		}, []string{"platform"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "api_errors_total",
			Help: "Failed FetchPage attempts by class (rate_limited, transient, malformed, permanent, store).",
		}, []string{"platform", "class"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "rate_limited_total",
			Help: "Requests the platform answered with 429 Too Many Requests.",
		}, []string{"platform"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "requests_total",
			Help: "Page requests FetchPage sent to the platform, each after taking a slot of its rate_limit (compare with ordersync_rate_limit_rps).",
		}, []string{"platform"}),
		learnedRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "platform_rate_limit_learned",
			Help: "Requests/s the platform last stated in its answers (x-amzn-RateLimit-Limit, X-RateLimit-Limit), 429s included; requests are paced at the lower of this and rate_limit.rps (ordersync_rate_limit_rps).",
		}, []string{"platform"}),
		credRefresh: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "credential_refreshes_total",
			Help: "Refreshes of stored credentials this process made, by outcome (ok; failed: no usable answer; refused: the refresh token was refused, re-authorize).",
		}, []string{"credential", "kind", "outcome"}),
		points:    newPointsWaits(),
		reconcile: newReconcileMetrics(),
		readiness: &Readiness{},
	}
	r.registry.MustRegister(r.ordersUpserted, r.ordersNotStored, r.pages, r.apiErrors, r.rateLimited, r.requests, r.learnedRate, r.credRefresh,
		r.points.waits, r.points.seconds, r.reconcile.checks, r.reconcile.difference,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Registry is where every collector of the process registers.
func (r *Recorder) Registry() *prometheus.Registry { return r.registry }

// Handler serves the registry in the Prometheus text format.
func (r *Recorder) Handler() http.Handler {
	return promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{Registry: r.registry})
}

// Page counts one stored page and its upsert results. Zero results still
// create the series, so a dashboard shows 0 rather than no data.
func (r *Recorder) Page(platform string, inserted, updated, unchanged int) {
	if r == nil {
		return
	}
	r.pages.WithLabelValues(platform).Inc()
	r.ordersUpserted.WithLabelValues(platform, ResultInserted).Add(float64(inserted))
	r.ordersUpserted.WithLabelValues(platform, ResultUpdated).Add(float64(updated))
	r.ordersUpserted.WithLabelValues(platform, ResultUnchanged).Add(float64(unchanged))
}

// NotStored counts the orders of one stored page that were set aside. Like
// Page, zeros create the series.
func (r *Recorder) NotStored(platform string, rejected, futureStamped int) {
	if r == nil {
		return
	}
	r.ordersNotStored.WithLabelValues(platform, ReasonRejected).Add(float64(rejected))
	r.ordersNotStored.WithLabelValues(platform, ReasonFutureStamped).Add(float64(futureStamped))
}

// Request counts one page request sent to the platform (it took a rate
// limit slot), whatever its outcome. It also creates the platform's 429
// counter at 0, so "429s per minute" reads 0 rather than no data.
func (r *Recorder) Request(platform string) {
	if r == nil {
		return
	}
	r.requests.WithLabelValues(platform).Inc()
	r.rateLimited.WithLabelValues(platform)
}

// LearnedRateLimit records the requests/s a platform stated in an answer.
func (r *Recorder) LearnedRateLimit(platform string, rps float64) {
	if r == nil {
		return
	}
	r.learnedRate.WithLabelValues(platform).Set(rps)
}

// Readiness is what /readyz answers from (nil for a nil Recorder).
func (r *Recorder) Readiness() *Readiness {
	if r == nil {
		return nil
	}
	return r.readiness
}

// FetchError counts one failed FetchPage attempt; a rate_limited one is
// also a 429.
func (r *Recorder) FetchError(platform, class string) {
	if r == nil {
		return
	}
	r.apiErrors.WithLabelValues(platform, class).Inc()
	if class == ClassRateLimited {
		r.rateLimited.WithLabelValues(platform).Inc()
	}
}
