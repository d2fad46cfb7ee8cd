-- webhook_deliveries remembers the delivery ids of the platform webhooks
-- serve accepted (Shopify's X-Shopify-Webhook-Id, WooCommerce's
-- X-WC-Webhook-Delivery-ID), so a redelivery is answered 200 without a
-- second refetch. Rows older than the retention (48 h by default: Shopify
-- retries for 4 h, and duplicates may arrive a day late) are deleted by
-- the next record, so the table stays bounded.
CREATE TABLE webhook_deliveries (
	platform    TEXT    NOT NULL,
	delivery_id TEXT    NOT NULL,
	received_at INTEGER NOT NULL, -- Unix microseconds UTC
	PRIMARY KEY (platform, delivery_id)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

-- webhook_activity is, per platform, when its last accepted webhook event
-- arrived and how many were accepted: whether the fast path is live.
CREATE TABLE webhook_activity (
	platform      TEXT    PRIMARY KEY,
	last_event_at INTEGER NOT NULL, -- Unix microseconds UTC
	events        INTEGER NOT NULL
);
