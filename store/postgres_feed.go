package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ordersync/ordersync/order"
)

// appendChanges takes len(changes) numbers from change_counter and inserts
// the changes with them. The UPDATE locks the counter row until this
// transaction commits, so the next appender waits and then continues from
// the committed value: seqs are handed out in commit order (see migration
// 0003). Orders' rows are locked before the counter in every transaction,
// so the extra lock adds no deadlock.
func (p pgOps) appendChanges(ctx context.Context, changes []pendingChange, now time.Time) error {
	var last int64
	if err := p.tx.QueryRow(ctx, `UPDATE change_counter SET last = last + $1 WHERE id = 1 RETURNING last`, len(changes)).Scan(&last); err != nil {
		return fmt.Errorf("number %d changes: %w", len(changes), err)
	}
	first := last - int64(len(changes)) + 1
	for start := 0; start < len(changes); start += pgLineChunk {
		chunk := changes[start:min(start+pgLineChunk, len(changes))]
		seqs := make([]int64, len(chunk))
		platforms, ids, kinds := make([]string, len(chunk)), make([]string, len(chunk)), make([]string, len(chunk))
		updated := make([]time.Time, len(chunk))
		for i, c := range chunk {
			seqs[i] = first + int64(start+i)
			platforms[i], ids[i], kinds[i], updated[i] = c.platform, c.orderID, string(c.kind), c.updatedAt
		}
		if _, err := p.tx.Exec(ctx, `INSERT INTO changes (seq, platform, order_id, updated_at, kind, committed_at)
			SELECT s, p, o, u, k, $6 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::text[]) AS t(s, p, o, u, k)`,
			seqs, platforms, ids, updated, kinds, now); err != nil {
			return fmt.Errorf("append %d changes: %w", len(chunk), err)
		}
	}
	return nil
}

// pgChangesSQL reads a page of changes with their orders and lines in one
// statement (one snapshot), so each order's lines belong to the version
// beside them.
const pgChangesSQL = `SELECT c.seq, c.platform, c.order_id, c.updated_at, c.kind, c.committed_at,
	o.status, o.created_at, o.updated_at, o.currency, o.total, o.line_count, o.raw, o.canonical, o.first_seen_at, o.last_seen_at,
	o.lines_digest IS NOT NULL,
	l.line_id, l.sku, l.title, l.quantity, l.unit_price, l.currency
	FROM (SELECT * FROM changes WHERE seq > $1 AND ($2 = '' OR platform = $2) AND (cardinality($4::bigint[]) = 0 OR seq = ANY($4))
		ORDER BY seq LIMIT $3) c
	JOIN orders o ON o.platform = c.platform AND o.order_id = c.order_id
	LEFT JOIN order_lines l ON o.lines_digest IS NOT NULL AND l.platform = o.platform AND l.order_id = o.order_id
	ORDER BY c.seq, l.position`

func (s *postgresStore) Changes(ctx context.Context, q ChangeQuery) ([]Change, error) {
	q, err := q.check()
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	seqs := q.Seqs
	if seqs == nil {
		seqs = []int64{}
	}
	if q.KeysOnly {
		return s.changeKeys(ctx, q, seqs)
	}
	rows, err := s.pool.Query(ctx, pgChangesSQL, q.After, q.Platform, q.Limit, seqs)
	if err != nil {
		return nil, fmt.Errorf("read changes after %d: %w", q.After, err)
	}
	defer rows.Close()
	var out changeRows
	var (
		ch                                  Change
		kind                                string
		lineCount                           int64
		raw, canonical                      []byte
		lineID, sku, title, price, currency *string
		quantity                            *int64
	)
	o := &ch.Order
	dest := []any{&ch.Seq, &ch.Platform, &ch.OrderID, &ch.UpdatedAt, &kind, &ch.CommittedAt,
		&o.Status, &o.CreatedAt, &o.UpdatedAt, &o.Currency, &o.Total, &lineCount, &raw, &canonical, &o.FirstSeenAt, &o.LastSeenAt, &o.HasLines,
		&lineID, &sku, &title, &quantity, &price, &currency}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		c := ch
		c.Kind, c.UpdatedAt, c.CommittedAt = ChangeKind(kind), c.UpdatedAt.UTC(), c.CommittedAt.UTC()
		c.Order.Platform, c.Order.ID, c.Order.LineCount = c.Platform, c.OrderID, int(lineCount)
		c.Order.CreatedAt, c.Order.UpdatedAt = c.Order.CreatedAt.UTC(), c.Order.UpdatedAt.UTC()
		c.Order.FirstSeenAt, c.Order.LastSeenAt = c.Order.FirstSeenAt.UTC(), c.Order.LastSeenAt.UTC()
		c.Order.Raw, c.Order.Lines = nil, nil
		if len(raw) > 0 {
			c.Order.Raw = append([]byte(nil), raw...)
		}
		c.Order.Canonical = decodeCanonical(canonical)
		var line *order.Line
		if lineID != nil {
			line = &order.Line{ID: *lineID, SKU: *sku, Title: *title, Quantity: *quantity, UnitPrice: *price, Currency: *currency}
		}
		out.add(c, line)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read changes after %d: %w", q.After, err)
	}
	return out.out, nil
}

