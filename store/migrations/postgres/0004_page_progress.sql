-- page_progress keeps a page's partial work between the attempts of its
-- activity (the Shopify connector's orders with part of their lines and the
-- follow-up queries still to run), so a retry resumes the page instead of
-- fetching it again. It holds order data, like orders, and never enters
-- Temporal history. Rows expire; an expired row is never read and is
-- deleted by the next save.
CREATE TABLE page_progress (
	key        text        PRIMARY KEY, -- platform, slice, window and page token
	data       bytea       NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX page_progress_expires ON page_progress (expires_at);
