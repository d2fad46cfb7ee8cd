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
	ch := Change{Platform: p.Name}
	old, found, err := s.Registry.Get(ctx, ClassPlatform, p.Name)
	if err != nil {
		return ch, err
	}
	if !found || old.State == Removed {
		if found && !opts.ReuseRemoved {
			return ch, fmt.Errorf("platform %s: %w (revision %d); pass --reuse-removed to register the name again", p.Name, ErrRemovedName, old.Revision)
		}
		ch.Action = ActionAdd
		if q, running, err := s.Engine.RunningQueue(ctx, p.Name); err != nil {
			return ch, err
		} else if running && q != p.TaskQueue {
			ch.Note = fmt.Sprintf("keeps task queue %s, where its cursor runs (not %s)", q, p.TaskQueue)
			p.TaskQueue = q
		}
		if opts.DryRun {
			return ch, nil
		}
		e, err := s.AddPlatform(ctx, p, AddOptions{ReuseRemoved: opts.ReuseRemoved})
		ch.Revision = e.Revision
		return ch, err
	}
	current, err := DecodePlatform(old)
	if err != nil {
		return ch, err
	}
	ch.Fields = changedSettings(current, p)
	if len(ch.Fields) == 0 {
		ch.Action, ch.Revision = ActionUnchanged, old.Revision
		if !opts.DryRun && old.State != Removed {
			if err := s.Engine.Start(ctx, current); err != nil {
				return ch, &EngineError{Entry: old, Step: "start", Fix: "run `ordersync platform start " + p.Name + "`", Err: err}
			}
		}
		return ch, nil
	}
	ch.Action = ActionUpdate
	if opts.DryRun {
		return ch, nil
	}
	e, err := s.EditPlatform(ctx, p.Name, old.Revision, func(cur *config.Platform) error {
		*cur = p
		return nil
	})
	ch.Revision = e.Revision
	return ch, err
}
