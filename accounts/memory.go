package accounts

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a Registry held in memory: for tests and for processes given
// their platforms directly (no store). It follows the contract of the
// store's registry as the stores do (memory_test.go).
type Memory struct {
	mu      sync.Mutex
	rev     int64
	entries map[Class]map[string]Entry
}

// NewMemory returns an empty in-memory registry.
func NewMemory() *Memory {
	return &Memory{entries: map[Class]map[string]Entry{ClassPlatform: {}, ClassDestination: {}}}
}

// Put implements Registry.
func (m *Memory) Put(_ context.Context, e Entry, expect int64) (int64, error) {
	if err := e.Check(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, found := m.entries[e.Class][e.Name]
	switch {
	case expect == 0 && found && old.State == Removed:
		return 0, fmt.Errorf("%s %s: %w", e.Class, e.Name, ErrRemovedName)
	case expect == 0 && found:
		return 0, fmt.Errorf("%s %s: %w (it exists at revision %d)", e.Class, e.Name, ErrConflict, old.Revision)
	case expect == Any && found && old.State == Removed:
		return 0, fmt.Errorf("%s %s: %w", e.Class, e.Name, ErrRemovedName)
	case expect > 0 && (!found || old.Revision != expect):
		return 0, fmt.Errorf("%s %s: %w (expected revision %d, found %d)", e.Class, e.Name, ErrConflict, expect, old.Revision)
	}
	m.rev++
	e.Revision, e.UpdatedAt = m.rev, time.Now().UTC()
	e.Settings = slices.Clone(e.Settings)
	m.entries[e.Class][e.Name] = e
	return e.Revision, nil
}

// Get implements Registry.
func (m *Memory) Get(_ context.Context, class Class, name string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[class][name]
	return e, ok, nil
}

func (m *Memory) selected(f Filter) []Entry {
	var out []Entry
	for _, e := range m.entries[f.Class] {
		switch {
		case f.State == "" && e.State == Removed, f.State != "" && e.State != f.State,
			f.Kind != "" && e.Kind != f.Kind, f.TaskQueue != "" && e.TaskQueue != f.TaskQueue:
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// List implements Registry.
func (m *Memory) List(_ context.Context, f Filter) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := f.Limit
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	var out []Entry
	for _, e := range m.selected(f) {
		if strings.Compare(e.Name, f.After) <= 0 && f.After != "" {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// Count implements Registry.
func (m *Memory) Count(_ context.Context, f Filter) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.selected(f)), nil
}

// Changes implements Registry.
func (m *Memory) Changes(_ context.Context, since int64, limit int) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	var out []Entry
	for _, byName := range m.entries {
		for _, e := range byName {
			if e.Revision > since {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Revision implements Registry.
func (m *Memory) Revision(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev, nil
}

// TaskQueues implements Registry.
func (m *Memory) TaskQueues(_ context.Context, class Class) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for _, e := range m.entries[class] {
		if e.State != Removed && e.TaskQueue != "" {
			set[e.TaskQueue] = true
		}
	}
	out := make([]string, 0, len(set))
	for q := range set {
		out = append(out, q)
	}
	sort.Strings(out)
	return out, nil
}
