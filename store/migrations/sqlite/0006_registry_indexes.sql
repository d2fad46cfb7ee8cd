-- The list indexes of 0005 carry the other filter columns too, so that a
-- second filter, and a count, are checked in the index without reading
-- the row: at 100,000 entries a count of the active amazon accounts took
-- 105 ms through registry_by_kind without them (docs/performance.md,
-- "Registry of 100,000 accounts"). A migration of its own because 0005
-- was already on main.
DROP INDEX registry_by_state;
DROP INDEX registry_by_kind;
DROP INDEX registry_by_task_queue;
CREATE INDEX registry_by_state ON registry (class, state, name, kind, task_queue);
CREATE INDEX registry_by_kind ON registry (class, kind, name, state, task_queue);
CREATE INDEX registry_by_task_queue ON registry (class, task_queue, name, state, kind);
