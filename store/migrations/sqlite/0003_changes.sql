-- changes is the change feed (a transactional outbox): one row per version
-- the store accepted (a new order, or a newer or different version of
-- one), appended in the transaction that stored it. Readers resume after
-- the last seq they saw.
--
-- AUTOINCREMENT, not a plain rowid: a seq is never reused, even after
-- compaction deleted the newest rows. SQLite has one writer at a time
-- (every write transaction is BEGIN IMMEDIATE), so seqs are assigned in
-- commit order and a reader never sees a gap fill in behind it.
CREATE TABLE changes (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	platform     TEXT    NOT NULL,
	order_id     TEXT    NOT NULL,
	updated_at   INTEGER NOT NULL, -- the accepted version's updated_at, Unix microseconds UTC
	kind         TEXT    NOT NULL, -- 'created' or 'updated'
	committed_at INTEGER NOT NULL  -- when the store accepted it, Unix microseconds UTC
);
CREATE INDEX changes_platform_seq ON changes (platform, seq);

-- feed_consumers remembers how far each destination has acknowledged the
-- feed, so compaction never removes a change one of them still needs.
CREATE TABLE feed_consumers (
	name       TEXT    PRIMARY KEY,
	acked_seq  INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
