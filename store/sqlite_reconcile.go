package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// CountUpdated implements Reconciliation on SQLite.
func (s *sqliteStore) CountUpdated(ctx context.Context, platform string, from, to time.Time) (int, error) {
	var n int
	err := s.withPool(ctx, func(p *sqlitePool) error {
		return p.db.QueryRowContext(ctx, `SELECT count(*) FROM orders WHERE platform = ? AND updated_at >= ? AND updated_at < ?`,
			platform, ceilMicros(from), ceilMicros(to)).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count orders of %s updated in [%s, %s): %w", platform, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	}
	return n, nil
}

// SaveReconcileResult implements Reconciliation on SQLite.
func (s *sqliteStore) SaveReconcileResult(ctx context.Context, r ReconcileResult) error {
	if err := checkReconcileResult(r); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO reconcile_results (platform, window_start, window_end, check_kind, platform_count,
			precision, store_count, outcome, reprocessed, recount_platform, recount_store, checked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (platform, window_start, check_kind) DO UPDATE SET window_end = excluded.window_end,
			platform_count = excluded.platform_count, precision = excluded.precision, store_count = excluded.store_count,
			outcome = excluded.outcome, reprocessed = excluded.reprocessed, recount_platform = excluded.recount_platform,
			recount_store = excluded.recount_store, checked_at = excluded.checked_at`,
			r.Platform, toMicros(r.From).UnixMicro(), toMicros(r.To).UnixMicro(), r.Check, r.PlatformCount, r.Precision,
			r.StoreCount, r.Outcome, r.Reprocessed, r.RecountPlatform, r.RecountStore, toMicros(r.CheckedAt).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("save reconcile result of %s: %w", r.Platform, err)
	}
	return nil
}

// ReconcileResults implements Reconciliation on SQLite.
func (s *sqliteStore) ReconcileResults(ctx context.Context, platform string, limit int) ([]ReconcileResult, error) {
	var out []ReconcileResult
	err := s.withPool(ctx, func(p *sqlitePool) error {
		out = nil
		rows, err := p.db.QueryContext(ctx, `SELECT platform, window_start, window_end, check_kind, platform_count, precision,
			store_count, outcome, reprocessed, recount_platform, recount_store, checked_at FROM reconcile_results
			WHERE ? = '' OR platform = ? ORDER BY checked_at DESC, platform, window_start DESC LIMIT ?`, platform, platform, reconcileLimit(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r ReconcileResult
			var from, to, checked int64
			if err := rows.Scan(&r.Platform, &from, &to, &r.Check, &r.PlatformCount, &r.Precision, &r.StoreCount, &r.Outcome,
				&r.Reprocessed, &r.RecountPlatform, &r.RecountStore, &checked); err != nil {
				return err
			}
			r.From, r.To, r.CheckedAt = fromMicros(from), fromMicros(to), fromMicros(checked)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read reconcile results: %w", err)
	}
	return out, nil
}

// ceilMicros is t in Unix microseconds rounded up: [from, to) in
// nanoseconds selects the same stored (microsecond) times.
func ceilMicros(t time.Time) int64 {
	m := t.UTC().Truncate(time.Microsecond)
	if m.Before(t) {
		m = m.Add(time.Microsecond)
	}
	return m.UnixMicro()
}
