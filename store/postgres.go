package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ordersync/ordersync/order"
)

// migrationLockKey is the advisory lock that serializes schema migrations
// when several processes open the same database at once.
const migrationLockKey int64 = 0x6f72_6465_7273_796e // "ordersyn"

// pgChunk bounds how many statements go into one pipelined round trip.
const pgChunk = 500

// pgLineChunk bounds how many lines one INSERT of order_lines carries (as
// arrays, one per column).
const pgLineChunk = 5000

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

// migrate brings the schema up to date. It first reads schema_migrations
// without any DDL, so a role limited to reading and writing the tables
// (SELECT, INSERT, UPDATE, DELETE) opens a store that is already migrated;
// only a missing or older schema needs CREATE on the schema, and then the
// error says what to do (StoreRoleHelp).
func (s *postgresStore) migrate(ctx context.Context) error {
	migs, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	applied, readErr := s.appliedVersions(ctx)
	if readErr == nil && len(pendingMigrations(migs, applied)) == 0 {
		return nil
	}
	err = s.applyMigrations(ctx, migs)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		pending := pendingMigrations(migs, applied)
		return fmt.Errorf("%w; the schema needs %d migration(s) (%s) and this role may not run them: %s",
			err, len(pending), migrationNames(pending), StoreRoleHelp)
	}
	return err
}

// StoreRoleHelp says which rights a PostgreSQL store's role needs and how
// to migrate with a privileged one.
const StoreRoleHelp = "run `ordersync migrate` once with ORDERSYNC_STORE_DSN naming a role that has CREATE on the schema " +
	"(its owner), then grant the workers' role SELECT, INSERT, UPDATE, DELETE on all tables in the schema " +
	"(see deploy/README.md, \"PostgreSQL store roles\")"

func migrationNames(migs []migration) string {
	names := make([]string, len(migs))
	for i, m := range migs {
		names[i] = m.name
	}
	return strings.Join(names, ", ")
}

// appliedVersions reads the versions recorded in schema_migrations; none
// when the table does not exist yet.
func (s *postgresStore) appliedVersions(ctx context.Context) (map[int]bool, error) {
	var exists bool
	// to_regclass resolves the name through search_path as DDL would.
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	if !exists {
		return applied, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		applied[int(v)] = true
	}
	return applied, nil
}

// applyMigrations applies pending migrations in one transaction holding an
// advisory lock, so concurrent openers run them once and the others find
// them done.
func (s *postgresStore) applyMigrations(ctx context.Context, migs []migration) error {
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

func (s *postgresStore) UpsertOrders(ctx context.Context, orders []order.Order) (UpsertResult, error) {
	if err := validate(orders); err != nil {
		return UpsertResult{}, fmt.Errorf("upsert %d orders: %w", len(orders), err)
	}
	return s.upsert(ctx, orders)
}

// upsert writes a validated batch in one transaction. When PostgreSQL
// refuses a row's data (rowRefused: something CheckOrder did not foresee),
// the batch is written again row by row, each row under a savepoint, so
// only the refused rows are left out (UpsertResult.Rejected) and their
// neighbours are stored, as SQLite stores them.
func (s *postgresStore) upsert(ctx context.Context, orders []order.Order) (UpsertResult, error) {
	if len(orders) == 0 {
		return UpsertResult{}, nil
	}
	byRow := false
	for attempt := 1; ; attempt++ {
		var res UpsertResult
		var err error
		now := toMicros(s.now())
		if byRow {
			res, err = s.upsertByRow(ctx, orders, now)
		} else {
			err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				var err error
				res, err = applyBatch(ctx, pgOps{tx}, orders, now, now.Add(s.futureSkew))
				return err
			})
		}
		if err == nil {
			return res, nil
		}
		if !byRow && rowRefused(err) && ctx.Err() == nil {
			byRow = true
			continue
		}
		if attempt >= pgMaxAttempts || !retryable(err) || ctx.Err() != nil {
			return UpsertResult{}, fmt.Errorf("upsert %d orders (attempt %d): %w", len(orders), attempt, err)
		}
	}
}

// upsertByRow writes the batch in one transaction, one row per savepoint,
// in the order applyBatch takes them (rounds of distinct keys, sorted by
// key: the same lock order as every other transaction, and the same
// counts). A row PostgreSQL refuses is rolled back to its savepoint and
// counted in Rejected.
func (s *postgresStore) upsertByRow(ctx context.Context, orders []order.Order, now time.Time) (UpsertResult, error) {
	var res UpsertResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = UpsertResult{}
		for n, round := range splitRounds(orders) {
			for _, r := range round {
				sp, err := tx.Begin(ctx) // a savepoint
				if err != nil {
					return err
				}
				var ops batchOps = pgOps{sp}
				if n > 0 {
					ops = laterRound{ops}
				}
				one, err := applyBatch(ctx, ops, []order.Order{r.Order}, now, now.Add(s.futureSkew))
				if err == nil {
					err = sp.Commit(ctx)
				}
				switch {
				case err == nil:
					res.Inserted, res.Updated, res.Unchanged = res.Inserted+one.Inserted, res.Updated+one.Updated, res.Unchanged+one.Unchanged
				case rowRefused(err):
					if rbErr := sp.Rollback(ctx); rbErr != nil {
						return rbErr
					}
					res.Rejected = append(res.Rejected, RejectedOrder{Platform: r.Platform, ID: r.ID, Reason: refusal(err)})
				default:
					return err
				}
			}
		}
		return nil
	})
	return res, err
}

