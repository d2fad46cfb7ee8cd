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
// Every UpsertOrders call is one transaction and reports each order in
// exactly one of Inserted, Updated or Unchanged. last_seen_at is bumped for
// every order received, even an ignored one; first_seen_at is set once.
// Times are stored in UTC at microsecond precision.
//
// The SQLite store notices when its file is deleted, replaced or made
// unwritable under a running process: the batch fails (a retryable store
// error to the activity), the connection pool is closed and reopened on the
// path once the file is back, without a restart. A memory fault in the
// driver (an unwritable -shm file) is reported and ends the process with
// exit status 74 for its supervisor to restart. sqlite_pool.go has the
// details.
package store
