-- orders holds the newest version seen of each order.
-- Times are INTEGER microseconds since the Unix epoch, UTC: exact, compact,
-- and they compare correctly (RFC 3339 text with trimmed zeros would not).
CREATE TABLE orders (
	platform      TEXT    NOT NULL,
	order_id      TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	currency      TEXT    NOT NULL,
	total         TEXT    NOT NULL, -- decimal string; REAL would round money
	line_count    INTEGER NOT NULL,
	raw           BLOB,             -- the platform's JSON, byte for byte; NULL when empty
	first_seen_at INTEGER NOT NULL,
	last_seen_at  INTEGER NOT NULL,
	PRIMARY KEY (platform, order_id)
);
