package activities

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/api"
)

// Alerter delivers an alert to whoever must hear about it.
type Alerter interface {
	Alert(ctx context.Context, a api.Alert) error
}

// SendAlert delivers one alert. A failed delivery is retried by Temporal;
// the alert's Key travels as Idempotency-Key so a receiver can drop a
// duplicate caused by a retry after a lost response.
func (a *Activities) SendAlert(ctx context.Context, alert api.Alert) error {
	if a.Alerter == nil {
		return LogAlerter{Logger: a.logger()}.Alert(ctx, alert)
	}
	return a.Alerter.Alert(ctx, alert)
}

// LogAlerter writes alerts to the log; the default when no webhook is set.
type LogAlerter struct{ Logger *slog.Logger }

// Alert logs the alert at error level.
func (l LogAlerter) Alert(_ context.Context, a api.Alert) error {
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error("ALERT "+a.Message, "kind", a.Kind, "platform", a.Platform, "slice", a.SliceID, "key", a.Key)
	return nil
}

// WebhookAlerter POSTs each alert as JSON.
type WebhookAlerter struct {
	URL    string
	client *resty.Client
}

// NewWebhookAlerter posts to url with a short timeout; Temporal retries.
func NewWebhookAlerter(url string) *WebhookAlerter {
	return &WebhookAlerter{URL: url, client: resty.New().SetTimeout(10 * time.Second)}
}

// Alert posts the alert; any non-2xx answer is an error so it is retried.
func (w *WebhookAlerter) Alert(ctx context.Context, a api.Alert) error {
	resp, err := w.client.R().SetContext(ctx).
		SetHeader("Idempotency-Key", a.Key).
		SetHeader("Content-Type", "application/json").
		SetBody(a).Post(w.URL)
	if err != nil {
		return fmt.Errorf("post alert %s to webhook: %w", a.Key, err)
	}
	if resp.IsError() {
		return fmt.Errorf("post alert %s to webhook: HTTP %d: %.200s", a.Key, resp.StatusCode(), resp.String())
	}
	return nil
}
