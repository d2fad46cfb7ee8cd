-- order_lines holds the lines of each order's stored version: all lines of
-- a version replace all lines of the older one, in the transaction that
-- replaces the order (see store/doc.go).
--
-- lines_digest is a hash of the stored lines, so a re-fetched version is
-- recognised as unchanged without reading its lines back. NULL: no version
-- with lines has been stored (the platform's API lists none, or the order
-- was stored before this migration).
ALTER TABLE orders ADD COLUMN lines_digest bytea;

-- No foreign key to orders, as in SQLite: only the store writes lines,
-- always together with their order's row (which it holds locked), and a
-- key would cost a lookup per line.
CREATE TABLE order_lines (
	platform   text    NOT NULL,
	order_id   text    NOT NULL,
	position   integer NOT NULL, -- 1-based, in the platform's order
	line_id    text    NOT NULL, -- the platform's line id, or the position
	sku        text    NOT NULL,
	title      text    NOT NULL,
	quantity   bigint  NOT NULL,
	unit_price text    NOT NULL, -- decimal string exactly as the platform sent it; '' when it does not say
	currency   text    NOT NULL,
	PRIMARY KEY (platform, order_id, position)
);