// laterRound claims a key this transaction already wrote: as applyBatch
// does for rounds after the first, the row claim reports as inserted (it
// was, earlier in this transaction) is compared as a stored version.
type laterRound struct{ batchOps }

func (l laterRound) claim(ctx context.Context, orders []row, now time.Time) ([]claimResult, error) {
	cs, err := l.batchOps.claim(ctx, orders, now)
	for i := range cs {
		cs[i].inserted = false
	}
	return cs, err
}

// rowRefused reports an error about one row's data, which writing the
// row again cannot fix. Only codes a row's values cause are listed, so a
// fault of the statement or the server (which every row would meet) still
// fails the batch rather than leaving every row out: 22021 "invalid byte
// sequence for encoding UTF8: 0x00", 22P05 untranslatable character,
// 22001 string too long, 22003 numeric out of range, 22007/22008 a
// date-time PostgreSQL cannot hold, 54000 "index row size exceeds btree
// maximum".
func rowRefused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "22021", "22P05", "22001", "22003", "22007", "22008", "54000":
		return true
	}
	return false
}

// refusal is PostgreSQL's reason for refusing a row: its code and
// message, never its detail (which may quote the row's values), clipped.
func refusal(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "refused"
	}
	msg := pgErr.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Sprintf("PostgreSQL %s: %s", pgErr.Code, strings.ToValidUTF8(msg, "?"))
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
	(platform, order_id, status, created_at, updated_at, currency, total, line_count, raw, first_seen_at, last_seen_at, lines_digest, canonical, number)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13)
	ON CONFLICT (platform, order_id) DO UPDATE SET last_seen_at = GREATEST(o.last_seen_at, excluded.last_seen_at)
	RETURNING (o.xmax = 0), o.status, o.created_at, o.updated_at, o.currency, o.total, o.line_count, o.raw, o.lines_digest`

func (p pgOps) claim(ctx context.Context, orders []row, now time.Time) ([]claimResult, error) {
	out := make([]claimResult, 0, len(orders))
	for start := 0; start < len(orders); start += pgChunk {
		chunk := orders[start:min(start+pgChunk, len(orders))]
		b := &pgx.Batch{}
		for _, o := range chunk {
			b.Queue(claimSQL, o.Platform, o.ID, o.Status, o.CreatedAt, o.UpdatedAt, o.Currency, o.Total, int64(o.LineCount), rawArg(o.Raw), now, rawArg(o.digest), rawArg(o.canonical), o.number)
		}
		br := p.tx.SendBatch(ctx, b)
		for _, o := range chunk {
			var c claimResult
			c.stored = order.Order{Platform: o.Platform, ID: o.ID}
			var lineCount int64
			var raw, digest []byte
			err := br.QueryRow().Scan(&c.inserted, &c.stored.Status, &c.stored.CreatedAt, &c.stored.UpdatedAt,
				&c.stored.Currency, &c.stored.Total, &lineCount, &raw, &digest)
			if err != nil {
				br.Close()
				return nil, fmt.Errorf("claim %s/%s: %w", o.Platform, o.ID, err)
			}
			c.stored.LineCount = int(lineCount)
			c.stored.CreatedAt, c.stored.UpdatedAt = c.stored.CreatedAt.UTC(), c.stored.UpdatedAt.UTC()
			if len(raw) > 0 {
				c.stored.Raw = raw
			}
			c.digest = digestOf(digest)
			out = append(out, c)
		}
		if err := br.Close(); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
	}
	return out, nil
}

func (p pgOps) overwrite(ctx context.Context, orders []row, now time.Time) error {
	for start := 0; start < len(orders); start += pgChunk {
		chunk := orders[start:min(start+pgChunk, len(orders))]
		b := &pgx.Batch{}
		for _, o := range chunk {
			// COALESCE: a version without lines keeps the stored lines, and
			// so their digest.
			b.Queue(`UPDATE orders SET
				status = $3, created_at = $4, updated_at = $5, currency = $6, total = $7, line_count = $8, raw = $9,
				last_seen_at = GREATEST(last_seen_at, $10), lines_digest = COALESCE($11, lines_digest), canonical = $12, number = $13
				WHERE platform = $1 AND order_id = $2`,
				o.Platform, o.ID, o.Status, o.CreatedAt, o.UpdatedAt, o.Currency, o.Total, int64(o.LineCount), rawArg(o.Raw), now, rawArg(o.digest), rawArg(o.canonical), o.number)
		}
		if err := p.tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("update %d orders: %w", len(chunk), err)
		}
	}
	return nil
}

// replaceLines pipelines, per pgChunk orders, one DELETE per order and
// one INSERT per pgLineChunk lines with its rows as column arrays (unnest)
// in one round trip. Per-order DELETEs by the primary key's prefix, not
// one "= ANY(ids)": on a table without statistics yet PostgreSQL planned
// that as a sequential scan, several times slower.
func (p pgOps) replaceLines(ctx context.Context, orders []row) error {
	for start := 0; start < len(orders); start += pgChunk {
		chunk := orders[start:min(start+pgChunk, len(orders))]
		b := &pgx.Batch{}
		var cols pgLineColumns
		for _, o := range chunk {
			b.Queue(`DELETE FROM order_lines WHERE platform = $1 AND order_id = $2`, o.Platform, o.ID)
		}
		for _, o := range chunk {
			for i, l := range o.Lines {
				cols.add(o.Platform, o.ID, i+1, l)
				if len(cols.platform) == pgLineChunk {
					cols.queue(b)
					cols = pgLineColumns{}
				}
			}
		}
		if len(cols.platform) > 0 {
			cols.queue(b)
		}
		if err := p.tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("replace the lines of %d orders: %w", len(chunk), err)
		}
	}
	return nil
}

// pgLineColumns are lines to insert, one slice per column.
type pgLineColumns struct {
	platform, orderID, lineID, sku, title, unitPrice, currency []string
	position                                                   []int32
	quantity                                                   []int64
}

func (c *pgLineColumns) add(platform, orderID string, position int, l order.Line) {
	c.platform, c.orderID = append(c.platform, platform), append(c.orderID, orderID)
	c.position = append(c.position, int32(position))
	c.lineID, c.sku, c.title = append(c.lineID, l.ID), append(c.sku, l.SKU), append(c.title, l.Title)
	c.quantity = append(c.quantity, l.Quantity)
	c.unitPrice, c.currency = append(c.unitPrice, l.UnitPrice), append(c.currency, l.Currency)
}

func (c *pgLineColumns) queue(b *pgx.Batch) {
	b.Queue(`INSERT INTO order_lines (platform, order_id, position, line_id, sku, title, quantity, unit_price, currency)
		SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])`,
		c.platform, c.orderID, c.position, c.lineID, c.sku, c.title, c.quantity, c.unitPrice, c.currency)
}

func (s *postgresStore) GetOrder(ctx context.Context, platform, id string) (StoredOrder, bool, error) {
	so := StoredOrder{Order: order.Order{Platform: platform, ID: id}}
	var lineCount int64
	var raw, canonical []byte
	// One snapshot for both reads, so the lines belong to the version read
	// with them.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT status, created_at, updated_at, currency, total, line_count, raw, canonical, first_seen_at, last_seen_at,
			lines_digest IS NOT NULL
			FROM orders WHERE platform = $1 AND order_id = $2`, platform, id).
			Scan(&so.Status, &so.CreatedAt, &so.UpdatedAt, &so.Currency, &so.Total, &lineCount, &raw, &canonical, &so.FirstSeenAt, &so.LastSeenAt, &so.HasLines)
		if err != nil || !so.HasLines {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT line_id, sku, title, quantity, unit_price, currency
			FROM order_lines WHERE platform = $1 AND order_id = $2 ORDER BY position`, platform, id)
		if err != nil {
			return err
		}
		var l order.Line
		_, err = pgx.ForEachRow(rows, []any{&l.ID, &l.SKU, &l.Title, &l.Quantity, &l.UnitPrice, &l.Currency}, func() error {
			so.Lines = append(so.Lines, l)
			return nil
		})
		return err
	})
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
	so.Canonical = decodeCanonical(canonical)
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

func (s *postgresStore) OrderLines(ctx context.Context, platform string) (map[string]StoredLines, error) {
	rows, err := s.pool.Query(ctx, `SELECT o.order_id, o.updated_at, o.lines_digest IS NOT NULL,
		l.line_id, l.sku, l.title, l.quantity, l.unit_price, l.currency
		FROM orders o LEFT JOIN order_lines l
			ON o.lines_digest IS NOT NULL AND l.platform = o.platform AND l.order_id = o.order_id
		WHERE o.platform = $1 ORDER BY o.order_id, l.position`, platform)
	if err != nil {
		return nil, fmt.Errorf("order lines %s: %w", platform, err)
	}
	defer rows.Close()
	out := map[string]StoredLines{}
	var (
		id                                  string
		updated                             time.Time
		hasLines                            bool
		lineID, sku, title, price, currency *string
		quantity                            *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &updated, &hasLines, &lineID, &sku, &title, &quantity, &price, &currency}, func() error {
		var line *order.Line
		if lineID != nil {
			line = &order.Line{ID: *lineID, SKU: *sku, Title: *title, Quantity: *quantity, UnitPrice: *price, Currency: *currency}
		}
		addStoredLine(out, id, updated.UTC(), hasLines, line)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("order lines %s: %w", platform, err)
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
