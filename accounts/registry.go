package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Class tells the two namespaces of the registry apart: a platform
// (source account) and a destination may share a name.
type Class string

const (
	// ClassPlatform entries are source accounts (config.Platform).
	ClassPlatform Class = "platform"
	// ClassDestination entries receive the change feed (config.Destination).
	ClassDestination Class = "destination"
)

// State is an entry's life-cycle state.
type State string

const (
	// Active entries are served: their cursor (or delivery) runs.
	Active State = "active"
	// Paused entries stay registered and served, their cursor paused.
	Paused State = "paused"
	// Removed entries are kept as tombstones so that their name is never
	// reused by accident, and so that every worker's cache sees the removal.
	Removed State = "removed"
)

// Valid reports whether s is one of the three states.
func (s State) Valid() bool { return s == Active || s == Paused || s == Removed }

// Entry is one registered account or destination at one revision.
type Entry struct {
	Class Class  `json:"class"`
	Name  string `json:"name"`
	// Revision is the registry-wide sequence number of the entry's last
	// change: it grows on every write, across all entries, so "every
	// change after revision r" is one ordered read (Changes).
	Revision int64 `json:"revision"`
	State    State `json:"state"`
	// Kind and TaskQueue are copied out of Settings so that lists filter
	// by them and workers learn their queue set without decoding settings.
	Kind      string `json:"kind"`
	TaskQueue string `json:"task_queue"`
	// Settings is the validated, merged settings as JSON (config.Platform
	// or config.Destination): credential references, never secrets.
	Settings  json.RawMessage `json:"settings"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Filter selects a page of entries for List, in name order.
type Filter struct {
	// Class is required: pages run in name order, and a platform and a
	// destination may share a name.
	Class Class
	// State, Kind and TaskQueue filter when set; without State removed
	// entries are left out.
	State     State
	Kind      string
	TaskQueue string
	// After is the last name of the previous page ("" for the first).
	After string
	// Limit caps the page (0 or above MaxPage: MaxPage).
	Limit int
}

// MaxPage is the largest page List returns.
const MaxPage = 1000

// EachEntry calls fn with every entry f selects, page by page in name
// order (f.After and f.Limit are its own), and stops at fn's first error.
func EachEntry(ctx context.Context, reg Registry, f Filter, fn func(Entry) error) error {
	f.After, f.Limit = "", MaxPage
	for {
		page, err := reg.List(ctx, f)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < MaxPage {
			return nil
		}
		f.After = page[len(page)-1].Name
	}
}

// unlisted names the registered entries of class (removed ones left out)
// that listed does not hold: what an apply with Prune removes.
func unlisted(ctx context.Context, reg Registry, class Class, listed map[string]bool) ([]string, error) {
	var gone []string
	err := EachEntry(ctx, reg, Filter{Class: class}, func(e Entry) error {
		if !listed[e.Name] {
			gone = append(gone, e.Name)
		}
		return nil
	})
	return gone, err
}

// Errors a Registry returns; callers test them with errors.Is.
var (
	// ErrConflict: the entry changed since the revision the caller read
	// (or exists when the caller expected it not to).
	ErrConflict = errors.New("the entry changed since it was read")
	// ErrRemovedName: the name belongs to a removed entry; re-adding it
	// must name the removed entry's revision (Expect) explicitly.
	ErrRemovedName = errors.New("the name belongs to a removed entry")
	// ErrNotFound: no entry has the name.
	ErrNotFound = errors.New("no entry of that name")
)

// Any is the Expect value of a write that does not care what is stored
// (a declarative apply that just read the entry, say). Use it sparingly:
// it may overwrite a concurrent edit.
const Any int64 = -1

// Registry is the store of accounts and destinations. Both stores
// implement it (table registry, migration 0005; store.RegistryOf). Every
// method is safe for concurrent use by many processes.
type Registry interface {
	// Put writes e (its Class, Name, State, Kind, TaskQueue, Settings) as
	// a new revision and returns that revision. expect guards the write:
	// 0 means the name must be unused (ErrConflict if an entry is
	// active or paused, ErrRemovedName if it is removed); a revision means
	// the stored entry must still be at that revision (ErrConflict
	// otherwise; this is how a removed name is reused explicitly); Any
	// writes whatever is stored, except over a removed entry
	// (ErrRemovedName).
	Put(ctx context.Context, e Entry, expect int64) (int64, error)
	// Get returns the entry of that class and name, removed ones included.
	Get(ctx context.Context, class Class, name string) (Entry, bool, error)
	// List returns one page of entries in name order (see Filter).
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Count counts the entries a filter selects (After and Limit ignored).
	Count(ctx context.Context, f Filter) (int, error)
	// Changes returns up to limit entries (0 or above MaxPage: MaxPage)
	// of any class whose revision is above since, in revision order,
	// removed ones included: a cache that has seen revision since applies
	// them and moves on. Each entry appears once, at its latest revision.
	Changes(ctx context.Context, since int64, limit int) ([]Entry, error)
	// Revision is the registry's latest revision (0 when empty).
	Revision(ctx context.Context) (int64, error)
	// TaskQueues lists the distinct task queues of the entries of a class
	// that are not removed, sorted.
	TaskQueues(ctx context.Context, class Class) ([]string, error)
}

// Check reports what is wrong with an entry before it is written: a
// registry refuses what Check refuses.
func (e Entry) Check() error {
	switch {
	case e.Class != ClassPlatform && e.Class != ClassDestination:
		return fmt.Errorf("registry entry %q: class %q is neither %q nor %q", e.Name, e.Class, ClassPlatform, ClassDestination)
	case e.Name == "":
		return fmt.Errorf("registry entry: name is empty")
	case len(e.Name) > MaxNameLength:
		return fmt.Errorf("registry entry: name is %d bytes, longer than %d", len(e.Name), MaxNameLength)
	case !e.State.Valid():
		return fmt.Errorf("registry entry %q: state %q is not active, paused or removed", e.Name, e.State)
	case !json.Valid(e.Settings):
		return fmt.Errorf("registry entry %q: settings are not valid JSON", e.Name)
	case len(e.Settings) > MaxSettingsSize:
		return fmt.Errorf("registry entry %q: settings are %d bytes, more than %d", e.Name, len(e.Settings), MaxSettingsSize)
	}
	return nil
}

// MaxNameLength bounds a name (config allows 63 characters; the margin
// keeps a future longer rule from needing a migration).
const MaxNameLength = 200

// MaxSettingsSize bounds one entry's settings document.
const MaxSettingsSize = 64 << 10
