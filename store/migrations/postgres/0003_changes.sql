-- changes is the change feed (a transactional outbox): one row per version
-- the store accepted (a new order, or a newer or different version of
-- one), appended in the transaction that stored it. Readers resume after
-- the last seq they saw.
--
-- Not a BIGSERIAL: a sequence hands out numbers at INSERT time, so a
-- transaction holding seq 7 can commit before one holding seq 6, and a
-- reader that saw 7 and resumes "after 7" would miss 6 for ever. Instead
-- every appending transaction takes its numbers from the single row of
-- change_counter with UPDATE ... RETURNING, as its last step. The row lock
-- is held until commit, so the next appender waits, then reads the
-- committed value: seqs are handed out in commit order and a committed
-- change is never followed by a smaller seq.
CREATE TABLE changes (
	seq          bigint      PRIMARY KEY,
	platform     text        NOT NULL,
	order_id     text        NOT NULL,
	updated_at   timestamptz NOT NULL, -- the accepted version's updated_at
	kind         text        NOT NULL, -- 'created' or 'updated'
	committed_at timestamptz NOT NULL  -- when the store accepted it
);
CREATE INDEX changes_platform_seq ON changes (platform, seq);

CREATE TABLE change_counter (
	id   integer PRIMARY KEY CHECK (id = 1),
	last bigint  NOT NULL
);
INSERT INTO change_counter (id, last) VALUES (1, 0);

-- feed_consumers remembers how far each destination has acknowledged the
-- feed, so compaction never removes a change one of them still needs.
CREATE TABLE feed_consumers (
	name       text        PRIMARY KEY,
	acked_seq  bigint      NOT NULL,
	updated_at timestamptz NOT NULL
);
