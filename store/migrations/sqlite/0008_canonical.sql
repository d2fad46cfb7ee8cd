-- The canonical order (package order, schema order/schema/order.v1.json)
-- beside the platform's raw JSON, as JSON bytes; NULL for versions stored
-- before 0008 or by a caller that set none. number is the canonical
-- order's number (Shopify's "#1001", WooCommerce's number), '' when
-- unknown, indexed per platform for `orders search --number`.
ALTER TABLE orders ADD COLUMN canonical BLOB;
ALTER TABLE orders ADD COLUMN number text NOT NULL DEFAULT '';
CREATE INDEX orders_by_number ON orders (platform, number);
