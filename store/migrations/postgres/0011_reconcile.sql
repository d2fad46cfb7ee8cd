-- reconcile_results keeps count reconciliation's checks, one row per
-- platform, window and check (first, recheck), for `reconcile report`.
CREATE TABLE reconcile_results (
	platform         text        NOT NULL,
	window_start     timestamptz NOT NULL,
	window_end       timestamptz NOT NULL,
	check_kind       text        NOT NULL,
	platform_count   bigint      NOT NULL,
	precision        text        NOT NULL,
	store_count      bigint      NOT NULL,
	outcome          text        NOT NULL,
	reprocessed      boolean     NOT NULL,
	recount_platform bigint      NOT NULL,
	recount_store    bigint      NOT NULL,
	checked_at       timestamptz NOT NULL,
	PRIMARY KEY (platform, window_start, check_kind)
);
CREATE INDEX reconcile_results_by_checked ON reconcile_results (platform, checked_at);
