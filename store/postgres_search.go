package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// SearchOrders implements OrderSearch on PostgreSQL.
func (s *postgresStore) SearchOrders(ctx context.Context, q SearchQuery) (SearchPage, error) {
	q, numbers, key, err := checkSearch(q)
	if err != nil {
		return SearchPage{}, fmt.Errorf("search orders: %w", err)
	}
	where, args := searchSQL(q, numbers, key, func(n int) string { return "$" + strconv.Itoa(n) }, func(t time.Time) any { return toMicros(t) })
	query := `SELECT platform, order_id, number, status, created_at, updated_at, currency, total, line_count, last_seen_at FROM orders` +
		where + ` ORDER BY updated_at DESC, platform DESC, order_id DESC LIMIT ` + strconv.Itoa(q.Limit+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return SearchPage{}, fmt.Errorf("search orders: %w", err)
	}
	var out []OrderSummary
	var o OrderSummary
	var lineCount int64
	_, err = pgx.ForEachRow(rows, []any{&o.Platform, &o.ID, &o.Number, &o.Status, &o.CreatedAt, &o.UpdatedAt, &o.Currency, &o.Total, &lineCount, &o.LastSeenAt}, func() error {
		o.LineCount = int(lineCount)
		o.CreatedAt, o.UpdatedAt, o.LastSeenAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC(), o.LastSeenAt.UTC()
		out = append(out, o)
		return nil
	})
	if err != nil {
		return SearchPage{}, fmt.Errorf("search orders: %w", err)
	}
	return finishPage(out, q.Limit), nil
}

// OrderChanges implements OrderSearch on PostgreSQL.
func (s *postgresStore) OrderChanges(ctx context.Context, platform, id string) ([]Change, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, kind, updated_at, committed_at FROM changes
		WHERE platform = $1 AND order_id = $2 ORDER BY seq`, platform, id)
	if err != nil {
		return nil, fmt.Errorf("changes of order %s/%s: %w", platform, clipID(id), err)
	}
	var out []Change
	var ch Change
	var kind string
	_, err = pgx.ForEachRow(rows, []any{&ch.Seq, &kind, &ch.UpdatedAt, &ch.CommittedAt}, func() error {
		out = append(out, Change{Seq: ch.Seq, Platform: platform, OrderID: id, Kind: ChangeKind(kind), UpdatedAt: ch.UpdatedAt.UTC(), CommittedAt: ch.CommittedAt.UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("changes of order %s/%s: %w", platform, clipID(id), err)
	}
	return out, nil
}
