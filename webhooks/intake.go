package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// Prefix is where serve mounts the intake: Prefix + <kind>/<platform>.
const Prefix = "/webhooks/"

// Defaults of Options.
const (
	// DefaultMaxBody bounds an event's body. Shopify's order payloads are
	// tens of kilobytes; a megabyte leaves room for big orders.
	DefaultMaxBody = 1 << 20
	// DefaultQueueSize bounds the orders waiting for a refetch start.
	DefaultQueueSize = 10000
	// DefaultStarters is how many refetch starts run at once.
	DefaultStarters = 4
	// DefaultKeep is how long a delivery id is remembered: Shopify retries
	// for 4 hours, and a duplicate may come a day late.
	DefaultKeep = 48 * time.Hour
)

// Options configure the intake.
type Options struct {
	// Registry names the accounts events are routed to.
	Registry accounts.Registry
	// Log records delivery ids and the last event time per platform.
	Log store.Webhooks
	// Secrets gives each account's webhook secret.
	Secrets Secrets
	// Refetch starts the refetches events ask for.
	Refetch Refetcher
	// Metrics counts events and refetches; nil counts nothing.
	Metrics *metrics.Webhooks
	Logger  *slog.Logger
	// MaxBody, QueueSize, Starters and Keep default to the Default* values.
	MaxBody   int64
	QueueSize int
	Starters  int
	Keep      time.Duration
	Now       func() time.Time
}

// Handler is the intake. Close it to stop its refetch starters.
type Handler struct {
	o     Options
	q     *queue
	wg    sync.WaitGroup
	close sync.Once
}

