package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ordersync/ordersync/accounts"
)

// sqliteRegistry is the SQLite store's accounts.Registry (its Changes
// would clash with the feed's on the store itself).
type sqliteRegistry struct{ s *sqliteStore }

// Registry returns the store's account registry (see RegistryOf).
func (s *sqliteStore) Registry() accounts.Registry { return sqliteRegistry{s} }

// Put implements accounts.Registry. The transaction is BEGIN IMMEDIATE
// (sqliteParams): it holds SQLite's write lock from its start, so the
// entry it reads is the one it overwrites and revisions are handed out
// in commit order.
func (r sqliteRegistry) Put(ctx context.Context, e accounts.Entry, expect int64) (int64, error) {
	s := r.s
	if err := checkPut(e, expect); err != nil {
		return 0, err
	}
	var rev int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var stored int64
		var state string
		err := tx.QueryRowContext(ctx, `SELECT revision, state FROM registry WHERE class = ? AND name = ?`, string(e.Class), e.Name).
			Scan(&stored, &state)
		found := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := checkExpect(e.Class, e.Name, expect, found, stored, accounts.State(state)); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE registry_revision SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&rev); err != nil {
			return fmt.Errorf("number the write: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO registry (`+registryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (class, name) DO UPDATE SET revision = excluded.revision, state = excluded.state, kind = excluded.kind,
				task_queue = excluded.task_queue, settings = excluded.settings, updated_at = excluded.updated_at`,
			string(e.Class), e.Name, rev, string(e.State), e.Kind, e.TaskQueue, string(e.Settings), s.now().UnixMicro()); err != nil {
			return err
		}
		return nil
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
func (r sqliteRegistry) Get(ctx context.Context, class accounts.Class, name string) (accounts.Entry, bool, error) {
	s := r.s
	if err := checkKey(class, name); err != nil {
		return accounts.Entry{}, false, fmt.Errorf("get registry entry: %w", err)
	}
	entries, err := s.readRegistry(ctx, `SELECT `+registryColumns+` FROM registry WHERE class = ? AND name = ?`, string(class), name)
	if err != nil {
		return accounts.Entry{}, false, fmt.Errorf("get %s %q: %w", class, clipID(name), err)
	}
	if len(entries) == 0 {
		return accounts.Entry{}, false, nil
	}
	return entries[0], true, nil
}

// List implements accounts.Registry.
func (r sqliteRegistry) List(ctx context.Context, f accounts.Filter) ([]accounts.Entry, error) {
	s := r.s
	f, err := checkFilter(f)
	if err != nil {
		return nil, fmt.Errorf("list registry: %w", err)
	}
	query, args := registryListSQL(f, sqlitePlaceholder)
	entries, err := s.readRegistry(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s entries: %w", f.Class, err)
	}
	return entries, nil
}

// Count implements accounts.Registry.
func (r sqliteRegistry) Count(ctx context.Context, f accounts.Filter) (int, error) {
	s := r.s
	f, err := checkFilter(f)
	if err != nil {
		return 0, fmt.Errorf("count registry: %w", err)
	}
	where, args := registryWhere(f, sqlitePlaceholder)
	var n int
	err = s.withPool(ctx, func(p *sqlitePool) error {
		return p.db.QueryRowContext(ctx, `SELECT count(*) FROM registry WHERE `+where, args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count %s entries: %w", f.Class, err)
	}
	return n, nil
}

// Changes implements accounts.Registry.
func (r sqliteRegistry) Changes(ctx context.Context, since int64, limit int) ([]accounts.Entry, error) {
	s := r.s
	limit, err := changesLimit(since, limit)
	if err != nil {
		return nil, err
	}
	entries, err := s.readRegistry(ctx, `SELECT `+registryColumns+` FROM registry WHERE revision > ? ORDER BY revision LIMIT ?`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("registry changes after %d: %w", since, err)
	}
	return entries, nil
}

// Revision implements accounts.Registry.
func (r sqliteRegistry) Revision(ctx context.Context) (int64, error) {
	s := r.s
	var rev int64
	err := s.withPool(ctx, func(p *sqlitePool) error {
		return p.db.QueryRowContext(ctx, `SELECT last FROM registry_revision WHERE id = 1`).Scan(&rev)
	})
	if err != nil {
		return 0, fmt.Errorf("read registry revision: %w", err)
	}
	return rev, nil
}

// TaskQueues implements accounts.Registry. It asks for a queue above the
// empty string, not unequal to it: a range, so the index skips the many
// entries on the default queue.
func (r sqliteRegistry) TaskQueues(ctx context.Context, class accounts.Class) ([]string, error) {
	s := r.s
	if err := checkClass(class); err != nil {
		return nil, fmt.Errorf("registry task queues: %w", err)
	}
	var out []string
	err := s.withPool(ctx, func(p *sqlitePool) error {
		out = nil
		rows, err := p.db.QueryContext(ctx, `SELECT DISTINCT task_queue FROM registry
			WHERE class = ? AND task_queue > '' AND state <> ? ORDER BY task_queue`, string(class), string(accounts.Removed))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				return err
			}
			out = append(out, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read task queues of %s entries: %w", class, err)
	}
	return out, nil
}

// readRegistry runs a query selecting registryColumns.
func (s *sqliteStore) readRegistry(ctx context.Context, query string, args ...any) ([]accounts.Entry, error) {
	return queryAll(ctx, s, query, args, func(rows *sql.Rows) (accounts.Entry, error) {
		var e accounts.Entry
		var class, state string
		var settings []byte
		var updated int64
		if err := rows.Scan(&class, &e.Name, &e.Revision, &state, &e.Kind, &e.TaskQueue, &settings, &updated); err != nil {
			return e, err
		}
		e.Class, e.State, e.Settings, e.UpdatedAt = accounts.Class(class), accounts.State(state), settings, fromMicros(updated)
		return e, nil
	})
}
