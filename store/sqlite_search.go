package store

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// SearchOrders implements OrderSearch on SQLite (times are Unix
// microseconds; row values compare in byte order).
func (s *sqliteStore) SearchOrders(ctx context.Context, q SearchQuery) (SearchPage, error) {
	q, numbers, key, err := checkSearch(q)
	if err != nil {
		return SearchPage{}, fmt.Errorf("search orders: %w", err)
	}
	where, args := searchSQL(q, numbers, key, func(int) string { return "?" }, func(t time.Time) any { return toMicros(t).UnixMicro() })
	query := `SELECT platform, order_id, number, status, created_at, updated_at, currency, total, line_count, last_seen_at FROM orders` +
		where + ` ORDER BY updated_at DESC, platform DESC, order_id DESC LIMIT ` + strconv.Itoa(q.Limit+1)
	var out []OrderSummary
	err = s.withPool(ctx, func(p *sqlitePool) error {
		out = nil
		rows, err := p.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o OrderSummary
			var created, updated, seen int64
			if err := rows.Scan(&o.Platform, &o.ID, &o.Number, &o.Status, &created, &updated, &o.Currency, &o.Total, &o.LineCount, &seen); err != nil {
				return err
			}
			o.CreatedAt, o.UpdatedAt, o.LastSeenAt = fromMicros(created), fromMicros(updated), fromMicros(seen)
			out = append(out, o)
		}
		return rows.Err()
	})
	if err != nil {
		return SearchPage{}, fmt.Errorf("search orders: %w", err)
	}
	return finishPage(out, q.Limit), nil
}

// OrderChanges implements OrderSearch on SQLite.
func (s *sqliteStore) OrderChanges(ctx context.Context, platform, id string) ([]Change, error) {
	var out []Change
	err := s.withPool(ctx, func(p *sqlitePool) error {
		out = nil
		rows, err := p.db.QueryContext(ctx, `SELECT seq, kind, updated_at, committed_at FROM changes
			WHERE platform = ? AND order_id = ? ORDER BY seq`, platform, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ch := Change{Platform: platform, OrderID: id}
			var kind string
			var updated, committed int64
			if err := rows.Scan(&ch.Seq, &kind, &updated, &committed); err != nil {
				return err
			}
			ch.Kind, ch.UpdatedAt, ch.CommittedAt = ChangeKind(kind), fromMicros(updated), fromMicros(committed)
			out = append(out, ch)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("changes of order %s/%s: %w", platform, clipID(id), err)
	}
	return out, nil
}
