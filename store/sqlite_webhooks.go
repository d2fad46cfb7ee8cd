package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RecordWebhookDelivery implements Webhooks.
func (s *sqliteStore) RecordWebhookDelivery(ctx context.Context, platform, deliveryID string, at time.Time, keep time.Duration) (bool, error) {
	if err := checkWebhookDelivery(platform, deliveryID); err != nil {
		return false, err
	}
	first := false
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.withPool(ctx, func(p *sqlitePool) error {
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE received_at < ?`, at.Add(-keep).UnixMicro()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (platform, delivery_id, received_at) VALUES (?, ?, ?)
			ON CONFLICT (platform, delivery_id) DO NOTHING`, platform, deliveryID, at.UnixMicro())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		first = n == 1
		if first {
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_activity (platform, last_event_at, events) VALUES (?, ?, 1)
				ON CONFLICT (platform) DO UPDATE SET last_event_at = max(last_event_at, excluded.last_event_at), events = events + 1`,
				platform, at.UnixMicro()); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return false, fmt.Errorf("record webhook delivery of %s: %w", platform, err)
	}
	return first, nil
}

// ForgetWebhookDelivery implements Webhooks.
func (s *sqliteStore) ForgetWebhookDelivery(ctx context.Context, platform, deliveryID string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.withPool(ctx, func(p *sqlitePool) error {
		_, err := p.db.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE platform = ? AND delivery_id = ?`, platform, deliveryID)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget webhook delivery of %s: %w", platform, err)
	}
	return nil
}

// WebhookActivity implements Webhooks.
func (s *sqliteStore) WebhookActivity(ctx context.Context, platform string) (WebhookActivity, bool, error) {
	a := WebhookActivity{Platform: platform}
	var last int64
	found := false
	err := s.withPool(ctx, func(p *sqlitePool) error {
		err := p.db.QueryRowContext(ctx, `SELECT last_event_at, events FROM webhook_activity WHERE platform = ?`, platform).Scan(&last, &a.Events)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return WebhookActivity{}, false, fmt.Errorf("read webhook activity of %s: %w", platform, err)
	}
	if found {
		a.LastEventAt = time.UnixMicro(last).UTC()
	}
	return a, found, nil
}

// checkWebhookDelivery refuses what no platform sends as a delivery id.
func checkWebhookDelivery(platform, deliveryID string) error {
	switch {
	case platform == "":
		return errors.New("record webhook delivery: no platform")
	case deliveryID == "":
		return fmt.Errorf("record webhook delivery of %s: no delivery id", platform)
	case len(deliveryID) > MaxWebhookDeliveryIDBytes:
		return fmt.Errorf("record webhook delivery of %s: delivery id of %d bytes, at most %d", platform, len(deliveryID), MaxWebhookDeliveryIDBytes)
	}
	return nil
}
