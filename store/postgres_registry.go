package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ordersync/ordersync/accounts"
)

// RegistryChannel is the PostgreSQL channel every registry write notifies,
// with the write's revision as payload, when it commits: a cache may
// LISTEN on it to catch up at once instead of waiting for its next poll.
const RegistryChannel = "ordersync_registry"

// postgresRegistry is the PostgreSQL store's accounts.Registry (its
// Changes would clash with the feed's on the store itself).
type postgresRegistry struct{ s *postgresStore }

// Registry returns the store's account registry (see RegistryOf).
func (s *postgresStore) Registry() accounts.Registry { return postgresRegistry{s} }

// Put implements accounts.Registry. Its first statement takes the next
// revision from registry_revision, whose row lock it holds until commit
// (see migration 0005): writers queue there, so the entry each one then
// reads is the committed one it overwrites (no two writers both see a
// name unused), and revisions commit in order. Every transaction locks the
// counter before any registry row, so the two locks cannot deadlock. A
// refused write rolls back, counter included: no revision is skipped.
func (r postgresRegistry) Put(ctx context.Context, e accounts.Entry, expect int64) (int64, error) {
	if err := checkPut(e, expect); err != nil {
		return 0, err
	}
	s := r.s
	var rev int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `UPDATE registry_revision SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&rev); err != nil {
			return fmt.Errorf("number the write: %w", err)
		}
		// A statement of its own, after the counter's: in READ COMMITTED
		// it sees every write committed before this one took the lock.
		var stored int64
		var state string
		err := tx.QueryRow(ctx, `SELECT revision, state FROM registry WHERE class = $1 AND name = $2`, string(e.Class), e.Name).
			Scan(&stored, &state)
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := checkExpect(e.Class, e.Name, expect, found, stored, accounts.State(state)); err != nil {
			return err
		}
		// NOTIFY in the same transaction: PostgreSQL delivers it at commit
		// and drops it on rollback, so a listener never hears of a
		// revision it cannot read.
		_, err = tx.Exec(ctx, `WITH w AS (
				INSERT INTO registry (`+registryColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				ON CONFLICT (class, name) DO UPDATE SET revision = excluded.revision, state = excluded.state, kind = excluded.kind,
					task_queue = excluded.task_queue, settings = excluded.settings, updated_at = excluded.updated_at
				RETURNING revision)
			SELECT pg_notify('`+RegistryChannel+`', revision::text) FROM w`,
			string(e.Class), e.Name, rev, string(e.State), e.Kind, e.TaskQueue, string(e.Settings), s.now())
		return err
	})
	if err != nil {
		if errors.Is(err, accounts.ErrConflict) || errors.Is(err, accounts.ErrRemovedName) {
			return 0, err
		}
		return 0, fmt.Errorf("put %s %q: %w", e.Class, clipID(e.Name), err)
	}
	return rev, nil
}

// Get implements accounts.Registry.
func (r postgresRegistry) Get(ctx context.Context, class accounts.Class, name string) (accounts.Entry, bool, error) {
	if err := checkKey(class, name); err != nil {
		return accounts.Entry{}, false, fmt.Errorf("get registry entry: %w", err)
	}
	entries, err := r.s.readRegistry(ctx, `SELECT `+registryColumns+` FROM registry WHERE class = $1 AND name = $2`, string(class), name)
	if err != nil {
		return accounts.Entry{}, false, fmt.Errorf("get %s %q: %w", class, clipID(name), err)
	}
	if len(entries) == 0 {
		return accounts.Entry{}, false, nil
	}
	return entries[0], true, nil
}

// List implements accounts.Registry.
func (r postgresRegistry) List(ctx context.Context, f accounts.Filter) ([]accounts.Entry, error) {
	f, err := checkFilter(f)
	if err != nil {
		return nil, fmt.Errorf("list registry: %w", err)
	}
	query, args := registryListSQL(f, postgresPlaceholder)
	entries, err := r.s.readRegistry(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s entries: %w", f.Class, err)
	}
	return entries, nil
}

// Count implements accounts.Registry.
func (r postgresRegistry) Count(ctx context.Context, f accounts.Filter) (int, error) {
	f, err := checkFilter(f)
	if err != nil {
		return 0, fmt.Errorf("count registry: %w", err)
	}
	where, args := registryWhere(f, postgresPlaceholder)
	var n int64
	if err := r.s.pool.QueryRow(ctx, `SELECT count(*) FROM registry WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s entries: %w", f.Class, err)
	}
	return int(n), nil
}

// Changes implements accounts.Registry.
func (r postgresRegistry) Changes(ctx context.Context, since int64, limit int) ([]accounts.Entry, error) {
	limit, err := changesLimit(since, limit)
	if err != nil {
		return nil, err
	}
	entries, err := r.s.readRegistry(ctx, `SELECT `+registryColumns+` FROM registry WHERE revision > $1 ORDER BY revision LIMIT $2`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("registry changes after %d: %w", since, err)
	}
	return entries, nil
}

// Revision implements accounts.Registry. The counter is read without its
// lock: a write in progress has not committed its revision, so the
// committed value is the newest a reader can see.
func (r postgresRegistry) Revision(ctx context.Context) (int64, error) {
	var rev int64
	if err := r.s.pool.QueryRow(ctx, `SELECT last FROM registry_revision WHERE id = 1`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("read registry revision: %w", err)
	}
	return rev, nil
}

// TaskQueues implements accounts.Registry. It asks for a queue above the
// empty string, not unequal to it: a range, so the index skips the many
// entries on the default queue.
func (r postgresRegistry) TaskQueues(ctx context.Context, class accounts.Class) ([]string, error) {
	if err := checkClass(class); err != nil {
		return nil, fmt.Errorf("registry task queues: %w", err)
	}
	rows, err := r.s.pool.Query(ctx, `SELECT DISTINCT task_queue FROM registry
		WHERE class = $1 AND task_queue > '' AND state <> $2 ORDER BY task_queue`, string(class), string(accounts.Removed))
	if err != nil {
		return nil, fmt.Errorf("read task queues of %s entries: %w", class, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read task queues of %s entries: %w", class, err)
	}
	return out, nil
}

// readRegistry runs a query selecting registryColumns.
func (s *postgresStore) readRegistry(ctx context.Context, query string, args ...any) ([]accounts.Entry, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []accounts.Entry
	var e accounts.Entry
	var class, state, settings string
	_, err = pgx.ForEachRow(rows, []any{&class, &e.Name, &e.Revision, &state, &e.Kind, &e.TaskQueue, &settings, &e.UpdatedAt}, func() error {
		c := e
		c.Class, c.State, c.Settings, c.UpdatedAt = accounts.Class(class), accounts.State(state), []byte(settings), c.UpdatedAt.UTC()
		out = append(out, c)
		return nil
	})
	return out, err
}

// Watch implements accounts.Watcher: it LISTENs on RegistryChannel on a
// connection of its own and calls changed for every notification, until
// ctx ends or the connection fails (the caller listens again; its polls
// keep it right meanwhile).
func (r postgresRegistry) Watch(ctx context.Context, changed func()) error {
	conn, err := r.s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen for registry changes: %w", err)
	}
	// A connection that listened is not handed back to the pool: closing
	// it ends the LISTEN with it.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+RegistryChannel); err != nil {
		return fmt.Errorf("listen for registry changes: %w", err)
	}
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for registry changes: %w", err)
		}
		changed()
	}
}
