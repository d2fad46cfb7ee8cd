-- orders search (by platform and updated range, newest first) and orders
-- get (an order's retained changes) read by these, not by a scan of the
-- platform's orders or changes.
CREATE INDEX orders_by_updated ON orders (platform, updated_at, order_id);
CREATE INDEX orders_by_updated_all ON orders (updated_at, platform, order_id);
CREATE INDEX changes_by_order ON changes (platform, order_id, seq);
