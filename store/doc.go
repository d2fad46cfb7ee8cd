// Package store keeps the newest known version of every order that
// ordersync pulls, in SQLite (the default, a single file) or PostgreSQL.
//
// Orders are keyed by (platform, order_id), and the store never regresses:
// an incoming version is applied only when its updated_at is not older than
// the stored one. Platforms, retries and overlapping sync windows deliver
// versions out of order, so a late, stale copy must never overwrite a newer
// one. An equal updated_at with different content is applied (the platform
// changed the order without bumping its clock); an older one is ignored.
//
// Every UpsertOrders call is one transaction and reports each order in
// exactly one of Inserted, Updated or Unchanged. last_seen_at is bumped for
// every order received, even an ignored one; first_seen_at is set once.
// Times are stored in UTC at microsecond precision.
package store
