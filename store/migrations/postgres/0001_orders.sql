-- orders holds the newest version seen of each order.
CREATE TABLE orders (
	platform      text        NOT NULL,
	order_id      text        NOT NULL,
	status        text        NOT NULL,
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	currency      text        NOT NULL,
	total         text        NOT NULL, -- decimal string exactly as the platform sent it
	line_count    bigint      NOT NULL,
	-- The platform's JSON byte for byte (jsonb would reorder keys and drop
	-- duplicates); query it with convert_from(raw, 'UTF8')::jsonb. NULL when empty.
	raw           bytea,
	first_seen_at timestamptz NOT NULL,
	last_seen_at  timestamptz NOT NULL,
	PRIMARY KEY (platform, order_id)
);
