package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a platform webhook event at serve's intake (package
// webhooks), the values of the `outcome` label of webhook_events_total.
const (
	// WebhookAccepted: verified, new, queued for a refetch.
	WebhookAccepted = "accepted"
	// WebhookDuplicate: a delivery id seen before; answered 200, nothing done.
	WebhookDuplicate = "duplicate"
	// WebhookCoalesced: accepted, and folded into a refetch of the same
	// order already queued.
	WebhookCoalesced = "coalesced"
	// WebhookIgnored: verified but asks for nothing (a WooCommerce ping, a
	// topic without an order).
	WebhookIgnored = "ignored"
	// WebhookUnsigned: no signature header (401).
	WebhookUnsigned = "unsigned"
	// WebhookForged: a signature that does not match the body (401).
	WebhookForged = "forged"
	// WebhookWrongShop: signed, but for another shop than the account's
	// endpoint (401).
	WebhookWrongShop = "wrong_shop"
	// WebhookUnknownAccount: no active account of that kind and name (404).
	WebhookUnknownAccount = "unknown_account"
	// WebhookTooLarge: a body over the limit (413).
	WebhookTooLarge = "too_large"
	// WebhookBadRequest: signed, but no delivery id or no order id (400).
	WebhookBadRequest = "bad_request"
	// WebhookQueueFull: the refetch queue was full; answered 503 so the
	// platform retries.
	WebhookQueueFull = "queue_full"
	// WebhookError: the account's secret or the delivery log could not be
	// read; answered 500 so the platform retries.
	WebhookError = "error"
)

// Outcomes of a queued webhook refetch, the `outcome` label of
// webhook_refetches_total.
const (
	WebhookRefetchStarted = "started"
	WebhookRefetchFailed  = "failed"
)

// Webhooks counts serve's webhook intake. A nil *Webhooks counts nothing.
type Webhooks struct {
	events    *prometheus.CounterVec
	refetches *prometheus.CounterVec
	queued    prometheus.Gauge
}

// NewWebhooks makes the intake's series and registers them with reg.
func NewWebhooks(reg prometheus.Registerer) *Webhooks {
	w := &Webhooks{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "webhook_events_total",
			Help: "Platform webhook events at serve's intake, by kind, platform (empty when the URL names no known account) and outcome " +
				"(accepted, duplicate, coalesced, ignored, unsigned, forged, wrong_shop, unknown_account, too_large, bad_request, queue_full, error).",
		}, []string{"kind", "platform", "outcome"}),
		refetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "webhook_refetches_total",
			Help: "Refetches the webhook intake started (signal-with-start of the Refetch workflow), by outcome (started, failed).",
		}, []string{"platform", "outcome"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "webhook_queue_orders",
			Help: "Orders the webhook intake has queued for a refetch and not yet started.",
		}),
	}
	reg.MustRegister(w.events, w.refetches, w.queued)
	return w
}

// Event counts one event.
func (w *Webhooks) Event(kind, platform, outcome string) {
	if w != nil {
		w.events.WithLabelValues(kind, platform, outcome).Inc()
	}
}

// Refetch counts one refetch start.
func (w *Webhooks) Refetch(platform, outcome string) {
	if w != nil {
		w.refetches.WithLabelValues(platform, outcome).Inc()
	}
}

// Queued sets the number of orders waiting in the queue.
func (w *Webhooks) Queued(n int) {
	if w != nil {
		w.queued.Set(float64(n))
	}
}

// ServeRegistry is a registry for the serve process: the Go runtime and
// process collectors, to which NewWebhooks adds the intake's series, and
// the handler that exposes it.
func ServeRegistry() (*prometheus.Registry, http.Handler) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
