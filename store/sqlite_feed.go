package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/order"
)

// appendChanges numbers changes with AUTOINCREMENT: SQLite has one writer
// at a time, so numbering order is commit order.
func (o *sqliteOps) appendChanges(ctx context.Context, changes []pendingChange, now time.Time) error {
	if err := o.prepare(ctx, &o.appendChange, `INSERT INTO changes (platform, order_id, updated_at, kind, committed_at)
		VALUES (?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	rctx := rowCtx(ctx)
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := o.appendChange.ExecContext(rctx, c.platform, c.orderID, c.updatedAt.UnixMicro(), string(c.kind), now.UnixMicro()); err != nil {
			return fmt.Errorf("append change of %s/%s: %w", c.platform, c.orderID, err)
		}
	}
	return nil
}

// sqliteChangesSQL reads a page of changes with their orders and lines in
// one statement, so each order's lines belong to the version beside them.
const sqliteChangesSQL = `SELECT c.seq, c.platform, c.order_id, c.updated_at, c.kind, c.committed_at,
	o.status, o.created_at, o.updated_at, o.currency, o.total, o.line_count, o.raw, o.canonical, o.first_seen_at, o.last_seen_at,
	o.lines_digest IS NOT NULL,
	l.line_id, l.sku, l.title, l.quantity, l.unit_price, l.currency
	FROM (SELECT * FROM changes WHERE seq > ? %s ORDER BY seq LIMIT ?) c
	JOIN orders o ON o.platform = c.platform AND o.order_id = c.order_id
	LEFT JOIN order_lines l ON o.lines_digest IS NOT NULL AND l.platform = o.platform AND l.order_id = o.order_id
	ORDER BY c.seq, l.position`

// sqliteChangeKeysSQL lists changes without their orders (KeysOnly).
const sqliteChangeKeysSQL = `SELECT seq, platform, order_id, updated_at, kind, committed_at FROM changes WHERE seq > ? %s ORDER BY seq LIMIT ?`

// sqliteChangeFilter is the WHERE clause beyond seq > ? for q, and its
// arguments; a seq list travels as one JSON array.
func sqliteChangeFilter(q ChangeQuery) (string, []any, error) {
	var where string
	var args []any
	if q.Platform != "" {
		where, args = where+" AND platform = ?", append(args, q.Platform)
	}
	if len(q.Seqs) > 0 {
		list, err := json.Marshal(q.Seqs)
		if err != nil {
			return "", nil, err
		}
		where, args = where+" AND seq IN (SELECT value FROM json_each(?))", append(args, string(list))
	}
	return where, args, nil
}

func (s *sqliteStore) Changes(ctx context.Context, q ChangeQuery) ([]Change, error) {
	q, err := q.check()
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	where, filterArgs, err := sqliteChangeFilter(q)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	args := append(append([]any{q.After}, filterArgs...), q.Limit)
	if q.KeysOnly {
		return s.changeKeys(ctx, fmt.Sprintf(sqliteChangeKeysSQL, where), args, q.After)
	}
	query := fmt.Sprintf(sqliteChangesSQL, where)
	var out changeRows
	err = s.withPool(ctx, func(p *sqlitePool) error {
		out = changeRows{}
		rows, err := p.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ch Change
			var kind string
			var cUpdated, committed, first, last int64
			var lineID, sku, title, price, currency sql.NullString
			var quantity sql.NullInt64
			ch.Order.Order = order.Order{}
			if err := scanSQLiteChange(rows, &ch, &kind, &cUpdated, &committed, &first, &last, &lineID, &sku, &title, &quantity, &price, &currency); err != nil {
				return err
			}
			ch.Kind, ch.UpdatedAt, ch.CommittedAt = ChangeKind(kind), fromMicros(cUpdated), fromMicros(committed)
			ch.Order.Platform, ch.Order.ID = ch.Platform, ch.OrderID
			ch.Order.FirstSeenAt, ch.Order.LastSeenAt = fromMicros(first), fromMicros(last)
			var line *order.Line
			if lineID.Valid {
				line = &order.Line{ID: lineID.String, SKU: sku.String, Title: title.String,
					Quantity: quantity.Int64, UnitPrice: price.String, Currency: currency.String}
			}
			out.add(ch, line)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read changes after %d: %w", q.After, err)
	}
	return out.out, nil
}

func (s *sqliteStore) changeKeys(ctx context.Context, query string, args []any, after int64) ([]Change, error) {
	out, err := queryAll(ctx, s, query, args, func(rows *sql.Rows) (Change, error) {
		var ch Change
		var kind string
		var updated, committed int64
		if err := rows.Scan(&ch.Seq, &ch.Platform, &ch.OrderID, &updated, &kind, &committed); err != nil {
			return ch, err
		}
		ch.Kind, ch.UpdatedAt, ch.CommittedAt = ChangeKind(kind), fromMicros(updated), fromMicros(committed)
		return ch, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list changes after %d: %w", after, err)
	}
	return out, nil
}

func scanSQLiteChange(rows *sql.Rows, ch *Change, kind *string, cUpdated, committed, first, last *int64, rest ...any) error {
	var created, updated int64
	var raw, canonical []byte
	o := &ch.Order
	dest := append([]any{&ch.Seq, &ch.Platform, &ch.OrderID, cUpdated, kind, committed,
		&o.Status, &created, &updated, &o.Currency, &o.Total, &o.LineCount, &raw, &canonical, first, last, &o.HasLines}, rest...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(created), fromMicros(updated)
	if len(raw) > 0 {
		o.Raw = raw
	}
	o.Canonical = decodeCanonical(canonical)
	return nil
}

func (s *sqliteStore) CountChanges(ctx context.Context, platform string, after, upTo int64) (int64, error) {
	var n int64
	err := s.withPool(ctx, func(p *sqlitePool) error {
		return p.db.QueryRowContext(ctx, `SELECT count(*) FROM changes WHERE seq > ? AND seq <= ? AND (? = '' OR platform = ?)`,
			after, upTo, platform, platform).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count changes of %q in (%d, %d]: %w", platform, after, upTo, err)
	}
	return n, nil
}

func (s *sqliteStore) CountChangesCommittedBefore(ctx context.Context, platform string, after int64, before time.Time) (int64, error) {
	var n int64
	err := s.withPool(ctx, func(p *sqlitePool) error {
		return p.db.QueryRowContext(ctx, `SELECT count(*) FROM changes WHERE seq > ? AND committed_at < ? AND (? = '' OR platform = ?)`,
			after, before.UnixMicro(), platform, platform).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count changes of %q after %d committed before %s: %w", platform, after, before.Format(time.RFC3339), err)
	}
	return n, nil
}

func (s *sqliteStore) Head(ctx context.Context) (FeedHead, error) {
	var h FeedHead
	err := s.withPool(ctx, func(p *sqlitePool) error {
		// sqlite_sequence keeps the highest seq handed out even when
		// compaction removed it; it has no row before the first append.
		return p.db.QueryRowContext(ctx, `SELECT
			coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0),
			(SELECT count(*) FROM changes)`).Scan(&h.LastSeq, &h.Retained)
	})
	if err != nil {
		return FeedHead{}, fmt.Errorf("read feed head: %w", err)
	}
	return h, nil
}

func (s *sqliteStore) AckChanges(ctx context.Context, consumer string, seq int64) error {
	if consumer == "" || seq < 0 {
		return fmt.Errorf("ack %d for consumer %q: %w", seq, consumer, ErrBadQuery)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.withPool(ctx, func(p *sqlitePool) error {
		_, err := p.db.ExecContext(ctx, `INSERT INTO feed_consumers (name, acked_seq, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET acked_seq = max(acked_seq, excluded.acked_seq), updated_at = excluded.updated_at`,
			consumer, seq, s.now().UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("ack %d for consumer %q: %w", seq, consumer, err)
	}
	return nil
}

func (s *sqliteStore) ReleaseConsumer(ctx context.Context, consumer string) (bool, error) {
	if consumer == "" {
		return false, fmt.Errorf("release consumer %q: %w", consumer, ErrBadQuery)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var n int64
	err := s.withPool(ctx, func(p *sqlitePool) error {
		res, err := p.db.ExecContext(ctx, `DELETE FROM feed_consumers WHERE name = ?`, consumer)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("release consumer %q: %w", clipID(consumer), err)
	}
	return n > 0, nil
}

func (s *sqliteStore) Acks(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.withPool(ctx, func(p *sqlitePool) error {
		rows, err := p.db.QueryContext(ctx, `SELECT name, acked_seq FROM feed_consumers`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var seq int64
			if err := rows.Scan(&name, &seq); err != nil {
				return err
			}
			out[name] = seq
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read feed consumers: %w", err)
	}
	return out, nil
}

func (s *sqliteStore) CompactChanges(ctx context.Context, c Compaction) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var removed int64
	err := s.withPool(ctx, func(p *sqlitePool) error {
		// One IMMEDIATE transaction: acks read here cannot move backwards
		// (they only grow) and no append interleaves.
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		// Not deferred, as in upsert: see guard.
		if removed, err = compactSQLite(ctx, tx, c); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return 0, fmt.Errorf("compact changes: %w", err)
	}
	return removed, nil
}

func compactSQLite(ctx context.Context, tx *sql.Tx, c Compaction) (int64, error) {
	acks := map[string]int64{}
	rows, err := tx.QueryContext(ctx, `SELECT name, acked_seq FROM feed_consumers`)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			rows.Close()
			return 0, err
		}
		acks[name] = seq
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM changes`).Scan(&head); err != nil {
		return 0, err
	}
	upTo := compactUpTo(acks, c.Consumers, head)
	res, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE seq <= ? AND committed_at < ?`, upTo, c.Before.UnixMicro())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
