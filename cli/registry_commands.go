package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
)

// What `platform` and `deliveries` share: both classes of registry entry
// are added, edited, removed and seeded from a platforms file the same
// way; the class-specific parts (building, decoding, the engine's steps)
// come in as functions.

// entryPrinter says what a registry change did to an entry.
type entryPrinter func(app *App, verb string, e accounts.Entry) error

// toAdd is what add registers: with -f FILE and no --kind, the entry the
// file holds under the name (fromFile); else one built from the flags
// (fromFlags), which need --kind (need says what else). A problem with
// the flags is a usage error.
func toAdd[T any](app *App, name, kind, need string, fromFile func(*config.File) (T, error), fromFlags func() (T, error)) (T, error) {
	var zero T
	if kind == "" && app.fileGiven {
		f, err := app.LoadPlatforms()
		if err != nil {
			return zero, err
		}
		return fromFile(f)
	}
	if kind == "" {
		return zero, Usage(fmt.Errorf("give --kind %s, or -f FILE holding %s", need, clipText(name, 100)))
	}
	v, err := fromFlags()
	if err != nil {
		return zero, Usage(err)
	}
	return v, nil
}

// runAdd registers an entry built from the command's flags or file.
func runAdd(cmd *cobra.Command, app *App, add func(context.Context, *accounts.Service) (accounts.Entry, error), print entryPrinter) error {
	svc, _, done, err := app.accountService(cmd.Context())
	if err != nil {
		return err
	}
	defer done()
	e, err := add(cmd.Context(), svc)
	if err != nil {
		return registryError(err)
	}
	return print(app, "added", e)
}

// editFlags are edit's flags, the same for every class.
type editFlags struct {
	sets, unsets []string
	revision     int64
}

func (f *editFlags) register(cmd *cobra.Command, noun string) {
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "a setting as key=value (dotted key, YAML value); repeatable")
	cmd.Flags().StringArrayVar(&f.unsets, "unset", nil, "a setting to put back to its default; repeatable")
	cmd.Flags().Int64Var(&f.revision, "revision", 0, "apply only if the "+noun+" is still at this revision")
}

// runEdit applies --set and --unset (through apply) to the registered
// settings of name, through the service's edit method for the class. A
// problem with the flags is a usage error; the registry's refusals too.
func runEdit[T any](cmd *cobra.Command, app *App, name string, f editFlags,
	edit func(*accounts.Service, context.Context, string, int64, func(*T) error) (accounts.Entry, error),
	apply func(v *T, sets, unsets []string) error, print entryPrinter) error {
	if len(f.sets) == 0 && len(f.unsets) == 0 {
		return Usage(fmt.Errorf("nothing to change: give --set key=value or --unset key"))
	}
	svc, _, done, err := app.accountService(cmd.Context())
	if err != nil {
		return err
	}
	defer done()
	var editErr error
	e, err := edit(svc, cmd.Context(), name, f.revision, func(v *T) error {
		editErr = apply(v, f.sets, f.unsets)
		return editErr
	})
	if editErr != nil {
		return Usage(editErr)
	}
	if err != nil {
		return registryError(err)
	}
	return print(app, "edited", e)
}

// runRemove removes each named entry in turn, stopping at the first
// failure (the ones before it stay removed, and are printed).
func runRemove(cmd *cobra.Command, app *App, names []string, remove func(context.Context, *accounts.Service, string) (accounts.Entry, error), print entryPrinter) error {
	svc, _, done, err := app.accountService(cmd.Context())
	if err != nil {
		return err
	}
	defer done()
	for _, name := range names {
		e, err := remove(cmd.Context(), svc, name)
		if err != nil {
			return registryError(err)
		}
		if err := print(app, "removed", e); err != nil {
			return err
		}
	}
	return nil
}

// printEntryAs says what a registry change did, as view in JSON.
func printEntryAs(app *App, verb string, e accounts.Entry, view any) error {
	if app.Output == "json" {
		return writeJSON(app, view)
	}
	fmt.Fprintf(app.Out, "%s: %s at revision %d (kind %s, task queue %s, %s)\n", term(e.Name), verb, e.Revision, term(e.Kind), term(e.TaskQueue), e.State)
	return nil
}

// entryFields are what a registry entry's row shows after its name (the
// name's JSON key says the class), embedded so they stay flat in JSON.
type entryFields struct {
	Kind      string          `json:"kind"`
	State     accounts.State  `json:"state"`
	Revision  int64           `json:"revision"`
	TaskQueue string          `json:"task_queue"`
	UpdatedAt time.Time       `json:"updated_at"`
	Settings  json.RawMessage `json:"settings,omitempty"`
}

func fieldsOf(e accounts.Entry) entryFields {
	return entryFields{Kind: e.Kind, State: e.State, Revision: e.Revision, TaskQueue: e.TaskQueue, UpdatedAt: e.UpdatedAt, Settings: e.Settings}
}

// seedClass is how a platforms file's entries of one class are seeded
// into the registry.
type seedClass[T any] struct {
	noun  string // "platform" or "destination": the log attribute too
	class accounts.Class
	name  func(T) string
	// differs says whether the registered entry's settings differ from
	// the file's.
	differs func(accounts.Entry, T) bool
	// prepare, when set, adjusts an entry about to be registered.
	prepare func(context.Context, *T) error
	entry   func(T) (accounts.Entry, error)
	// The log messages: the entry is removed, differs, was registered.
	removedMsg, differsMsg, registeredMsg string
}

// seedEntries registers the file's entries that the registry does not
// hold yet: never over an entry, never taking a removed name, a file
// entry that differs from the registry's named in a warning.
func seedEntries[T any](ctx context.Context, reg accounts.Registry, f *config.File, items []T, c seedClass[T], logf func(msg string, args ...any)) error {
	for _, it := range items {
		name := c.name(it)
		e, found, err := reg.Get(ctx, c.class, name)
		if err != nil {
			return err
		}
		if found {
			if e.State == accounts.Removed {
				logf(c.removedMsg, c.noun, name, "revision", e.Revision)
			} else if c.differs(e, it) {
				logf(c.differsMsg, c.noun, name, "file", f.Path, "revision", e.Revision)
			}
			continue
		}
		if c.prepare != nil {
			if err := c.prepare(ctx, &it); err != nil {
				return err
			}
		}
		entry, err := c.entry(it)
		if err != nil {
			return err
		}
		rev, err := reg.Put(ctx, entry, 0)
		if errors.Is(err, accounts.ErrConflict) || errors.Is(err, accounts.ErrRemovedName) {
			continue // another worker registered it a moment ago
		}
		if err != nil {
			return fmt.Errorf("register %s %s from %s: %w", c.noun, name, f.Path, err)
		}
		logf(c.registeredMsg, c.noun, name, "revision", rev, "task_queue", entry.TaskQueue)
	}
	return nil
}
