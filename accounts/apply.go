package accounts

import (
	"context"
	"fmt"
	"sync"

	"github.com/ordersync/ordersync/config"
)

// Actions a declarative apply reports per platform.
const (
	ActionAdd       = "add"
	ActionUpdate    = "update"
	ActionUnchanged = "unchanged"
	ActionRemove    = "remove"
)

// Change is what ApplyPlatforms did (or, in a dry run, would do) to one
// platform.
type Change struct {
	Platform string `json:"platform"`
	Action   string `json:"action"`
	// Fields are the top-level settings an update changes, sorted.
	Fields []string `json:"fields,omitempty"`
	// Revision is the entry's revision after the change (0 in a dry run).
	Revision int64 `json:"revision,omitempty"`
	// Note says what else happened: a task queue kept from a running
	// cursor, a cursor started again.
	Note string `json:"note,omitempty"`
}

// ApplyOptions tune ApplyPlatforms.
type ApplyOptions struct {
	// Prune removes registered platforms the file does not list.
	Prune bool
	// DryRun computes the changes and writes nothing.
	DryRun bool
	// ReuseRemoved lets the file take names of removed platforms.
	ReuseRemoved bool
	// DiscardDeadLetters applies to platforms pruned.
	DiscardDeadLetters bool
}

// ApplyPlatforms makes the registry hold exactly the given platforms'
// settings (a platforms file, loaded and validated): new ones are added
// and started, changed ones updated and their cursors reconfigured,
// unchanged ones have their cursor started if it is not running, and with
// Prune those the file lost are removed. A paused entry stays paused.
//
// A platform registered for the first time whose cursor already runs (a
// setup from before the registry) keeps the task queue its cursor runs on,
// so moving to the registry strands nothing.
func (s *Service) ApplyPlatforms(ctx context.Context, platforms []config.Platform, opts ApplyOptions) ([]Change, error) {
	listed := map[string]bool{}
	for _, p := range platforms {
		if listed[p.Name] {
			return nil, fmt.Errorf("platform %s is listed twice", p.Name)
		}
		listed[p.Name] = true
		if ve := p.Validate(); ve != nil {
			return nil, ve
		}
	}
	changes, err := s.applyEach(ctx, platforms, opts)
	if err != nil {
		return changes, err
	}
	if !opts.Prune {
		return changes, nil
	}
	gone, err := unlisted(ctx, s.Registry, ClassPlatform, listed)
	if err != nil {
		return changes, err
	}
	for _, name := range gone {
		ch := Change{Platform: name, Action: ActionRemove}
		if !opts.DryRun {
			e, err := s.RemovePlatform(ctx, name, RemoveOptions{DiscardDeadLetters: opts.DiscardDeadLetters})
			if err != nil {
				return changes, err
			}
			ch.Revision = e.Revision
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

// applyConcurrency is how many platforms an apply works on at once: each
// is a few round trips to the store and to Temporal, so a file of
// thousands takes minutes one by one.
const applyConcurrency = 8

// applyEach applies every platform, applyConcurrency at a time, and
// returns the changes in the file's order. On an error it returns the
// changes of the platforms before the first one that failed, and that
// error (platforms after it may have been applied too: an apply is
// idempotent, run it again).
func (s *Service) applyEach(ctx context.Context, platforms []config.Platform, opts ApplyOptions) ([]Change, error) {
	changes := make([]Change, len(platforms))
	errs := make([]error, len(platforms))
	sem := make(chan struct{}, applyConcurrency)
	var wg sync.WaitGroup
	for i, p := range platforms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			changes[i], errs[i] = s.applyOne(ctx, p, opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return changes[:i], err
		}
	}
	return changes, nil
}

func (s *Service) applyOne(ctx context.Context, p config.Platform, opts ApplyOptions) (Change, error) {
	wasRunning := false
	a, err := applyEntry(ctx, s.Registry, p.Name, p, opts, applyClass[config.Platform]{
		noun:   "platform",
		class:  ClassPlatform,
		decode: DecodePlatform,
		prepareAdd: func(ctx context.Context, p *config.Platform) (string, error) {
			q, running, err := s.Engine.RunningQueue(ctx, p.Name)
			if err != nil || !running {
				return "", err
			}
			wasRunning = true
			if q == p.TaskQueue {
				return "its cursor was running: it gets these settings", nil
			}
			note := fmt.Sprintf("keeps task queue %s, where its cursor runs (not %s); the cursor gets these settings", q, p.TaskQueue)
			p.TaskQueue = q
			return note, nil
		},
		add: func(ctx context.Context, p config.Platform, o AddOptions) (Entry, error) {
			e, err := s.AddPlatform(ctx, p, o)
			if err == nil && wasRunning {
				// A cursor from before the registry runs with the settings
				// it was started or last configured with: hand it these.
				if err := s.Engine.Reconfigure(ctx, p, e.Revision); err != nil {
					return e, &EngineError{Entry: e, Step: "reconfigure", Fix: "run `ordersync platform apply` again", Err: err}
				}
			}
			return e, err
		},
		edit:     s.EditPlatform,
		start:    s.Engine.Start,
		startFix: "run `ordersync platform start " + p.Name + "`",
	})
	return Change{Platform: p.Name, Action: a.action, Fields: a.fields, Revision: a.revision, Note: a.note}, err
}

// applyClass is how an apply treats one class of registry entry: the
// steps are the same for platforms and destinations, the service's
// methods and the engine's start differ.
type applyClass[T any] struct {
	noun   string
	class  Class
	decode func(Entry) (T, error)
	// prepareAdd, when set, adjusts an entry about to be added and says
	// how in a note.
	prepareAdd func(context.Context, *T) (string, error)
	add        func(context.Context, T, AddOptions) (Entry, error)
	edit       func(ctx context.Context, name string, expect int64, edit func(*T) error) (Entry, error)
	// start starts the entry's workflow where it does not run, with the
	// given settings read at the given revision (an unchanged entry's, or
	// with startAfterEdit an updated one's); startFix says how to do it by
	// hand.
	start          func(context.Context, T, int64) error
	startFix       string
	startAfterEdit bool
}

// applied is what applyEntry did to one entry.
type applied struct {
	action   string
	fields   []string
	revision int64
	note     string
}

// applyEntry makes the registry hold v under name: added (a removed name
// only with ReuseRemoved), updated, or left unchanged with its workflow
// started if it does not run.
func applyEntry[T any](ctx context.Context, reg Registry, name string, v T, opts ApplyOptions, c applyClass[T]) (applied, error) {
	var a applied
	e, found, err := reg.Get(ctx, c.class, name)
	if err != nil {
		return a, err
	}
	if !found || e.State == Removed {
		if found && !opts.ReuseRemoved {
			return a, fmt.Errorf("%s %s: %w (revision %d); pass --reuse-removed to register the name again", c.noun, name, ErrRemovedName, e.Revision)
		}
		a.action = ActionAdd
		if c.prepareAdd != nil {
			if a.note, err = c.prepareAdd(ctx, &v); err != nil {
				return a, err
			}
		}
		if opts.DryRun {
			return a, nil
		}
		added, err := c.add(ctx, v, AddOptions{ReuseRemoved: opts.ReuseRemoved})
		a.revision = added.Revision
		return a, err
	}
	current, err := c.decode(e)
	if err != nil {
		return a, err
	}
	a.fields = changedSettings(current, v)
	if len(a.fields) == 0 {
		a.action, a.revision = ActionUnchanged, e.Revision
		if !opts.DryRun {
			if err := c.start(ctx, current, e.Revision); err != nil {
				return a, &EngineError{Entry: e, Step: "start", Fix: c.startFix, Err: err}
			}
		}
		return a, nil
	}
	a.action = ActionUpdate
	if opts.DryRun {
		return a, nil
	}
	edited, err := c.edit(ctx, name, e.Revision, func(cur *T) error {
		*cur = v
		return nil
	})
	a.revision = edited.Revision
	if err != nil || !c.startAfterEdit {
		return a, err
	}
	// A workflow that does not run (ended by hand, or never started) runs
	// with the new settings; a running one was reconfigured by the edit.
	if err := c.start(ctx, v, edited.Revision); err != nil {
		return a, &EngineError{Entry: edited, Step: "start", Fix: c.startFix, Err: err}
	}
	return a, nil
}
