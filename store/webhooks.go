package store

import (
	"context"
	"time"
)

// MaxWebhookDeliveryIDBytes bounds a delivery id the webhook log keeps: a
// platform's ids are UUIDs or numbers; anything longer is not one.
const MaxWebhookDeliveryIDBytes = 256

// Webhooks is the log of the platform webhooks `serve` accepted
// (package webhooks): delivery ids, so a redelivered event is not acted on
// twice, and per platform the time of the last accepted event, so status
// can say whether the fast path is live. Both stores implement it (tables
// webhook_deliveries and webhook_activity, migration 0010).
type Webhooks interface {
	// RecordWebhookDelivery records the delivery id of platform's event
	// received at at, and reports whether it is the first time (false: a
	// redelivery, nothing changed). A first delivery also moves the
	// platform's last event time and count. Every delivery older than at
	// minus keep is deleted, so the log stays bounded.
	RecordWebhookDelivery(ctx context.Context, platform, deliveryID string, at time.Time, keep time.Duration) (first bool, err error)
	// ForgetWebhookDelivery removes a recorded delivery id, for an event
	// that was recorded but could not be queued: the platform's retry
	// must then count as new.
	ForgetWebhookDelivery(ctx context.Context, platform, deliveryID string) error
	// WebhookActivity is platform's last accepted event time and count;
	// ok is false when none was ever accepted.
	WebhookActivity(ctx context.Context, platform string) (WebhookActivity, bool, error)
}

// WebhookActivity is one platform's accepted webhook events.
type WebhookActivity struct {
	Platform    string
	LastEventAt time.Time
	Events      int64
}
