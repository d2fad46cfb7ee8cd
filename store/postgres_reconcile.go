package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CountUpdated implements Reconciliation on PostgreSQL: an index-only
// range scan of orders_by_updated (platform, updated_at, order_id).
func (s *postgresStore) CountUpdated(ctx context.Context, platform string, from, to time.Time) (int, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE platform = $1 AND updated_at >= $2 AND updated_at < $3`,
		platform, time.UnixMicro(ceilMicros(from)).UTC(), time.UnixMicro(ceilMicros(to)).UTC()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count orders of %s updated in [%s, %s): %w", platform, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	}
	return int(n), nil
}

// SaveReconcileResult implements Reconciliation on PostgreSQL.
func (s *postgresStore) SaveReconcileResult(ctx context.Context, r ReconcileResult) error {
	if err := checkReconcileResult(r); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO reconcile_results (platform, window_start, window_end, check_kind, platform_count,
		precision, store_count, outcome, reprocessed, recount_platform, recount_store, checked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (platform, window_start, check_kind) DO UPDATE SET window_end = excluded.window_end,
		platform_count = excluded.platform_count, precision = excluded.precision, store_count = excluded.store_count,
		outcome = excluded.outcome, reprocessed = excluded.reprocessed, recount_platform = excluded.recount_platform,
		recount_store = excluded.recount_store, checked_at = excluded.checked_at`,
		r.Platform, toMicros(r.From), toMicros(r.To), r.Check, r.PlatformCount, r.Precision,
		r.StoreCount, r.Outcome, r.Reprocessed, r.RecountPlatform, r.RecountStore, toMicros(r.CheckedAt))
	if err != nil {
		return fmt.Errorf("save reconcile result of %s: %w", r.Platform, err)
	}
	return nil
}

// ReconcileResults implements Reconciliation on PostgreSQL.
func (s *postgresStore) ReconcileResults(ctx context.Context, platform string, limit int) ([]ReconcileResult, error) {
	rows, err := s.pool.Query(ctx, `SELECT platform, window_start, window_end, check_kind, platform_count, precision,
		store_count, outcome, reprocessed, recount_platform, recount_store, checked_at FROM reconcile_results
		WHERE $1 = '' OR platform = $1 ORDER BY checked_at DESC, platform, window_start DESC LIMIT $2`, platform, reconcileLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read reconcile results: %w", err)
	}
	var out []ReconcileResult
	var r ReconcileResult
	var pc, sc, rp, rs int64
	_, err = pgx.ForEachRow(rows, []any{&r.Platform, &r.From, &r.To, &r.Check, &pc, &r.Precision, &sc, &r.Outcome,
		&r.Reprocessed, &rp, &rs, &r.CheckedAt}, func() error {
		x := r
		x.PlatformCount, x.StoreCount, x.RecountPlatform, x.RecountStore = int(pc), int(sc), int(rp), int(rs)
		x.From, x.To, x.CheckedAt = x.From.UTC(), x.To.UTC(), x.CheckedAt.UTC()
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read reconcile results: %w", err)
	}
	return out, nil
}
