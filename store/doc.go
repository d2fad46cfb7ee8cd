// Package store keeps the newest known version of every order that
// ordersync pulls, in SQLite (the default, a single file) or PostgreSQL.
//
// Orders are keyed by (platform, order_id), and the store never regresses:
// an incoming version is applied only when its updated_at is not older than
// the stored one. Platforms, retries and overlapping sync windows deliver
// versions out of order, so a late, stale copy must never overwrite a newer
// one. An equal updated_at with different content is applied (the platform
// changed the order without bumping its clock); an older one is ignored.
// The one exception is platform data gone wrong: a stored version stamped
// further ahead of now than the allowed skew (WithFutureSkew, default five
// minutes) is not trusted as newest, so any different incoming version
// replaces it and an order pinned by an updated_at in 2999 heals. (The
// FetchPage activity keeps such versions out in the first place.)
//
// # Order lines
//
// An order's lines (order.Line) live in order_lines, keyed by
// (platform, order_id, position) with the 1-based position in the
// platform's order, and follow the same newest-version rule in the same
// transaction as their order:
//
//   - a version that is inserted or wins (Updated) and has lines
//     (HasLines) replaces all stored lines of its order: delete, then
//     insert, so an order whose lines shrink from three to one keeps one;
//   - a version that does not win (older, or unchanged) leaves the lines
//     untouched;
//   - a version that wins without lines (HasLines false: the platform's
//     API listed the order without them) keeps the stored lines.
//
// Lines are content: an equal updated_at with other lines is applied and
// counted Updated, like any other change the platform made without
// bumping its clock; a version without lines never differs in its lines.
// orders.lines_digest (a SHA-256 of the stored lines, NULL while no
// version with lines was stored) lets a re-fetched version be recognised
// as unchanged without reading its lines back. GetOrder returns the lines
// in position order, HasLines true when a version with lines was stored
// (even with no lines at all); OrderLines reads a whole platform's lines
// in one statement, for verify. Orders stored before lines existed have
// none until a version of them is fetched again; re-fetching the same
// version fills them in (reprocess the period to do it at once).
//
// Both stores refuse the same orders (CheckOrder): an id longer than
// MaxOrderIDBytes (1,024; PostgreSQL's index takes about 2,700), text
// (platform, id, status, currency, total) that is not UTF-8 or holds a
// NUL byte, which PostgreSQL's text refuses, and lines it cannot keep
// faithfully (CheckLines): more than 10,000 per order, a missing or
// repeated line id, an id, SKU, title, unit price or currency longer than
// its bound, text that is not UTF-8 or holds a NUL byte, a unit price that
// is not a plain decimal. The FetchPage activity sets such an order aside
// alone and counts it as rejected; UpsertOrders refuses a whole batch
// holding one (ErrInvalidOrder), as it does an order without an id.
// Should PostgreSQL still refuse a row's data, the batch is written again
// row by row under savepoints and only that row is left out
// (UpsertResult.Rejected).
//
// Opening a PostgreSQL store reads schema_migrations before any DDL: a
// role with SELECT, INSERT, UPDATE and DELETE on the tables opens a
// current schema; CREATE on the schema is needed only to create or
// upgrade it (`ordersync migrate`, StoreRoleHelp).
//
// Every UpsertOrders call is one transaction and reports each order in
// exactly one of Inserted, Updated, Unchanged or Rejected. last_seen_at is bumped for
// every order received, even an ignored one; first_seen_at is set once.
// Times are stored in UTC at microsecond precision.
//
// # Change feed
//
// Every version UpsertOrders accepts appends one row to the changes table
// in the same transaction (a transactional outbox): a new order is a
// "created" change, a version that replaces the stored one an "updated"
// change. That includes an equal updated_at with other content or other
// lines, which the store applies and counts Updated: the order's content
// changed, so a receiver must hear of it. A version that is older, or
// equal and unchanged, appends nothing, and a refused batch appends
// nothing. Nothing else writes the feed.
//
// Each change gets a Seq that only grows and is handed out in commit
// order, so a reader that resumes after the last Seq it saw never misses
// one committed later under a smaller number. SQLite gets this from its
// single writer (AUTOINCREMENT). PostgreSQL does not get it from a
// sequence (BIGSERIAL numbers are taken at INSERT and commit in any
// order), so every appending transaction takes its numbers from one
// counter row (UPDATE change_counter ... RETURNING) as its last step: the
// row lock serialises appenders until commit, and each continues from the
// committed value. The cost is that appends (not the rest of a batch)
// are serialised across writers, for the few milliseconds between the
// counter update and the commit.
//
// A change records the key, kind, the accepted version's updated_at and
// when it was committed; Changes joins it with the order and its lines as
// stored when read. When a newer version has been accepted since, an
// older change therefore carries the newer content (and the newer change
// follows): a reader never sees an order go back to an older version.
//
// Retention: consumers (destinations) record how far they have
// acknowledged the feed (AckChanges, which only moves forward), and
// CompactChanges removes only changes older than the retention that every
// known consumer, and every configured one, has acknowledged; a
// configured destination that has acknowledged nothing holds everything.
// Seqs are never reused after compaction (Head.LastSeq keeps the newest).
//
// # Registry
//
// Both stores keep the account registry (accounts.Registry; RegistryOf
// returns it): table registry, one row per (class, name) at its latest
// revision, removed entries kept as tombstones. Every write takes the next
// revision from the one row of registry_revision in its own transaction,
// and that row's lock serialises writers until commit, so revisions
// commit in order and a cache reading "revision > since" never misses one
// committed later under a smaller number (a PostgreSQL sequence would
// allow that; SQLite's single writer gives it anyway). On PostgreSQL the
// write also sends NOTIFY ordersync_registry (RegistryChannel) with its
// revision, delivered at commit. Put refuses what accounts.Entry.Check
// refuses, and what the store cannot keep alike on both backends (a kind
// or task queue over its bound, text that is not UTF-8 or holds a NUL
// byte), wrapping ErrInvalidEntry; a refused or conflicting write takes
// no revision. List pages in name order by keyset (After), at most
// accounts.MaxPage entries, over indexes on (class, state, name), (class,
// kind, name) and (class, task_queue, name) that also carry the other
// filter columns (migration 0006); without a state filter it walks the
// primary key and skips tombstones. PostgreSQL sorts the registry's text
// by bytes (COLLATE "C"), as SQLite does, so pages match on both. BenchmarkRegistryScale
// measures 100,000 entries (docs/performance.md).
//
// The SQLite store notices when its file is deleted, replaced or made
// unwritable under a running process: the batch fails (a retryable store
// error to the activity), the connection pool is closed and reopened on the
// path once the file is back, without a restart. A memory fault in the
// driver (an unwritable -shm file) is reported and ends the process with
// exit status 74 for its supervisor to restart. sqlite_pool.go has the
// details.
package store
