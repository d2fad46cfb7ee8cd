package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ordersync/ordersync/accounts"
)

// Both stores keep the account registry (table registry, migration 0005).
var (
	_ accounts.Registry = sqliteRegistry{}
	_ accounts.Registry = postgresRegistry{}
	_ registryHolder    = (*sqliteStore)(nil)
	_ registryHolder    = (*postgresStore)(nil)
)

// registryHolder is a store that keeps the account registry. The registry
// is a view of the store rather than the store itself because its Changes
// (revisions) and the change feed's (orders) share a name.
type registryHolder interface {
	Registry() accounts.Registry
}

// RegistryOf returns the account registry kept in the store s, and false
// when s keeps none. It is not part of Store so that wrappers and fakes of
// Store need not implement it; a wrapper forwards it by defining
// Registry() accounts.Registry.
func RegistryOf(s Store) (accounts.Registry, bool) {
	h, ok := s.(registryHolder)
	if !ok {
		return nil, false
	}
	return h.Registry(), true
}

// ErrInvalidEntry is wrapped by Put when the registry cannot keep the
// entry: what accounts.Entry.Check refuses, a kind or task queue longer
// than its bound, text that is not UTF-8 or holds a NUL byte (PostgreSQL's
// text refuses both, so SQLite refuses them too), or an expect that is
// neither 0, a revision nor accounts.Any.
var ErrInvalidEntry = errors.New("invalid registry entry")

// ErrBadRegistryQuery is wrapped by Get, List, Count and Changes given an
// impossible argument (an unknown class or state, a negative limit, text
// PostgreSQL's text refuses).
var ErrBadRegistryQuery = errors.New("bad registry query")

// Bounds of an entry's kind and task queue, on both stores. Kinds are short
// words ("shopify"); Temporal refuses task queue names above 1,000 bytes.
const (
	maxRegistryKindBytes      = accounts.MaxNameLength
	maxRegistryTaskQueueBytes = 1000
)

// registryColumns is the column list every read selects, in scan order.
const registryColumns = `class, name, revision, state, kind, task_queue, settings, updated_at`

// checkRegistryEntry reports why the registry cannot keep e: what
// e.Check refuses, then what only the store refuses.
func checkRegistryEntry(e accounts.Entry) error {
	if err := e.Check(); err != nil {
		return err
	}
	switch {
	case len(e.Kind) > maxRegistryKindBytes:
		return fmt.Errorf("registry entry %q: kind is %d bytes, longer than %d", clipID(e.Name), len(e.Kind), maxRegistryKindBytes)
	case len(e.TaskQueue) > maxRegistryTaskQueueBytes:
		return fmt.Errorf("registry entry %q: task queue is %d bytes, longer than %d", clipID(e.Name), len(e.TaskQueue), maxRegistryTaskQueueBytes)
	case !utf8.Valid(e.Settings):
		// json.Valid passes invalid UTF-8 inside strings; PostgreSQL does not.
		return fmt.Errorf("registry entry %q: settings are not valid UTF-8", clipID(e.Name))
	}
	for _, f := range []struct{ name, v string }{{"name", e.Name}, {"kind", e.Kind}, {"task queue", e.TaskQueue}} {
		if err := checkText(f.name, f.v); err != nil {
			return fmt.Errorf("registry entry %q: %w", clipID(e.Name), err)
		}
	}
	return nil
}

// checkExpect applies Put's guard to what is stored under the entry's
// name (found, at revision rev in state state).
func checkExpect(class accounts.Class, name string, expect int64, found bool, rev int64, state accounts.State) error {
	switch {
	case expect == 0 && found && state == accounts.Removed,
		expect == accounts.Any && found && state == accounts.Removed:
		return fmt.Errorf("put %s %q: removed at revision %d (re-add it by naming that revision): %w",
			class, clipID(name), rev, accounts.ErrRemovedName)
	case expect == 0 && found:
		return fmt.Errorf("put %s %q: already exists at revision %d (%s): %w", class, clipID(name), rev, state, accounts.ErrConflict)
	case expect > 0 && !found:
		return fmt.Errorf("put %s %q: expected revision %d, but no entry has that name: %w", class, clipID(name), expect, accounts.ErrConflict)
	case expect > 0 && rev != expect:
		return fmt.Errorf("put %s %q: expected revision %d, stored is %d: %w", class, clipID(name), expect, rev, accounts.ErrConflict)
	}
	return nil
}

// checkPut checks Put's arguments before any database work.
func checkPut(e accounts.Entry, expect int64) error {
	if err := checkRegistryEntry(e); err != nil {
		return fmt.Errorf("put registry entry: %w (%w)", err, ErrInvalidEntry)
	}
	if expect < 0 && expect != accounts.Any {
		return fmt.Errorf("put %s %q: expect %d is neither 0, a revision nor Any (%d): %w",
			e.Class, clipID(e.Name), expect, accounts.Any, ErrInvalidEntry)
	}
	return nil
}