// New starts the intake's refetch starters.
func New(o Options) (*Handler, error) {
	if o.Registry == nil || o.Log == nil || o.Secrets == nil || o.Refetch == nil {
		return nil, errors.New("webhooks: the registry, the store's webhook log, the secrets and the refetch service are required")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Starters <= 0 {
		o.Starters = DefaultStarters
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{o: o, q: newQueue(o.QueueSize)}
	h.wg.Add(o.Starters)
	for range o.Starters {
		go starter(h.q, o.Refetch, o.Metrics, o.Logger, &h.wg)
	}
	return h, nil
}

// Close refuses new events (503, so platforms retry) and waits until the
// refetches of the orders queued are started, at most until ctx ends.
func (h *Handler) Close(ctx context.Context) error {
	h.close.Do(h.q.close)
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.q.mu.Lock()
		left := len(h.q.order)
		h.q.mu.Unlock()
		h.o.Logger.Warn("webhook intake closed with refetches not started; polling will bring those changes", "orders", left)
		return fmt.Errorf("webhooks: %d queued refetches not started: %w", left, ctx.Err())
	}
}

// event is what the intake reads from one request.
type event struct {
	kind, platform string
	delivery       string
	orderID        string
	ignore         bool // verified, but nothing to fetch (a ping, another topic)
	known          bool // the URL names a registered account of its kind
}

// refusal is an answer other than 200, and its outcome label.
type refusal struct {
	status  int
	outcome string
	msg     string
}

func (r *refusal) Error() string { return r.msg }

func refuse(status int, outcome, format string, args ...any) *refusal {
	return &refusal{status: status, outcome: outcome, msg: fmt.Sprintf(format, args...)}
}

// ServeHTTP implements http.Handler for POST Prefix<kind>/<platform>.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	ev, err := h.read(r, kind, name)
	if err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = refuse(http.StatusInternalServerError, metrics.WebhookError, "%s", err)
		}
		platform := ""
		if ev.known {
			platform = name // a registered account: a bounded label
		}
		if kind != KindShopify && kind != KindWooCommerce {
			kind = ""
		}
		h.o.Metrics.Event(kind, platform, ref.outcome)
		if ref.status == http.StatusOK {
			w.WriteHeader(http.StatusOK)
			return
		}
		if ref.status >= 500 {
			// The detail (a missing secret, the store) is for the operator,
			// not for whoever called this public route.
			h.o.Logger.Error("webhook event not taken; the platform will retry", "kind", kind, "platform", textclip.Value(name), "error", textclip.Message(ref.msg))
			http.Error(w, "webhooks: the event cannot be taken now; retry later", ref.status)
			return
		}
		h.o.Logger.Warn("webhook event refused", "kind", kind, "platform", textclip.Value(name), "outcome", ref.outcome, "status", ref.status,
			"remote", textclip.Value(r.RemoteAddr))
		http.Error(w, textclip.Message(ref.msg), ref.status)
		return
	}
	outcome := h.take(r.Context(), ev)
	h.o.Metrics.Event(kind, name, outcome)
	switch outcome {
	case metrics.WebhookQueueFull:
		http.Error(w, "webhooks: the refetch queue is full; retry later", http.StatusServiceUnavailable)
	case metrics.WebhookError:
		http.Error(w, "webhooks: the delivery log could not be written; retry later", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// take records and queues a verified event, answering its outcome.
func (h *Handler) take(ctx context.Context, ev event) string {
	first, err := h.o.Log.RecordWebhookDelivery(ctx, ev.platform, ev.delivery, h.o.Now(), h.o.Keep)
	if err != nil {
		h.o.Logger.Error("webhook delivery not recorded; answered 500 so the platform retries", "platform", ev.platform, "error", textclip.Message(err.Error()))
		return metrics.WebhookError
	}
	switch {
	case !first:
		return metrics.WebhookDuplicate
	case ev.ignore:
		return metrics.WebhookIgnored
	}
	coalesced, full, n := h.q.add(orderKey{ev.platform, ev.orderID})
	if full {
		// Forget it, so the platform's retry is taken as new.
		if err := h.o.Log.ForgetWebhookDelivery(context.WithoutCancel(ctx), ev.platform, ev.delivery); err != nil {
			h.o.Logger.Error("webhook delivery refused for a full queue but not forgotten; its retry will count as a duplicate, polling brings the change",
				"platform", ev.platform, "error", textclip.Message(err.Error()))
		}
		return metrics.WebhookQueueFull
	}
	h.o.Metrics.Queued(n)
	if coalesced {
		return metrics.WebhookCoalesced
	}
	return metrics.WebhookAccepted
}

var platformName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// read checks one request, in the order doc.go gives, and reads its event.
func (h *Handler) read(r *http.Request, kind, name string) (event, error) {
	ev := event{kind: kind, platform: name}
	if r.Method != http.MethodPost {
		return ev, refuse(http.StatusMethodNotAllowed, metrics.WebhookBadRequest, "webhooks: POST only")
	}
	if (kind != KindShopify && kind != KindWooCommerce) || !platformName.MatchString(name) {
		return ev, refuse(http.StatusNotFound, metrics.WebhookUnknownAccount, "webhooks: no intake at %s (want %s<shopify|woocommerce>/<platform>)", textclip.Value(r.URL.Path), Prefix)
	}
	p, err := h.account(r.Context(), kind, name)
	if err != nil {
		return ev, err
	}
	ev.known = true
	body, err := io.ReadAll(io.LimitReader(r.Body, h.o.MaxBody+1))
	if err != nil {
		return ev, refuse(http.StatusBadRequest, metrics.WebhookBadRequest, "webhooks: read the body: %v", err)
	}
	if int64(len(body)) > h.o.MaxBody {
		return ev, refuse(http.StatusRequestEntityTooLarge, metrics.WebhookTooLarge, "webhooks: body over %d bytes", h.o.MaxBody)
	}
	sigHeader := ShopifySignatureHeader
	if kind == KindWooCommerce {
		sigHeader = WooSignatureHeader
	}
	sig := r.Header.Get(sigHeader)
	if kind == KindWooCommerce && sig == "" && wooPing(body) {
		// WooCommerce pings a new webhook's URL unsigned; it asks nothing.
		ev.ignore, ev.delivery = true, ""
		return ev, refuse(http.StatusOK, metrics.WebhookIgnored, "webhooks: ping")
	}
	if sig == "" {
		return ev, refuse(http.StatusUnauthorized, metrics.WebhookUnsigned, "webhooks: no %s header", sigHeader)
	}
	secret, err := h.o.Secrets.WebhookSecret(r.Context(), p)
	if err != nil {
		return ev, err
	}
	if !Verify(secret, body, sig) {
		return ev, refuse(http.StatusUnauthorized, metrics.WebhookForged, "webhooks: the %s signature does not match the body", sigHeader)
	}
	if kind == KindShopify {
		return h.readShopify(r, p, body, ev)
	}
	return h.readWoo(r, p, body, ev)
}

// account is the active platform name of kind; 404 otherwise.
func (h *Handler) account(ctx context.Context, kind, name string) (config.Platform, error) {
	e, ok, err := h.o.Registry.Get(ctx, accounts.ClassPlatform, name)
	if err != nil {
		return config.Platform{}, fmt.Errorf("webhooks: read platform %s: %w", name, err)
	}
	if !ok || e.State == accounts.Removed {
		return config.Platform{}, refuse(http.StatusNotFound, metrics.WebhookUnknownAccount, "webhooks: no platform %s", name)
	}
	p, err := accounts.DecodePlatform(e)
	if err != nil {
		return config.Platform{}, fmt.Errorf("webhooks: platform %s: %w", name, err)
	}
	if p.Kind != kind {
		return config.Platform{}, refuse(http.StatusNotFound, metrics.WebhookUnknownAccount, "webhooks: platform %s is not of kind %s", name, kind)
	}
	return p, nil
}

// orderBody is the part of an order event the intake reads: the id.
type orderBody struct {
	ID json.Number `json:"id"`
}

func orderID(body []byte) (string, bool) {
	var b orderBody
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&b); err != nil {
		return "", false
	}
	id := b.ID.String()
	return id, id != "" && len(id) <= 64 && strings.Trim(id, "0123456789") == ""
}

// shopifyOrderTopics are the topics whose body is an order.
var shopifyOrderTopics = map[string]bool{
	"orders/create": true, "orders/updated": true, "orders/cancelled": true, "orders/paid": true,
	"orders/fulfilled": true, "orders/partially_fulfilled": true, "orders/edited": true, "refunds/create": false,
}

func (h *Handler) readShopify(r *http.Request, p config.Platform, body []byte, ev event) (event, error) {
	shop := strings.ToLower(strings.TrimSpace(r.Header.Get(ShopifyShopHeader)))
	if want := ShopDomain(p.Endpoint); shop == "" || shop != want {
		return ev, refuse(http.StatusUnauthorized, metrics.WebhookWrongShop, "webhooks: event of shop %q sent to platform %s, whose shop is %s",
			textclip.Value(shop), p.Name, want)
	}
	ev.delivery = cmpOr(r.Header.Get(ShopifyWebhookIDHeader), r.Header.Get(ShopifyEventIDHeader))
	if ev.delivery == "" || len(ev.delivery) > store.MaxWebhookDeliveryIDBytes {
		return ev, refuse(http.StatusBadRequest, metrics.WebhookBadRequest, "webhooks: no usable %s header", ShopifyWebhookIDHeader)
	}
	if !shopifyOrderTopics[r.Header.Get(ShopifyTopicHeader)] {
		ev.ignore = true
		return ev, nil
	}
	id, ok := orderID(body)
	if !ok {
		return ev, refuse(http.StatusBadRequest, metrics.WebhookBadRequest, "webhooks: the order event has no numeric id")
	}
	ev.orderID = id
	return ev, nil
}

func (h *Handler) readWoo(r *http.Request, _ config.Platform, body []byte, ev event) (event, error) {
	ev.delivery = r.Header.Get(WooDeliveryIDHeader)
	if ev.delivery == "" || len(ev.delivery) > store.MaxWebhookDeliveryIDBytes {
		return ev, refuse(http.StatusBadRequest, metrics.WebhookBadRequest, "webhooks: no usable %s header", WooDeliveryIDHeader)
	}
	if !strings.HasPrefix(r.Header.Get(WooTopicHeader), "order.") {
		ev.ignore = true
		return ev, nil
	}
	id, ok := orderID(body)
	if !ok {
		return ev, refuse(http.StatusBadRequest, metrics.WebhookBadRequest, "webhooks: the order event has no numeric id")
	}
	ev.orderID = id
	return ev, nil
}

// wooPing is WooCommerce's test delivery: webhook_id=<n>, form-encoded.
func wooPing(body []byte) bool {
	v, err := url.ParseQuery(string(body))
	return err == nil && len(v) == 1 && v.Get("webhook_id") != ""
}

// ShopDomain is the myshopify.com domain of a Shopify account's endpoint:
// its host (https://acme.myshopify.com), or, for an endpoint elsewhere (the
// simulator serves shops at <base>/shops/<handle>), <last path
// segment>.myshopify.com.
func ShopDomain(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if strings.HasSuffix(host, ".myshopify.com") {
		return host
	}
	seg := strings.Trim(u.Path, "/")
	if i := strings.LastIndex(seg, "/"); i >= 0 {
		seg = seg[i+1:]
	}
	if seg == "" {
		return host
	}
	return strings.ToLower(seg) + ".myshopify.com"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
