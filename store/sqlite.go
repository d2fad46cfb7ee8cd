package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync/order"
	_ "modernc.org/sqlite" // pure Go: no cgo, so ordersync stays a static binary
)

// sqliteParams configure every connection the pool opens.
//
// Concurrency choice: every transaction is BEGIN IMMEDIATE (_txlock), so it
// takes SQLite's write lock when it starts. A default (deferred) transaction
// that reads and then writes has to upgrade its lock, and a failed upgrade
// returns SQLITE_BUSY at once, which busy_timeout cannot cure; taking the
// lock up front turns that into plain waiting, which busy_timeout covers
// (10 s here, for another process holding the lock). Inside one process
// writeMu also queues writers in Go, so they never poll in SQLite's busy
// handler. WAL lets readers run while a writer works; synchronous=NORMAL is
// WAL's durable-on-commit-except-power-loss setting.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// sqliteStore keeps its connection pool behind sqlitePools (see
// sqlite_pool.go): a pool whose file was deleted, replaced or became
// unwritable is closed and reopened on the path, and a memory fault in the
// driver is turned into an error.
type sqliteStore struct {
	sqlitePools
	writeMu    sync.Mutex // one writer at a time within this process; see sqliteParams
	futureSkew time.Duration
}

func openSQLite(ctx context.Context, path string, o options) (Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite store: empty path")
	}
	if strings.Contains(path, "?") {
		// The driver would read everything after '?' as connection parameters.
		return nil, fmt.Errorf("open sqlite store %s: path must not contain '?'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: create directory: %w", path, err)
	}
	s := &sqliteStore{sqlitePools: newSQLitePools(path), futureSkew: o.futureSkew}
	var p *sqlitePool
	err := guard(func() error {
		var err error
		p, err = s.openPool(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	s.pool = p
	return s, nil
}

// migrateSQLite applies pending migrations in one IMMEDIATE transaction, so
// a second process opening the same file waits and then finds nothing to do.
func migrateSQLite(ctx context.Context, db *sql.DB, now time.Time) error {
	migs, err := loadMigrations("sqlite")
	if err != nil {
		return err
	}
	tx, err := beginMigration(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL -- Unix microseconds, UTC
	)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate: read applied versions: %w", err)
	}
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: read applied versions: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("migrate: read applied versions: %w", err)
	}
	for _, m := range pendingMigrations(migs, applied) {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, now.UnixMicro()); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

func (s *sqliteStore) UpsertOrders(ctx context.Context, orders []order.Order) (UpsertResult, error) {
	if err := validate(orders); err != nil {
		return UpsertResult{}, fmt.Errorf("upsert %d orders: %w", len(orders), err)
	}
	if len(orders) == 0 {
		return UpsertResult{}, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var res UpsertResult
	err := s.withPool(ctx, func(p *sqlitePool) error {
		var err error
		res, err = s.upsert(ctx, p, orders)
		return err
	})
	if err != nil {
		return UpsertResult{}, fmt.Errorf("upsert %d orders: %w", len(orders), err)
	}
	return res, nil
}

func (s *sqliteStore) upsert(ctx context.Context, p *sqlitePool, orders []order.Order) (UpsertResult, error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return UpsertResult{}, fmt.Errorf("begin: %w", err)
	}
	ops := &sqliteOps{tx: tx}
	// Not deferred: after a memory fault the connection is in an unknown
	// state, and a deferred rollback would call into it again while the
	// panic unwinds (see guard).
	abort := func(err error) (UpsertResult, error) {
		ops.close()
		_ = tx.Rollback()
		return UpsertResult{}, err
	}
	now := toMicros(s.now())
	res, err := applyBatch(ctx, ops, orders, now, now.Add(s.futureSkew))
	if err != nil {
		return abort(err)
	}
	// Inside the transaction, holding SQLite's write lock: a batch is never
	// committed to a file that is no longer at the path. A delete between
	// this check and the commit's end is caught by the second check below.
	if err := p.checkFile(s.path); err != nil {
		return abort(err)
	}
	ops.close()
	if err := tx.Commit(); err != nil {
		return UpsertResult{}, fmt.Errorf("commit: %w", err)
	}
	if err := p.checkFile(s.path); err != nil {
		// The batch may have gone to the old file only. Failing it makes
		// Temporal send it again, to the file at the path; upserts are
		// idempotent. What remains is a delete after this check: that
		// removes committed data like any other delete would.
		return UpsertResult{}, fmt.Errorf("after commit: %w", err)
	}
	return res, nil
}

// sqliteOps runs one row at a time: SQLite is in-process, so per-row
// statements cost no round trips.
//
// Per-row statements run with rowCtx, the batch's context without its
// cancellation: given a cancellable context, the driver starts a goroutine
// per statement to watch it (modernc.org/sqlite's interruptOnDone), which
// was 7% of B1's CPU (docs/performance.md). A statement on one row takes
// microseconds and never waits for another writer (the transaction took
// the write lock when it began), so the loops check the batch's context
// between rows instead, and database/sql rolls the transaction back,
// begun with that context, when it ends.
type sqliteOps struct {
	tx                           *sql.Tx
	insert, read, touch, rewrite *sql.Stmt
	deleteLines, insertLine      *sql.Stmt
	appendChange                 *sql.Stmt
}

func (o *sqliteOps) prepare(ctx context.Context, stmt **sql.Stmt, query string) error {
	if *stmt != nil {
		return nil
	}
	st, err := o.tx.PrepareContext(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	*stmt = st
	return nil
}

// rowCtx is what per-row statements run with: ctx without its
// cancellation (see sqliteOps).
func rowCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func (o *sqliteOps) close() {
	for _, st := range []*sql.Stmt{o.insert, o.read, o.touch, o.rewrite, o.deleteLines, o.insertLine, o.appendChange} {
		if st != nil {
			st.Close()
		}
	}
}

func (o *sqliteOps) claim(ctx context.Context, orders []row, now time.Time) ([]claimResult, error) {
	if err := o.prepare(ctx, &o.insert, `INSERT INTO orders
		(platform, order_id, status, created_at, updated_at, currency, total, line_count, raw, first_seen_at, last_seen_at, lines_digest, canonical, number)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (platform, order_id) DO NOTHING`); err != nil {
		return nil, err
	}
	// A separate SELECT and UPDATE rather than UPDATE ... RETURNING: SQLite
	// builds a temporary table for RETURNING, which made re-sent orders
	// about 2.5x slower in the 10,000-order test.
	if err := o.prepare(ctx, &o.read, `SELECT status, created_at, updated_at, currency, total, line_count, raw, canonical, lines_digest
		FROM orders WHERE platform = ? AND order_id = ?`); err != nil {
		return nil, err
	}
	if err := o.prepare(ctx, &o.touch, `UPDATE orders SET last_seen_at = max(last_seen_at, ?)
		WHERE platform = ? AND order_id = ?`); err != nil {
		return nil, err
	}
	out := make([]claimResult, len(orders))
	rctx := rowCtx(ctx)
	for i, ord := range orders {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := o.insert.ExecContext(rctx, ord.Platform, ord.ID, ord.Status, ord.CreatedAt.UnixMicro(), ord.UpdatedAt.UnixMicro(),
			ord.Currency, ord.Total, ord.LineCount, rawArg(ord.Raw), now.UnixMicro(), now.UnixMicro(), rawArg(ord.digest), rawArg(ord.canonical), ord.number)
		if err != nil {
			return nil, fmt.Errorf("insert %s/%s: %w", ord.Platform, ord.ID, err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return nil, fmt.Errorf("insert %s/%s: %w", ord.Platform, ord.ID, err)
		} else if n == 1 {
			out[i].inserted = true
			continue
		}
		stored := order.Order{Platform: ord.Platform, ID: ord.ID}
		var digest []byte
		if err := scanSQLiteContent(o.read.QueryRowContext(rctx, ord.Platform, ord.ID), &stored, &digest); err != nil {
			return nil, fmt.Errorf("read stored %s/%s: %w", ord.Platform, ord.ID, err)
		}
		if _, err := o.touch.ExecContext(rctx, now.UnixMicro(), ord.Platform, ord.ID); err != nil {
			return nil, fmt.Errorf("touch %s/%s: %w", ord.Platform, ord.ID, err)
		}
		out[i].stored, out[i].digest = stored, digestOf(digest)
	}
	return out, nil
}

func (o *sqliteOps) overwrite(ctx context.Context, orders []row, now time.Time) error {
	// coalesce: a version without lines keeps the stored lines, and so
	// their digest.
	if err := o.prepare(ctx, &o.rewrite, `UPDATE orders SET
		status = ?, created_at = ?, updated_at = ?, currency = ?, total = ?, line_count = ?, raw = ?,
		last_seen_at = max(last_seen_at, ?), lines_digest = coalesce(?, lines_digest), canonical = ?, number = ?
		WHERE platform = ? AND order_id = ?`); err != nil {
		return err
	}
	rctx := rowCtx(ctx)
	for _, ord := range orders {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := o.rewrite.ExecContext(rctx, ord.Status, ord.CreatedAt.UnixMicro(), ord.UpdatedAt.UnixMicro(), ord.Currency,
			ord.Total, ord.LineCount, rawArg(ord.Raw), now.UnixMicro(), rawArg(ord.digest), rawArg(ord.canonical), ord.number, ord.Platform, ord.ID); err != nil {
			return fmt.Errorf("update %s/%s: %w", ord.Platform, ord.ID, err)
		}
	}
	return nil
}

func (o *sqliteOps) replaceLines(ctx context.Context, orders []row) error {
	if err := o.prepare(ctx, &o.deleteLines, `DELETE FROM order_lines WHERE platform = ? AND order_id = ?`); err != nil {
		return err
	}
	if err := o.prepare(ctx, &o.insertLine, `INSERT INTO order_lines
		(platform, order_id, position, line_id, sku, title, quantity, unit_price, currency)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	rctx := rowCtx(ctx)
	for _, ord := range orders {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := o.deleteLines.ExecContext(rctx, ord.Platform, ord.ID); err != nil {
			return fmt.Errorf("delete lines of %s/%s: %w", ord.Platform, ord.ID, err)
		}
		for i, l := range ord.Lines {
			if _, err := o.insertLine.ExecContext(rctx, ord.Platform, ord.ID, i+1, l.ID, l.SKU, l.Title, l.Quantity, l.UnitPrice, l.Currency); err != nil {
				return fmt.Errorf("insert line %d of %s/%s: %w", i+1, ord.Platform, ord.ID, err)
			}
		}
	}
	return nil
}

// scanSQLiteContent reads status, created_at, updated_at, currency, total,
// line_count, raw, canonical (in that order) into o.
func scanSQLiteContent(row interface{ Scan(...any) error }, o *order.Order, extra ...any) error {
	var created, updated int64
	var raw, canonical []byte
	dest := append([]any{&o.Status, &created, &updated, &o.Currency, &o.Total, &o.LineCount, &raw, &canonical}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(created), fromMicros(updated)
	if len(raw) > 0 {
		o.Raw = raw
	}
	o.Canonical = decodeCanonical(canonical)
	return nil
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// digestOf keeps a stored digest as nil or a non-empty slice.
func digestOf(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// rawArg stores empty Raw (and a nil digest) as NULL so nil and empty
// compare alike.
func rawArg(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

func (s *sqliteStore) GetOrder(ctx context.Context, platform, id string) (StoredOrder, bool, error) {
	so := StoredOrder{Order: order.Order{Platform: platform, ID: id}}
	found := false
	err := s.withPool(ctx, func(p *sqlitePool) error {
		// A read transaction (deferred, not IMMEDIATE: it takes no write
		// lock) so the lines belong to the version read with them.
		tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		// Not deferred, as in upsert: see guard.
		found, err = sqliteGetOrder(ctx, tx, &so)
		_ = tx.Rollback()
		return err
	})
	if err != nil {
		return StoredOrder{}, false, fmt.Errorf("get order %s/%s: %w", platform, id, err)
	}
	if !found {
		return StoredOrder{}, false, nil
	}
	return so, true, nil
}

// sqliteGetOrder reads so's order and, when it has lines, its lines.
func sqliteGetOrder(ctx context.Context, tx *sql.Tx, so *StoredOrder) (bool, error) {
	platform, id := so.Platform, so.ID
	var first, last int64
	row := tx.QueryRowContext(ctx, `SELECT status, created_at, updated_at, currency, total, line_count, raw, canonical, first_seen_at, last_seen_at,
		lines_digest IS NOT NULL
		FROM orders WHERE platform = ? AND order_id = ?`, platform, id)
	if err := scanSQLiteContent(row, &so.Order, &first, &last, &so.HasLines); errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	so.FirstSeenAt, so.LastSeenAt = fromMicros(first), fromMicros(last)
	if !so.HasLines {
		return true, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT line_id, sku, title, quantity, unit_price, currency
		FROM order_lines WHERE platform = ? AND order_id = ? ORDER BY position`, platform, id)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var l order.Line
		if err := rows.Scan(&l.ID, &l.SKU, &l.Title, &l.Quantity, &l.UnitPrice, &l.Currency); err != nil {
			return false, err
		}
		so.Lines = append(so.Lines, l)
	}
	return true, rows.Err()
}

func (s *sqliteStore) OrderVersions(ctx context.Context, platform string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.withPool(ctx, func(p *sqlitePool) error {
		rows, err := p.db.QueryContext(ctx, `SELECT order_id, updated_at FROM orders WHERE platform = ?`, platform)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var updated int64
			if err := rows.Scan(&id, &updated); err != nil {
				return err
			}
			out[id] = fromMicros(updated)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("order versions %s: %w", platform, err)
	}
	return out, nil
}

func (s *sqliteStore) OrderLines(ctx context.Context, platform string) (map[string]StoredLines, error) {
	out := map[string]StoredLines{}
	err := s.withPool(ctx, func(p *sqlitePool) error {
		rows, err := p.db.QueryContext(ctx, `SELECT o.order_id, o.updated_at, o.lines_digest IS NOT NULL,
			l.line_id, l.sku, l.title, l.quantity, l.unit_price, l.currency
			FROM orders o LEFT JOIN order_lines l
				ON o.lines_digest IS NOT NULL AND l.platform = o.platform AND l.order_id = o.order_id
			WHERE o.platform = ? ORDER BY o.order_id, l.position`, platform)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var updated int64
			var hasLines bool
			var lineID, sku, title, price, currency sql.NullString
			var quantity sql.NullInt64
			if err := rows.Scan(&id, &updated, &hasLines, &lineID, &sku, &title, &quantity, &price, &currency); err != nil {
				return err
			}
			var line *order.Line
			if lineID.Valid {
				line = &order.Line{ID: lineID.String, SKU: sku.String, Title: title.String,
					Quantity: quantity.Int64, UnitPrice: price.String, Currency: currency.String}
			}
			addStoredLine(out, id, fromMicros(updated), hasLines, line)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("order lines %s: %w", platform, err)
	}
	return out, nil
}

func (s *sqliteStore) CountOrders(ctx context.Context, platform string) (int, error) {
	var n int
	err := s.withPool(ctx, func(p *sqlitePool) error {
		if platform == "" {
			return p.db.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&n)
		}
		return p.db.QueryRowContext(ctx, `SELECT count(*) FROM orders WHERE platform = ?`, platform).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count orders %q: %w", platform, err)
	}
	return n, nil
}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE, see
// sqliteParams), queued behind the process's other writers, and commits
// when fn succeeds and the file is still the one at the path.
func (s *sqliteStore) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.withPool(ctx, func(p *sqlitePool) error {
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := fn(tx); err != nil {
			return err
		}
		// As UpsertOrders does: never commit to a file no longer at the path.
		if err := p.checkFile(s.path); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// queryAll runs a read query and scans each row with scan, again from the
// first row if the pool retries the query.
func queryAll[T any](ctx context.Context, s *sqliteStore, query string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	var out []T
	err := s.withPool(ctx, func(p *sqlitePool) error {
		out = nil
		rows, err := p.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, err
}
