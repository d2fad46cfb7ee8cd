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

// ReservePoints implements Points.
func (s *sqliteSlots) ReservePoints(ctx context.Context, key string, b Budget, cost float64, maxWait time.Duration) (time.Duration, error) {
	inc, tolerance, limit, err := pointParams(b, cost, maxWait)
	if err != nil {
		return 0, err
	}
	return s.reserve(ctx, key, inc, tolerance, limit)
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

// sqliteSettle moves a budget's TAT by a correction (?3, negative for a
// refund) and to at least now + the reported deficit (?4), never before now.
const sqliteSettle = `
INSERT INTO ordersync_request_slots (key, tat_us) VALUES (?1, max(?2 + ?3, ?2 + ?4))
ON CONFLICT (key) DO UPDATE SET tat_us = max(max(tat_us, ?2) + ?3, ?2 + ?4)`

// SettlePoints implements Points.
func (s *sqliteSlots) SettlePoints(ctx context.Context, key string, b Budget, delta, deficit float64) error {
	d, floor, err := settleParams(b, delta, deficit)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, sqliteSettle, key, s.now().UnixMicro(), d, floor); err != nil {
		return fmt.Errorf("settle points of %s: %w", key, err)
	}
	return nil
}

func (s *sqliteSlots) Close() error { return s.db.Close() }