// pgChangeKeysSQL lists changes without their orders (KeysOnly).
const pgChangeKeysSQL = `SELECT seq, platform, order_id, updated_at, kind, committed_at FROM changes
	WHERE seq > $1 AND ($2 = '' OR platform = $2) AND (cardinality($4::bigint[]) = 0 OR seq = ANY($4))
	ORDER BY seq LIMIT $3`

func (s *postgresStore) changeKeys(ctx context.Context, q ChangeQuery, seqs []int64) ([]Change, error) {
	rows, err := s.pool.Query(ctx, pgChangeKeysSQL, q.After, q.Platform, q.Limit, seqs)
	if err != nil {
		return nil, fmt.Errorf("list changes after %d: %w", q.After, err)
	}
	var out []Change
	var ch Change
	var kind string
	_, err = pgx.ForEachRow(rows, []any{&ch.Seq, &ch.Platform, &ch.OrderID, &ch.UpdatedAt, &kind, &ch.CommittedAt}, func() error {
		c := ch
		c.Kind, c.UpdatedAt, c.CommittedAt = ChangeKind(kind), c.UpdatedAt.UTC(), c.CommittedAt.UTC()
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list changes after %d: %w", q.After, err)
	}
	return out, nil
}

func (s *postgresStore) CountChanges(ctx context.Context, platform string, after, upTo int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM changes WHERE seq > $1 AND seq <= $2 AND ($3 = '' OR platform = $3)`,
		after, upTo, platform).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count changes of %q in (%d, %d]: %w", platform, after, upTo, err)
	}
	return n, nil
}

func (s *postgresStore) CountChangesCommittedBefore(ctx context.Context, platform string, after int64, before time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM changes WHERE seq > $1 AND committed_at < $2 AND ($3 = '' OR platform = $3)`,
		after, before, platform).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count changes of %q after %d committed before %s: %w", platform, after, before.Format(time.RFC3339), err)
	}
	return n, nil
}

func (s *postgresStore) Head(ctx context.Context) (FeedHead, error) {
	var h FeedHead
	// The counter is read without its lock: an append in progress has not
	// committed its numbers, so the committed value is the newest visible.
	err := s.pool.QueryRow(ctx, `SELECT (SELECT last FROM change_counter WHERE id = 1), (SELECT count(*) FROM changes)`).
		Scan(&h.LastSeq, &h.Retained)
	if err != nil {
		return FeedHead{}, fmt.Errorf("read feed head: %w", err)
	}
	return h, nil
}

func (s *postgresStore) AckChanges(ctx context.Context, consumer string, seq int64) error {
	if consumer == "" || seq < 0 {
		return fmt.Errorf("ack %d for consumer %q: %w", seq, consumer, ErrBadQuery)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO feed_consumers (name, acked_seq, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET acked_seq = GREATEST(feed_consumers.acked_seq, excluded.acked_seq), updated_at = now()`,
		consumer, seq)
	if err != nil {
		return fmt.Errorf("ack %d for consumer %q: %w", seq, consumer, err)
	}
	return nil
}

func (s *postgresStore) ReleaseConsumer(ctx context.Context, consumer string) (bool, error) {
	if consumer == "" {
		return false, fmt.Errorf("release consumer %q: %w", consumer, ErrBadQuery)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM feed_consumers WHERE name = $1`, consumer)
	if err != nil {
		return false, fmt.Errorf("release consumer %q: %w", clipID(consumer), err)
	}
	return tag.RowsAffected() > 0, nil
}

func (s *postgresStore) Acks(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, acked_seq FROM feed_consumers`)
	if err != nil {
		return nil, fmt.Errorf("read feed consumers: %w", err)
	}
	out := map[string]int64{}
	var name string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &seq}, func() error { out[name] = seq; return nil }); err != nil {
		return nil, fmt.Errorf("read feed consumers: %w", err)
	}
	return out, nil
}

func (s *postgresStore) CompactChanges(ctx context.Context, c Compaction) (int64, error) {
	var removed int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name, acked_seq FROM feed_consumers`)
		if err != nil {
			return err
		}
		acks := map[string]int64{}
		var name string
		var seq int64
		if _, err := pgx.ForEachRow(rows, []any{&name, &seq}, func() error { acks[name] = seq; return nil }); err != nil {
			return err
		}
		var head int64
		if err := tx.QueryRow(ctx, `SELECT last FROM change_counter WHERE id = 1`).Scan(&head); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM changes WHERE seq <= $1 AND committed_at < $2`, compactUpTo(acks, c.Consumers, head), c.Before)
		removed = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("compact changes: %w", err)
	}
	return removed, nil
}
