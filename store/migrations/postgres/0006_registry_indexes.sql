-- Two changes to 0005, in a migration of their own because 0005 was
-- already on main.
--
-- The registry's text sorts by COLLATE "C" (bytes), as SQLite and Go do:
-- List's name order, and so its pages, are the same on both stores
-- whatever the database's locale (en_US would put "b" before "C" and skip
-- punctuation). Changing a column's collation rebuilds its indexes.
--
-- The list indexes carry the other filter columns (INCLUDE), so that a
-- second filter, and a count, can be checked in the index without reading
-- the row (docs/performance.md, "Registry of 100,000 accounts").
DROP INDEX registry_by_state;
DROP INDEX registry_by_kind;
DROP INDEX registry_by_task_queue;
ALTER TABLE registry
	ALTER COLUMN class      TYPE text COLLATE "C",
	ALTER COLUMN name       TYPE text COLLATE "C",
	ALTER COLUMN state      TYPE text COLLATE "C",
	ALTER COLUMN kind       TYPE text COLLATE "C",
	ALTER COLUMN task_queue TYPE text COLLATE "C";
CREATE INDEX registry_by_state ON registry (class, state, name) INCLUDE (kind, task_queue);
CREATE INDEX registry_by_kind ON registry (class, kind, name) INCLUDE (state, task_queue);
CREATE INDEX registry_by_task_queue ON registry (class, task_queue, name) INCLUDE (state, kind);
