package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the store's pure-Go SQLite driver
)

// sqliteParams match the store's: WAL and a busy timeout, so worker
// processes on one host share the file without "database is locked".
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"

// sqliteReserve is one atomic statement, so concurrent processes need no
// explicit transaction: SQLite runs writers one at a time. The WHERE leaves
// the row alone when the slot would be too far away.
const sqliteReserve = `
INSERT INTO ordersync_request_slots (key, tat_us) VALUES (?1, ?2 + ?3)
ON CONFLICT (key) DO UPDATE SET tat_us = max(tat_us, ?2) + ?3
WHERE max(?2, tat_us - ?4) - ?2 <= ?5
RETURNING tat_us`

type sqliteSlots struct {
	db  *sql.DB
	now func() time.Time
}

func openSQLite(ctx context.Context, path string) (Slots, error) {
	if path == "" || strings.Contains(path, "?") {
		return nil, fmt.Errorf("request slots: bad sqlite path %q", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("request slots in %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", path+"?"+sqliteParams)
	if err != nil {
		return nil, fmt.Errorf("request slots in %s: %w", path, err)
	}
	// One connection: this process's reservations queue in Go rather
	// than contending for SQLite's write lock with each other.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ordersync_request_slots (
		key TEXT PRIMARY KEY, tat_us INTEGER NOT NULL)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("request slots in %s: create table: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, createPointsTable); err != nil {
		db.Close()
		return nil, fmt.Errorf("request slots in %s: create points table: %w", path, err)
	}
	return &sqliteSlots{db: db, now: time.Now}, nil
}

// Reserve implements Slots. SQLite is one host's file, so the local clock
// is every process's clock.
func (s *sqliteSlots) Reserve(ctx context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error) {
	interval, tolerance, limit, err := params(rps, burst, maxWait)
	if err != nil {
		return 0, err
	}
	return s.reserve(ctx, key, interval, tolerance, limit)
}

func (s *sqliteSlots) reserve(ctx context.Context, key string, inc, tolerance, limit int64) (time.Duration, error) {
	now := s.now().UnixMicro()
	var tat int64
	err := s.db.QueryRowContext(ctx, sqliteReserve, key, now, inc, tolerance, limit).Scan(&tat)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNoSlot
	}
	if err != nil {
		return 0, fmt.Errorf("reserve request slot for %s: %w", key, err)
	}
	return wait(tat, now, inc, tolerance), nil
}

func (s *sqliteSlots) Close() error { return s.db.Close() }

// ReservePoints implements Points.
func (s *sqliteSlots) ReservePoints(ctx context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	var d time.Duration
	err := s.withPoints(ctx, key, func(r *pointsRow, now int64) error {
		var err error
		d, err = r.reserve(b, cost, now, maxWait.Microseconds())
		return err
	})
	return d, err
}

// SettlePoints implements Points.
func (s *sqliteSlots) SettlePoints(ctx context.Context, key string, b Budget, delta, deficit float64) error {
	return s.withPoints(ctx, key, func(r *pointsRow, now int64) error { return r.settle(b, delta, deficit, now) })
}

// withPoints runs op on key's points row in one IMMEDIATE transaction, so
// processes sharing the file read and write the row one at a time; an
// error from op writes nothing.
func (s *sqliteSlots) withPoints(ctx context.Context, key string, op func(*pointsRow, int64) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	done := false
	defer func() {
		if !done {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var r pointsRow
	pending := "[]"
	err = conn.QueryRowContext(ctx, `SELECT tat_us, floor_us, pending, per_point, rate, capacity FROM ordersync_points_budgets WHERE key = ?`, key).
		Scan(&r.tat, &r.floor, &pending, &r.perPoint, &r.stated.Rate, &r.stated.Capacity)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	r.decodePending(pending)
	if err := op(&r, s.now().UnixMicro()); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, upsertPoints, key, r.tat, r.floor, r.encodePending(), r.perPoint, r.stated.Rate, r.stated.Capacity); err != nil {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("points budget %s: %w", key, err)
	}
	done = true
	return nil
}
