-- credentials holds the stored credentials ({stored: name} in a platform's
-- settings): OAuth tokens that rotate, and the OAuth apps that refresh
-- them. The secret payload is sealed (AES-256-GCM) with a key the
-- operator holds outside the store (ORDERSYNC_CREDENTIAL_KEYS); key_id
-- names that key, so a rotation can find the rows still sealed with an
-- old one. Everything else is plaintext metadata status and metrics read.
-- generation grows by one on every write (not on a lease change): writes
-- compare-and-swap on it, and caches re-open the payload only when it
-- moved. The refresh lease (lease_owner, lease_until) lets one worker of
-- all refresh an account's token at a time.
CREATE TABLE credentials (
	name               TEXT    NOT NULL PRIMARY KEY,
	kind               TEXT    NOT NULL, -- 'shopify', 'lwa' or 'app'
	app                TEXT    NOT NULL, -- the app credential's name; '' for an app
	access_expires_at  INTEGER NOT NULL, -- Unix microseconds UTC, 0: unknown
	refresh_expires_at INTEGER NOT NULL, -- 0: does not expire
	last_refresh_at    INTEGER NOT NULL, -- 0: never
	last_error         TEXT    NOT NULL,
	generation         INTEGER NOT NULL,
	key_id             TEXT    NOT NULL,
	lease_owner        TEXT    NOT NULL, -- '' when free
	lease_until        INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	sealed             BLOB    NOT NULL  -- nonce || ciphertext
);
-- rotate-key reads the rows not sealed with the current key.
CREATE INDEX credentials_by_key ON credentials (key_id, name);
