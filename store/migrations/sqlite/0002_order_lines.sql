-- order_lines holds the lines of each order's stored version: all lines of
-- a version replace all lines of the older one, in the transaction that
-- replaces the order (see store/doc.go).
--
-- lines_digest is a hash of the stored lines, so a re-fetched version is
-- recognised as unchanged without reading its lines back. NULL: no version
-- with lines has been stored (the platform's API lists none, or the order
-- was stored before this migration).
ALTER TABLE orders ADD COLUMN lines_digest BLOB;

-- No foreign key to orders: only the store writes lines, always together
-- with their order's row, and SQLite would enforce one only with
-- PRAGMA foreign_keys on every connection.
CREATE TABLE order_lines (
	platform   TEXT    NOT NULL,
	order_id   TEXT    NOT NULL,
	position   INTEGER NOT NULL, -- 1-based, in the platform's order
	line_id    TEXT    NOT NULL, -- the platform's line id, or the position
	sku        TEXT    NOT NULL,
	title      TEXT    NOT NULL,
	quantity   INTEGER NOT NULL,
	unit_price TEXT    NOT NULL, -- decimal string; '' when the platform does not say
	currency   TEXT    NOT NULL,
	PRIMARY KEY (platform, order_id, position)
) WITHOUT ROWID;