// checkClass refuses a class that is neither platform nor destination.
func checkClass(c accounts.Class) error {
	if c != accounts.ClassPlatform && c != accounts.ClassDestination {
		return fmt.Errorf("class %q is neither %q nor %q: %w", clipID(string(c)), accounts.ClassPlatform, accounts.ClassDestination, ErrBadRegistryQuery)
	}
	return nil
}

// checkKey refuses a Get of a class or name no entry can have.
func checkKey(class accounts.Class, name string) error {
	if err := checkClass(class); err != nil {
		return err
	}
	if len(name) > accounts.MaxNameLength {
		return fmt.Errorf("name is %d bytes, longer than %d: %w", len(name), accounts.MaxNameLength, ErrBadRegistryQuery)
	}
	if err := checkText("name", name); err != nil {
		return fmt.Errorf("%w: %w", err, ErrBadRegistryQuery)
	}
	return nil
}

// checkFilter refuses an impossible filter and returns it with its limit
// settled (0 or above MaxPage: MaxPage). Class is required: pages run in
// name order, and a platform and a destination may share a name.
func checkFilter(f accounts.Filter) (accounts.Filter, error) {
	if err := checkClass(f.Class); err != nil {
		return f, err
	}
	if f.State != "" && !f.State.Valid() {
		return f, fmt.Errorf("state %q is not active, paused or removed: %w", clipID(string(f.State)), ErrBadRegistryQuery)
	}
	if f.Limit < 0 {
		return f, fmt.Errorf("limit %d is negative: %w", f.Limit, ErrBadRegistryQuery)
	}
	if f.Limit == 0 || f.Limit > accounts.MaxPage {
		f.Limit = accounts.MaxPage
	}
	for _, s := range []struct {
		name, v string
		max     int
	}{
		{"kind", f.Kind, maxRegistryKindBytes},
		{"task queue", f.TaskQueue, maxRegistryTaskQueueBytes},
		{"after", f.After, accounts.MaxNameLength},
	} {
		if len(s.v) > s.max {
			return f, fmt.Errorf("%s is %d bytes, longer than %d: %w", s.name, len(s.v), s.max, ErrBadRegistryQuery)
		}
		if err := checkText(s.name, s.v); err != nil {
			return f, fmt.Errorf("%w: %w", err, ErrBadRegistryQuery)
		}
	}
	return f, nil
}

// changesLimit settles Changes' limit: 0 or above MaxPage is MaxPage.
func changesLimit(since int64, limit int) (int, error) {
	if limit < 0 {
		return 0, fmt.Errorf("registry changes after %d: limit %d is negative: %w", since, limit, ErrBadRegistryQuery)
	}
	if limit == 0 || limit > accounts.MaxPage {
		limit = accounts.MaxPage
	}
	return limit, nil
}

// registryWhere is the WHERE clause of a List or Count under f (without
// After, which only List uses), with placeholders made by ph(n) for the
// n-th argument (1-based), and its arguments. Without a state filter the
// removed entries are left out.
func registryWhere(f accounts.Filter, ph func(int) string) (string, []any) {
	args := []any{string(f.Class)}
	var b strings.Builder
	b.WriteString("class = " + ph(1))
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND " + cond + " " + ph(len(args)))
	}
	if f.State != "" {
		add("state =", string(f.State))
	} else {
		add("state <>", string(accounts.Removed))
	}
	if f.Kind != "" {
		add("kind =", f.Kind)
	}
	if f.TaskQueue != "" {
		add("task_queue =", f.TaskQueue)
	}
	return b.String(), args
}

// registryListSQL is List's query under f: where and args from
// registryWhere, then After and Limit.
func registryListSQL(f accounts.Filter, ph func(int) string) (string, []any) {
	where, args := registryWhere(f, ph)
	if f.After != "" {
		args = append(args, f.After)
		where += " AND name > " + ph(len(args))
	}
	args = append(args, f.Limit)
	return `SELECT ` + registryColumns + ` FROM registry WHERE ` + where + ` ORDER BY name LIMIT ` + ph(len(args)), args
}

func sqlitePlaceholder(int) string     { return "?" }
func postgresPlaceholder(n int) string { return "$" + strconv.Itoa(n) }

// ReleaseConsumer implements accounts.ConsumerReleaser on the registry
// view: the registry and the change feed live in one store, so a service
// given the registry can release a removed destination's hold on the feed.
func (r sqliteRegistry) ReleaseConsumer(ctx context.Context, name string) (bool, error) {
	return r.s.ReleaseConsumer(ctx, name)
}

// ReleaseConsumer implements accounts.ConsumerReleaser (see sqliteRegistry's).
func (r postgresRegistry) ReleaseConsumer(ctx context.Context, name string) (bool, error) {
	return r.s.ReleaseConsumer(ctx, name)
}
