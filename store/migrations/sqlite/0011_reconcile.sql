-- reconcile_results keeps count reconciliation's checks, one row per
-- platform, window and check (first, recheck), for `reconcile report`.
-- Times are INTEGER microseconds since the Unix epoch, as in orders.
CREATE TABLE reconcile_results (
	platform         TEXT    NOT NULL,
	window_start     INTEGER NOT NULL,
	window_end       INTEGER NOT NULL,
	check_kind       TEXT    NOT NULL,
	platform_count   INTEGER NOT NULL,
	precision        TEXT    NOT NULL,
	store_count      INTEGER NOT NULL,
	outcome          TEXT    NOT NULL,
	reprocessed      INTEGER NOT NULL,
	recount_platform INTEGER NOT NULL,
	recount_store    INTEGER NOT NULL,
	checked_at       INTEGER NOT NULL,
	PRIMARY KEY (platform, window_start, check_kind)
);
CREATE INDEX reconcile_results_by_checked ON reconcile_results (platform, checked_at);
