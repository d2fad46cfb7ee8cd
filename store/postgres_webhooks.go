package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecordWebhookDelivery implements Webhooks.
func (s *postgresStore) RecordWebhookDelivery(ctx context.Context, platform, deliveryID string, at time.Time, keep time.Duration) (bool, error) {
	if err := checkWebhookDelivery(platform, deliveryID); err != nil {
		return false, err
	}
	first := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < $1`, at.Add(-keep)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (platform, delivery_id, received_at) VALUES ($1, $2, $3)
			ON CONFLICT (platform, delivery_id) DO NOTHING`, platform, deliveryID, at)
		if err != nil {
			return err
		}
		first = tag.RowsAffected() == 1
		if first {
			_, err = tx.Exec(ctx, `INSERT INTO webhook_activity (platform, last_event_at, events) VALUES ($1, $2, 1)
				ON CONFLICT (platform) DO UPDATE SET last_event_at = greatest(webhook_activity.last_event_at, excluded.last_event_at),
				events = webhook_activity.events + 1`, platform, at)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record webhook delivery of %s: %w", platform, err)
	}
	return first, nil
}

// ForgetWebhookDelivery implements Webhooks.
func (s *postgresStore) ForgetWebhookDelivery(ctx context.Context, platform, deliveryID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE platform = $1 AND delivery_id = $2`, platform, deliveryID); err != nil {
		return fmt.Errorf("forget webhook delivery of %s: %w", platform, err)
	}
	return nil
}

// WebhookActivity implements Webhooks.
func (s *postgresStore) WebhookActivity(ctx context.Context, platform string) (WebhookActivity, bool, error) {
	a := WebhookActivity{Platform: platform}
	err := s.pool.QueryRow(ctx, `SELECT last_event_at, events FROM webhook_activity WHERE platform = $1`, platform).Scan(&a.LastEventAt, &a.Events)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return WebhookActivity{}, false, fmt.Errorf("read webhook activity of %s: %w", platform, err)
	}
	a.LastEventAt = a.LastEventAt.UTC()
	return a, true, nil
}
