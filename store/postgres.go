package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ordersync/ordersync/connectors"
)

// migrationLockKey is the advisory lock that serializes schema migrations
// when several processes open the same database at once.
const migrationLockKey int64 = 0x6f72_6465_7273_796e // "ordersyn"

// pgChunk bounds how many statements go into one pipelined round trip.
const pgChunk = 500

// pgMaxAttempts bounds retries of a batch that PostgreSQL aborted as a
// deadlock or serialization failure. Sorted lock order should make those
// impossible; the retry is a safety net, not the mechanism.
const pgMaxAttempts = 5

type postgresStore struct {
	pool       *pgxpool.Pool
	now        func() time.Time
	futureSkew time.Duration // see WithFutureSkew
}

func openPostgres(ctx context.Context, dsn string, o options) (Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn) // its errors redact the password
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	s := &postgresStore{pool: pool, now: time.Now, futureSkew: o.futureSkew}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	return s, nil
}

// migrate applies pending migrations in one transaction holding an advisory
// lock, so concurrent openers run them once and the others find them done.
func (s *postgresStore) migrate(ctx context.Context) error {
	migs, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("migrate: create schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("migrate: read applied versions: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("migrate: read applied versions: %w", err)
		}
		applied := map[int]bool{}
		for _, v := range versions {
			applied[int(v)] = true
		}
		for _, m := range pendingMigrations(migs, applied) {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate: apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("migrate: record %s: %w", m.name, err)
			}
		}
		return nil
	})
}

func (s *postgresStore) UpsertOrders(ctx context.Context, orders []connectors.Order) (UpsertResult, error) {
	if err := validate(orders); err != nil {
		return UpsertResult{}, fmt.Errorf("upsert %d orders: %w", len(orders), err)
	}
	if len(orders) == 0 {
		return UpsertResult{}, nil
	}
	for attempt := 1; ; attempt++ {
		var res UpsertResult
		now := toMicros(s.now())
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			res, err = applyBatch(ctx, pgOps{tx}, orders, now, now.Add(s.futureSkew))
			return err
		})
		if err == nil {
			return res, nil
		}
		if attempt >= pgMaxAttempts || !retryable(err) || ctx.Err() != nil {
			return UpsertResult{}, fmt.Errorf("upsert %d orders (attempt %d): %w", len(orders), attempt, err)
		}
	}
}

// retryable reports deadlock_detected and serialization_failure, after
// which PostgreSQL expects the whole transaction to be run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// pgOps pipelines each step of a round into one round trip per chunk.
type pgOps struct{ tx pgx.Tx }

// claimSQL inserts a new order or, for a known key, only bumps last_seen_at;
// either way the row is locked until commit and the content it returns is
// the newest committed version, as ON CONFLICT DO UPDATE always sees it.
// xmax = 0 marks a row version created by INSERT rather than UPDATE.
const claimSQL = `INSERT INTO orders AS o
	(platform, order_id, status, created_at, updated_at, currency, total, line_count, raw, first_seen_at, last_seen_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
	ON CONFLICT (platform, order_id) DO UPDATE SET last_seen_at = GREATEST(o.last_seen_at, excluded.last_seen_at)
	RETURNING (o.xmax = 0), o.status, o.created_at, o.updated_at, o.currency, o.total, o.line_count, o.raw`

func (p pgOps) claim(ctx context.Context, orders []connectors.Order, now time.Time) ([]claimResult, error) {
	out := make([]claimResult, 0, len(orders))
	for start := 0; start < len(orders); start += pgChunk {
		chunk := orders[start:min(start+pgChunk, len(orders))]
		b := &pgx.Batch{}
		for _, o := range chunk {
			b.Queue(claimSQL, o.Platform, o.ID, o.Status, o.CreatedAt, o.UpdatedAt, o.Currency, o.Total, int64(o.LineCount), rawArg(o.Raw), now)
		}
		br := p.tx.SendBatch(ctx, b)
		for _, o := range chunk {
			var c claimResult
			c.stored = connectors.Order{Platform: o.Platform, ID: o.ID}
			var lineCount int64
			var raw []byte
			err := br.QueryRow().Scan(&c.inserted, &c.stored.Status, &c.stored.CreatedAt, &c.stored.UpdatedAt,
				&c.stored.Currency, &c.stored.Total, &lineCount, &raw)
			if err != nil {
				br.Close()
				return nil, fmt.Errorf("claim %s/%s: %w", o.Platform, o.ID, err)
			}
			c.stored.LineCount = int(lineCount)
			c.stored.CreatedAt, c.stored.UpdatedAt = c.stored.CreatedAt.UTC(), c.stored.UpdatedAt.UTC()
			if len(raw) > 0 {
				c.stored.Raw = raw
			}
			out = append(out, c)
		}
		if err := br.Close(); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
	}
	return out, nil
}

func (p pgOps) overwrite(ctx context.Context, orders []connectors.Order, now time.Time) error {
	for start := 0; start < len(orders); start += pgChunk {
		chunk := orders[start:min(start+pgChunk, len(orders))]
		b := &pgx.Batch{}
		for _, o := range chunk {
			b.Queue(`UPDATE orders SET
				status = $3, created_at = $4, updated_at = $5, currency = $6, total = $7, line_count = $8, raw = $9,
				last_seen_at = GREATEST(last_seen_at, $10)
				WHERE platform = $1 AND order_id = $2`,
				o.Platform, o.ID, o.Status, o.CreatedAt, o.UpdatedAt, o.Currency, o.Total, int64(o.LineCount), rawArg(o.Raw), now)
		}
		if err := p.tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("update %d orders: %w", len(chunk), err)
		}
	}
	return nil
}

func (s *postgresStore) GetOrder(ctx context.Context, platform, id string) (StoredOrder, bool, error) {
	so := StoredOrder{Order: connectors.Order{Platform: platform, ID: id}}
	var lineCount int64
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT status, created_at, updated_at, currency, total, line_count, raw, first_seen_at, last_seen_at
		FROM orders WHERE platform = $1 AND order_id = $2`, platform, id).
		Scan(&so.Status, &so.CreatedAt, &so.UpdatedAt, &so.Currency, &so.Total, &lineCount, &raw, &so.FirstSeenAt, &so.LastSeenAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredOrder{}, false, nil
	}
	if err != nil {
		return StoredOrder{}, false, fmt.Errorf("get order %s/%s: %w", platform, id, err)
	}
	so.LineCount = int(lineCount)
	if len(raw) > 0 {
		so.Raw = raw
	}
	// pgx returns timestamptz in the local zone; the store promises UTC.
	so.CreatedAt, so.UpdatedAt = so.CreatedAt.UTC(), so.UpdatedAt.UTC()
	so.FirstSeenAt, so.LastSeenAt = so.FirstSeenAt.UTC(), so.LastSeenAt.UTC()
	return so, true, nil
}

func (s *postgresStore) OrderVersions(ctx context.Context, platform string) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT order_id, updated_at FROM orders WHERE platform = $1`, platform)
	if err != nil {
		return nil, fmt.Errorf("order versions %s: %w", platform, err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	var id string
	var updated time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &updated}, func() error {
		out[id] = updated.UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("order versions %s: %w", platform, err)
	}
	return out, nil
}

func (s *postgresStore) CountOrders(ctx context.Context, platform string) (int, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE $1 = '' OR platform = $1`, platform).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count orders %q: %w", platform, err)
	}
	return int(n), nil
}

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}

func (s *postgresStore) setClock(now func() time.Time) { s.now = now }
