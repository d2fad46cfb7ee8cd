package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/ordersync/ordersync/config"
)

// Engine is the Temporal side of onboarding and offboarding: what a
// registry change sets in motion. package starter implements it; tests
// use a fake.
type Engine interface {
	// Start makes the platform's cursor run (a no-op when it runs).
	// revision is the registry revision p was read at: the cursor's
	// settings (api.Settings) name it.
	Start(ctx context.Context, p config.Platform, revision int64) error
	// Reconfigure hands a running cursor its new settings (the tuning it
	// decides by, read at revision); a cursor that does not run is left
	// alone.
	Reconfigure(ctx context.Context, p config.Platform, revision int64) error
	// Pause and Resume pause and resume a running cursor.
	Pause(ctx context.Context, name, reason string) error
	Resume(ctx context.Context, name string) error
	// Stop ends the platform's cursor and cancels its slices in flight;
	// with discardDeadLetters its dead-letter workflow ends too, else it
	// stays for inspection.
	Stop(ctx context.Context, name string, discardDeadLetters bool) error
	// RunningQueue is the task queue the platform's cursor runs on, when
	// it runs: an account moved into the registry keeps it.
	RunningQueue(ctx context.Context, name string) (string, bool, error)
}

// Service adds, edits, pauses and removes accounts: the registry first
// (the source of truth), then the engine. The CLI and the HTTP API both
// go through it, so they behave alike.
type Service struct {
	Registry Registry
	Engine   Engine
	// Feed releases a removed destination's consumer row (the store's
	// change feed); nil uses the Registry when it can (destinations.go).
	Feed ConsumerReleaser
}

// EngineError is a registry change that was written but whose follow-up
// on Temporal failed: the registry holds the change (Entry), and the
// error says what to run to finish it.
type EngineError struct {
	Entry Entry
	Step  string // "start", "reconfigure", "pause", "resume", "stop"
	Fix   string
	Err   error
}

func (e *EngineError) Error() string {
	what := "cursor"
	if e.Entry.Class == ClassDestination {
		what = "Delivery"
	}
	return fmt.Sprintf("%s is registered at revision %d, but its %s's %s failed: %v (%s)",
		e.Entry.Name, e.Entry.Revision, what, e.Step, e.Err, e.Fix)
}

func (e *EngineError) Unwrap() error { return e.Err }

// AddOptions tune AddPlatform.
type AddOptions struct {
	// ReuseRemoved allows taking the name of a removed platform.
	ReuseRemoved bool
	// Paused registers the platform paused: its cursor starts paused.
	Paused bool
}

// AddPlatform registers a validated platform and starts its cursor.
func (s *Service) AddPlatform(ctx context.Context, p config.Platform, opts AddOptions) (Entry, error) {
	if ve := p.Validate(); ve != nil {
		return Entry{}, ve
	}
	expect := int64(0)
	old, found, err := s.Registry.Get(ctx, ClassPlatform, p.Name)
	if err != nil {
		return Entry{}, err
	}
	if found {
		switch {
		case old.State != Removed:
			return Entry{}, fmt.Errorf("platform %s: %w at revision %d (use edit to change it)", p.Name, ErrExists, old.Revision)
		case !opts.ReuseRemoved:
			return Entry{}, fmt.Errorf("platform %s: %w (revision %d); pass --reuse-removed to register the name again", p.Name, ErrRemovedName, old.Revision)
		}
		expect = old.Revision
	}
	state := Active
	if opts.Paused {
		state = Paused
	}
	e, err := s.put(ctx, p, state, expect)
	if err != nil {
		return Entry{}, err
	}
	if err := s.Engine.Start(ctx, p, e.Revision); err != nil {
		return e, &EngineError{Entry: e, Step: "start", Fix: "run `ordersync platform start " + p.Name + "`", Err: err}
	}
	if opts.Paused {
		if err := s.Engine.Pause(ctx, p.Name, "added paused"); err != nil {
			return e, &EngineError{Entry: e, Step: "pause", Fix: "run `ordersync platform pause " + p.Name + "`", Err: err}
		}
	}
	return e, nil
}

// ErrExists: AddPlatform of a name that is registered and not removed.
var ErrExists = errors.New("already registered")

