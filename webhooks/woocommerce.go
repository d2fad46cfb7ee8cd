package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// WooTopics are the WooCommerce webhooks SyncWoo keeps per account:
// order.updated covers status changes (cancellations, refunds) too.
var WooTopics = []string{"order.created", "order.updated"}

// WooWebhook is one WooCommerce webhook (GET /wp-json/wc/v3/webhooks).
type WooWebhook struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"` // active, paused, disabled
	Topic       string `json:"topic"`
	DeliveryURL string `json:"delivery_url"`
}

// WooAdmin calls a store's REST API v3 for its webhooks, authenticated as
// the connector is: the consumer key and secret as Basic auth, or in the
// query (options.auth: query).
type WooAdmin struct {
	// Endpoint is the site (https://shop.example.com).
	Endpoint                    string
	ConsumerKey, ConsumerSecret string
	InQuery                     bool
	Client                      *resty.Client
}

func (a *WooAdmin) request(ctx context.Context) *resty.Request {
	if a.Client == nil {
		a.Client = resty.New().SetTimeout(30 * time.Second).SetRedirectPolicy(resty.NoRedirectPolicy()).SetResponseBodyLimit(maxAdminBody)
	}
	r := a.Client.R().SetContext(ctx)
	if a.InQuery {
		return r.SetQueryParams(map[string]string{"consumer_key": a.ConsumerKey, "consumer_secret": a.ConsumerSecret})
	}
	return r.SetBasicAuth(a.ConsumerKey, a.ConsumerSecret)
}

func (a *WooAdmin) url(path string) string {
	return strings.TrimRight(a.Endpoint, "/") + "/wp-json/wc/v3/webhooks" + path
}

func wooAnswer(op string, resp *resty.Response, err error, out any) error {
	if err != nil {
		return fmt.Errorf("woocommerce %s: %s", op, textclip.Message(err.Error()))
	}
	if resp.StatusCode() < 200 || resp.StatusCode() > 299 {
		return fmt.Errorf("woocommerce %s: HTTP %d: %s", op, resp.StatusCode(), textclip.Message(string(resp.Body())))
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		return fmt.Errorf("woocommerce %s: the answer is not a webhook: %s", op, textclip.Message(err.Error()))
	}
	return nil
}

// List is every webhook of the store (100 a page, at most 20 pages).
func (a *WooAdmin) List(ctx context.Context) ([]WooWebhook, error) {
	var out []WooWebhook
	for page := 1; page <= maxSubscriptionPages; page++ {
		var hooks []WooWebhook
		resp, err := a.request(ctx).SetQueryParams(map[string]string{"per_page": "100", "page": strconv.Itoa(page)}).Get(a.url(""))
		if err := wooAnswer("list webhooks", resp, err, &hooks); err != nil {
			return nil, err
		}
		out = append(out, hooks...)
		if len(hooks) < 100 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("woocommerce list webhooks: more than %d pages", maxSubscriptionPages)
}

// Create makes an active webhook of topic to url, signed with secret.
func (a *WooAdmin) Create(ctx context.Context, topic, url, secret string) (WooWebhook, error) {
	var w WooWebhook
	resp, err := a.request(ctx).SetBody(map[string]any{"name": "ordersync " + topic, "topic": topic, "delivery_url": url,
		"secret": secret, "status": "active"}).Post(a.url(""))
	return w, wooAnswer("create webhook "+topic, resp, err, &w)
}

// Activate sets a webhook's status to active (WooCommerce disables one
// after repeated failed deliveries) and its secret to secret.
func (a *WooAdmin) Activate(ctx context.Context, id int64, secret string) (WooWebhook, error) {
	var w WooWebhook
	resp, err := a.request(ctx).SetBody(map[string]any{"status": "active", "secret": secret}).Put(a.url("/" + strconv.FormatInt(id, 10)))
	return w, wooAnswer("activate webhook "+strconv.FormatInt(id, 10), resp, err, &w)
}

// SyncWoo makes sure each of WooTopics has an active webhook to url; a
// disabled or paused one is activated again (with secret), a missing one
// created. With dryRun it only reports. The report's subscriptions carry
// the webhook id as ID.
func SyncWoo(ctx context.Context, a *WooAdmin, url, secret string, dryRun bool) (SyncReport, error) {
	rep := SyncReport{URI: url}
	hooks, err := a.List(ctx)
	if err != nil {
		return rep, err
	}
	for _, topic := range WooTopics {
		i := slices.IndexFunc(hooks, func(w WooWebhook) bool { return w.Topic == topic && w.DeliveryURL == url })
		switch {
		case i >= 0 && hooks[i].Status == "active":
			rep.Present = append(rep.Present, wooSub(hooks[i]))
			continue
		case dryRun:
			rep.Missing = append(rep.Missing, topic)
			continue
		}
		var w WooWebhook
		if i >= 0 {
			w, err = a.Activate(ctx, hooks[i].ID, secret)
		} else {
			w, err = a.Create(ctx, topic, url, secret)
		}
		if err != nil {
			return rep, err
		}
		rep.Created = append(rep.Created, wooSub(w))
	}
	return rep, nil
}

func wooSub(w WooWebhook) Subscription {
	return Subscription{ID: strconv.FormatInt(w.ID, 10), Topic: w.Topic, URI: w.DeliveryURL}
}
