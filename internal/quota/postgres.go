package quota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresReserve reads the clock of the database, not of the worker: the
// workers may run on many hosts, and one whose clock runs ahead would
// otherwise send early. now() is fixed for the statement, so the booking
// and the returned clock reading agree.
const postgresReserve = `
INSERT INTO ordersync_request_slots AS s (key, tat_us)
VALUES ($1, (extract(epoch FROM now()) * 1000000)::bigint + $2::bigint)
ON CONFLICT (key) DO UPDATE SET tat_us = GREATEST(s.tat_us, EXCLUDED.tat_us - $2::bigint) + $2::bigint
WHERE GREATEST(EXCLUDED.tat_us - $2::bigint, s.tat_us - $3::bigint) - (EXCLUDED.tat_us - $2::bigint) <= $4::bigint
RETURNING s.tat_us, (extract(epoch FROM now()) * 1000000)::bigint`

type postgresSlots struct{ pool *pgxpool.Pool }

// createLockKey serializes the table's creation: CREATE TABLE IF NOT EXISTS
// is not safe against itself in PostgreSQL, and worker processes starting
// together on a new database met "duplicate key value violates unique
// constraint pg_type_typname_nsp_index".
const createLockKey int64 = 0x6f72_6465_7273_6c6f // "orderslo": not the store's migration lock

const createTable = `CREATE TABLE IF NOT EXISTS ordersync_request_slots (
	key TEXT PRIMARY KEY, tat_us BIGINT NOT NULL)`

func openPostgres(ctx context.Context, dsn string) (Slots, error) {
	cfg, err := pgxpool.ParseConfig(dsn) // its errors redact the password
	if err != nil {
		return nil, fmt.Errorf("request slots: %w", err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("request slots: %w", err)
	}
	// No DDL when the tables exist: a role with only SELECT, INSERT,
	// UPDATE and DELETE (no CREATE on the schema) opens a migrated store.
	var exists bool
	err = pool.QueryRow(ctx, `SELECT to_regclass('ordersync_request_slots') IS NOT NULL
		AND to_regclass('ordersync_points_budgets') IS NOT NULL`).Scan(&exists)
	if err != nil || exists {
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("request slots: %w", err)
		}
		return &postgresSlots{pool: pool}, nil
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, createTable); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, createPointsTable)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("request slots: create table: %w (run `ordersync migrate` with a role that has CREATE on the schema)", err)
	}
	return &postgresSlots{pool: pool}, nil
}

// Reserve implements Slots.
func (s *postgresSlots) Reserve(ctx context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error) {
	interval, tolerance, limit, err := params(rps, burst, maxWait)
	if err != nil {
		return 0, err
	}
	return s.reserve(ctx, key, interval, tolerance, limit)
}

func (s *postgresSlots) reserve(ctx context.Context, key string, inc, tolerance, limit int64) (time.Duration, error) {
	var tat, now int64
	err := s.pool.QueryRow(ctx, postgresReserve, key, inc, tolerance, limit).Scan(&tat, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNoSlot
	}
	if err != nil {
		return 0, fmt.Errorf("reserve request slot for %s: %w", key, err)
	}
	return wait(tat, now, inc, tolerance), nil
}

func (s *postgresSlots) Close() error {
	s.pool.Close()
	return nil
}

// ReservePoints implements Points.
func (s *postgresSlots) ReservePoints(ctx context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	var d time.Duration
	err := s.withPoints(ctx, key, func(r *pointsRow, now int64) error {
		var err error
		d, err = r.reserve(b, cost, now, maxWait.Microseconds())
		return err
	})
	return d, err
}

// SettlePoints implements Points.
func (s *postgresSlots) SettlePoints(ctx context.Context, key string, b Budget, delta, deficit float64) error {
	return s.withPoints(ctx, key, func(r *pointsRow, now int64) error { return r.settle(b, delta, deficit, now) })
}

// withPoints runs op on key's points row, locked for the transaction, on
// the database's clock (workers on many hosts share it); an error from op
// writes nothing.
func (s *postgresSlots) withPoints(ctx context.Context, key string, op func(*pointsRow, int64) error) error {
	var opErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ordersync_points_budgets (key, tat_us, floor_us, pending, per_point, rate, capacity)
			VALUES ($1, 0, 0, '[]', 0, 0, 0) ON CONFLICT (key) DO NOTHING`, key); err != nil {
			return err
		}
		var r pointsRow
		var now int64
		var pending string
		if err := tx.QueryRow(ctx, `SELECT tat_us, floor_us, pending, per_point, rate, capacity, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
			FROM ordersync_points_budgets WHERE key = $1 FOR UPDATE`, key).
			Scan(&r.tat, &r.floor, &pending, &r.perPoint, &r.stated.Rate, &r.stated.Capacity, &now); err != nil {
			return err
		}
		r.decodePending(pending)
		if opErr = op(&r, now); opErr != nil {
			return opErr
		}
		_, err := tx.Exec(ctx, `UPDATE ordersync_points_budgets SET tat_us = $2, floor_us = $3, pending = $4, per_point = $5, rate = $6, capacity = $7 WHERE key = $1`,
			key, r.tat, r.floor, r.encodePending(), r.perPoint, r.stated.Rate, r.stated.Capacity)
		return err
	})
	if opErr != nil {
		return opErr
	}
	if err != nil {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	return nil
}
