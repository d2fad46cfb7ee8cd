-- registry holds the accounts (class 'platform') and destinations (class
-- 'destination') every worker reads: one row per (class, name), at its
-- latest revision. Removed entries stay as tombstones (state 'removed'),
-- so every cache learns of the removal and a name is never reused by
-- accident. settings is the validated JSON document (credential
-- references, never secrets), kept as json (not jsonb) so it reads back
-- byte for byte as written; kind and task_queue are copied out of it so
-- lists filter by them without decoding it.
CREATE TABLE registry (
	class      text        NOT NULL, -- 'platform' or 'destination'
	name       text        NOT NULL,
	revision   bigint      NOT NULL, -- registry-wide, from registry_revision
	state      text        NOT NULL, -- 'active', 'paused' or 'removed'
	kind       text        NOT NULL,
	task_queue text        NOT NULL, -- '' for the default queue
	settings   json        NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (class, name)
);
-- Changes reads "revision > since" in revision order.
CREATE UNIQUE INDEX registry_by_revision ON registry (revision);
-- List pages in name order under its filters; TaskQueues reads distinct
-- queues of a class.
CREATE INDEX registry_by_state ON registry (class, state, name);
CREATE INDEX registry_by_kind ON registry (class, kind, name);
CREATE INDEX registry_by_task_queue ON registry (class, task_queue, name);

-- registry_revision is the last revision handed out. Not a sequence: a
-- sequence hands out numbers when asked, not at commit, so a write holding
-- revision 7 can commit before one holding 6, and a cache that read 7 and
-- resumes at "revision > 7" would miss 6 for ever. Instead every write
-- updates this one row first thing in its transaction (UPDATE ...
-- RETURNING): the row lock is held until commit, so writers queue, each
-- reads the entry and continues from the committed value, and revisions
-- commit in order. Registry writes are rare (an operator's add, edit or
-- remove), so serialising them costs nothing that matters. The write also
-- sends NOTIFY ordersync_registry with the revision in its transaction,
-- delivered at commit, so a listening cache need not poll.
CREATE TABLE registry_revision (
	id   integer PRIMARY KEY CHECK (id = 1),
	last bigint  NOT NULL
);
INSERT INTO registry_revision (id, last) VALUES (1, 0);