// EditPlatform applies edit to the registered settings, validates the
// result and writes it guarded by the revision read (expect, when not 0,
// must match it too: a back office that read revision 7 edits revision
// 7). A running cursor gets the new settings at once.
func (s *Service) EditPlatform(ctx context.Context, name string, expect int64, edit func(*config.Platform) error) (Entry, error) {
	old, p, err := s.current(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	if expect != 0 && expect != old.Revision {
		return Entry{}, fmt.Errorf("platform %s: %w (read at revision %d, now %d)", name, ErrConflict, expect, old.Revision)
	}
	before := p
	if err := edit(&p); err != nil {
		return Entry{}, err
	}
	if p.Name != name {
		return Entry{}, fmt.Errorf("platform %s: the name cannot be edited (remove it and add the new name)", name)
	}
	if ve := p.Validate(); ve != nil {
		return Entry{}, ve
	}
	if SamePlatform(before, p) {
		return old, nil
	}
	e, err := s.put(ctx, p, old.State, old.Revision)
	if err != nil {
		return Entry{}, err
	}
	if err := s.Engine.Reconfigure(ctx, p, e.Revision); err != nil {
		return e, &EngineError{Entry: e, Step: "reconfigure", Fix: "run `ordersync platform edit " + name + "` again", Err: err}
	}
	return e, nil
}

// SetPaused pauses or resumes a registered platform, in the registry and
// on its cursor.
func (s *Service) SetPaused(ctx context.Context, name string, paused bool, reason string) (Entry, error) {
	old, p, err := s.current(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	state, step := Active, "resume"
	if paused {
		state, step = Paused, "pause"
	}
	e := old
	if old.State != state {
		if e, err = s.put(ctx, p, state, old.Revision); err != nil {
			return Entry{}, err
		}
	}
	if paused {
		err = s.Engine.Pause(ctx, name, reason)
	} else {
		err = s.Engine.Resume(ctx, name)
	}
	if err != nil {
		return e, &EngineError{Entry: e, Step: step, Fix: "run `ordersync platform " + step + " " + name + "`", Err: err}
	}
	return e, nil
}

// RemoveOptions tune RemovePlatform.
type RemoveOptions struct {
	// DiscardDeadLetters ends the platform's dead-letter workflow too;
	// by default it stays, listable, for an operator to look at.
	DiscardDeadLetters bool
}

// RemovePlatform marks a platform removed (workers stop fetching for it
// at once: its activities refuse it) and ends its cursor and slices.
func (s *Service) RemovePlatform(ctx context.Context, name string, opts RemoveOptions) (Entry, error) {
	old, p, err := s.current(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	e, err := s.put(ctx, p, Removed, old.Revision)
	if err != nil {
		return Entry{}, err
	}
	if err := s.Engine.Stop(ctx, name, opts.DiscardDeadLetters); err != nil {
		return e, &EngineError{Entry: e, Step: "stop", Fix: "run `temporal workflow cancel --workflow-id cursor/" + name + "`", Err: err}
	}
	return e, nil
}

// current reads a registered, not removed platform.
func (s *Service) current(ctx context.Context, name string) (Entry, config.Platform, error) {
	e, found, err := s.Registry.Get(ctx, ClassPlatform, name)
	switch {
	case err != nil:
		return Entry{}, config.Platform{}, err
	case !found:
		return Entry{}, config.Platform{}, fmt.Errorf("platform %q: %w", name, ErrNotFound)
	case e.State == Removed:
		return Entry{}, config.Platform{}, fmt.Errorf("platform %s: %w at revision %d (add it again, explicitly reusing the name)", name, ErrRemovedName, e.Revision)
	}
	p, err := DecodePlatform(e)
	return e, p, err
}

func (s *Service) put(ctx context.Context, p config.Platform, state State, expect int64) (Entry, error) {
	e, err := PlatformEntry(p, state)
	if err != nil {
		return Entry{}, err
	}
	rev, err := s.Registry.Put(ctx, e, expect)
	if err != nil {
		return Entry{}, fmt.Errorf("platform %s: %w", p.Name, err)
	}
	e.Revision = rev
	return e, nil
}
