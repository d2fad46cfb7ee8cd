-- registry holds the accounts (class 'platform') and destinations (class
-- 'destination') every worker reads: one row per (class, name), at its
-- latest revision. Removed entries stay as tombstones (state 'removed'),
-- so every cache learns of the removal and a name is never reused by
-- accident. settings is the validated JSON document (credential
-- references, never secrets); kind and task_queue are copied out of it so
-- lists filter by them without decoding it.
CREATE TABLE registry (
	class      TEXT    NOT NULL, -- 'platform' or 'destination'
	name       TEXT    NOT NULL,
	revision   INTEGER NOT NULL, -- registry-wide, from registry_revision
	state      TEXT    NOT NULL, -- 'active', 'paused' or 'removed'
	kind       TEXT    NOT NULL,
	task_queue TEXT    NOT NULL, -- '' for the default queue
	settings   TEXT    NOT NULL, -- JSON
	updated_at INTEGER NOT NULL, -- Unix microseconds UTC
	PRIMARY KEY (class, name)
);
-- Changes reads "revision > since" in revision order.
CREATE UNIQUE INDEX registry_by_revision ON registry (revision);
-- List pages in name order under its filters; TaskQueues reads distinct
-- queues of a class.
CREATE INDEX registry_by_state ON registry (class, state, name);
CREATE INDEX registry_by_kind ON registry (class, kind, name);
CREATE INDEX registry_by_task_queue ON registry (class, task_queue, name);

-- registry_revision is the last revision handed out. Every write updates
-- its one row in the write's transaction. SQLite has one writer at a time
-- (BEGIN IMMEDIATE), so revisions are handed out in commit order; the row
-- is kept so both stores number alike, and so the latest revision
-- survives any future cleanup of tombstones.
CREATE TABLE registry_revision (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	last INTEGER NOT NULL
);
INSERT INTO registry_revision (id, last) VALUES (1, 0);
