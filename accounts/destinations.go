package accounts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/ordersync/ordersync/config"
)

// DeliveryEngine is the Temporal side of a destination's life: what adding,
// editing and removing a destination sets in motion. package starter
// implements it beside Engine; a Service's Engine must implement both to
// manage destinations.
type DeliveryEngine interface {
	// StartDelivery makes the destination's Delivery workflow run with
	// these settings, read at the registry's revision: it starts one, or
	// hands a running one the settings.
	StartDelivery(ctx context.Context, d config.Destination, revision int64) error
	// ReconfigureDelivery hands a running Delivery new settings (its
	// `config` message), read at revision; one that does not run is left
	// alone.
	ReconfigureDelivery(ctx context.Context, d config.Destination, revision int64) error
	// StopDelivery ends the destination's Delivery and returns once it has
	// ended, so that nothing of it acknowledges the feed afterwards.
	StopDelivery(ctx context.Context, name string) error
}

// ConsumerReleaser forgets a change-feed consumer (store.Feed): a removed
// destination's acknowledged seq must stop holding compaction back.
type ConsumerReleaser interface {
	ReleaseConsumer(ctx context.Context, name string) (bool, error)
}

// DestinationEntry is the registry entry for a validated destination, in state.
func DestinationEntry(d config.Destination, state State) (Entry, error) {
	return encodeEntry(ClassDestination, d.Name, d.Kind, d.TaskQueue, d, state)
}

// DecodeDestination reads a destination entry's settings back, strictly
// (an unknown field is an error), and validates them: an entry written by
// an older release, or by hand into the database, is checked like a
// platforms file's destinations block. Platforms it names need not be
// registered (they may be added later).
func DecodeDestination(e Entry) (config.Destination, error) {
	return decodeEntry(e, ClassDestination, DecodeDestinationJSON, func(d config.Destination) (string, error) {
		if ve := d.Validate(nil); ve != nil {
			return d.Name, ve
		}
		return d.Name, nil
	})
}

// DecodeDestinationJSON decodes one destination's settings from a JSON
// object, strictly: an unknown field or a value of the wrong type is an
// error naming it, and so is anything after the object. It does not
// validate (call Validate).
func DecodeDestinationJSON(b []byte) (config.Destination, error) {
	var d config.Destination
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return config.Destination{}, fmt.Errorf("destination settings: %w", err)
	}
	if dec.More() {
		return config.Destination{}, fmt.Errorf("destination settings: more than one JSON value")
	}
	return d, nil
}

// SameDestination reports whether two destinations' settings are equal as
// they are stored (JSON), so an apply that changes nothing writes nothing.
func SameDestination(a, b config.Destination) bool { return sameJSON(a, b) }

// DestinationChange is what ApplyDestinations did (or, in a dry run,
// would do) to one destination.
type DestinationChange struct {
	Destination string `json:"destination"`
	Action      string `json:"action"`
	// Fields are the top-level settings an update changes, sorted.
	Fields []string `json:"fields,omitempty"`
	// Revision is the entry's revision after the change (0 in a dry run).
	Revision int64 `json:"revision,omitempty"`
}

// AddDestination registers a validated destination and starts its
// Delivery workflow. The running workers deliver to it within a registry
// poll, on its task queue, without a restart. A removed name is taken
// again only with opts.ReuseRemoved; the re-added destination starts from
// the feed's retained changes (its old acknowledgement was released).
func (s *Service) AddDestination(ctx context.Context, d config.Destination, opts AddOptions) (Entry, error) {
	if opts.Paused {
		return Entry{}, fmt.Errorf("destination %s: a destination is added active (pause its delivery with `ordersync deliveries pause`)", d.Name)
	}
	eng, err := s.deliveryEngine()
	if err != nil {
		return Entry{}, err
	}
	if ve := d.Validate(nil); ve != nil {
		return Entry{}, ve
	}
	expect := int64(0)
	old, found, err := s.Registry.Get(ctx, ClassDestination, d.Name)
	if err != nil {
		return Entry{}, err
	}
	if found {
		switch {
		case old.State != Removed:
			return Entry{}, fmt.Errorf("destination %s: %w at revision %d (use edit to change it)", d.Name, ErrExists, old.Revision)
		case !opts.ReuseRemoved:
			return Entry{}, fmt.Errorf("destination %s: %w (revision %d); pass --reuse-removed to register the name again", d.Name, ErrRemovedName, old.Revision)
		}
		expect = old.Revision
	}
	e, err := s.putDestination(ctx, d, Active, expect)
	if err != nil {
		return Entry{}, err
	}
	if err := eng.StartDelivery(ctx, d, e.Revision); err != nil {
		return e, &EngineError{Entry: e, Step: "start", Fix: "run `ordersync deliveries start " + d.Name + "`", Err: err}
	}
	return e, nil
}

// EditDestination applies edit to the registered settings, validates the
// result and writes it guarded by the revision read (and by expect, when
// not 0). The workers send with the new settings from their next batch
// (they resolve a destination by name from the registry); the running
// Delivery gets them at once (batch size, rate, windows, task queue).
func (s *Service) EditDestination(ctx context.Context, name string, expect int64, edit func(*config.Destination) error) (Entry, error) {
	eng, old, d, err := s.destinationToChange(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	if old.State == Removed {
		return Entry{}, fmt.Errorf("destination %s was removed at revision %d; add it again with --reuse-removed", name, old.Revision)
	}
	if expect != 0 && expect != old.Revision {
		return Entry{}, fmt.Errorf("destination %s: %w (read at revision %d, now %d)", name, ErrConflict, expect, old.Revision)
	}
	before := d
	if err := edit(&d); err != nil {
		return Entry{}, err
	}
	if d.Name != name {
		return Entry{}, fmt.Errorf("destination %s: the name cannot be edited (remove it and add the new name)", name)
	}
	if ve := d.Validate(nil); ve != nil {
		return Entry{}, ve
	}
	if SameDestination(before, d) {
		return old, nil
	}
	e, err := s.putDestination(ctx, d, old.State, old.Revision)
	if err != nil {
		return Entry{}, err
	}
	if err := eng.ReconfigureDelivery(ctx, d, e.Revision); err != nil {
		return e, &EngineError{Entry: e, Step: "reconfigure", Fix: "run `ordersync deliveries edit " + name + "` again", Err: err}
	}
	return e, nil
}

// RemoveDestination marks a destination removed (workers refuse to send
// to it from then on), ends its Delivery workflow and, once it has ended,
// releases the destination's consumer row in the change feed, so
// compaction no longer keeps changes for it. Removing a destination that
// is already removed finishes a removal whose stop or release failed.
func (s *Service) RemoveDestination(ctx context.Context, name string) (Entry, error) {
	eng, old, d, err := s.destinationToChange(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	e := old
	if old.State != Removed {
		if e, err = s.putDestination(ctx, d, Removed, old.Revision); err != nil {
			return Entry{}, err
		}
	}
	return e, s.stopAndRelease(ctx, eng, e, name)
}

// RemoveUnregisteredDestination removes a destination only a platforms
// file declares (never registered, so RemoveDestination finds nothing):
// it is registered as removed, which makes workers refuse it and a worker
// seeding the registry from the file leave it alone, then its Delivery is
// ended and its consumer row released as RemoveDestination does. A
// destination registered meanwhile is left to RemoveDestination (the
// create-only write fails with ErrConflict).
func (s *Service) RemoveUnregisteredDestination(ctx context.Context, d config.Destination) (Entry, error) {
	eng, err := s.deliveryEngine()
	if err != nil {
		return Entry{}, err
	}
	if ve := d.Validate(nil); ve != nil {
		return Entry{}, ve
	}
	e, err := s.putDestination(ctx, d, Removed, 0)
	if err != nil {
		return Entry{}, err
	}
	return e, s.stopAndRelease(ctx, eng, e, d.Name)
}

// stopAndRelease ends a removed destination's Delivery and then releases
// its consumer row in the change feed.
func (s *Service) stopAndRelease(ctx context.Context, eng DeliveryEngine, e Entry, name string) error {
	fix := "run `ordersync deliveries remove " + name + "` again"
	if err := eng.StopDelivery(ctx, name); err != nil {
		return &EngineError{Entry: e, Step: "stop", Fix: fix, Err: err}
	}
	rel := s.releaser()
	if rel == nil {
		return &EngineError{Entry: e, Step: "release", Fix: fix + " with a store",
			Err: errors.New("no change feed to release the destination's consumer row from")}
	}
	if _, err := rel.ReleaseConsumer(ctx, name); err != nil {
		return &EngineError{Entry: e, Step: "release", Fix: fix, Err: err}
	}
	return nil
}

// ApplyDestinations makes the registry hold exactly the given destinations'
// settings (a platforms file's destinations block, loaded and validated),
// as ApplyPlatforms does for platforms: new ones are added and their
// Delivery started, changed ones updated and their Delivery reconfigured,
// unchanged ones have their Delivery started (with the registry's
// settings) if it does not run, and with Prune those the file lost are
// removed and their hold on the feed released.
func (s *Service) ApplyDestinations(ctx context.Context, dests []config.Destination, opts ApplyOptions) ([]DestinationChange, error) {
	if len(dests) == 0 && !opts.Prune {
		return nil, nil
	}
	eng, err := s.deliveryEngine()
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, d := range dests {
		if listed[d.Name] {
			return nil, fmt.Errorf("destination %s is listed twice", d.Name)
		}
		listed[d.Name] = true
		if ve := d.Validate(nil); ve != nil {
			return nil, ve
		}
	}
	var changes []DestinationChange
	for _, d := range dests {
		ch, err := s.applyDestination(ctx, eng, d, opts)
		if err != nil {
			return changes, err
		}
		changes = append(changes, ch)
	}
	if !opts.Prune {
		return changes, nil
	}
	gone, err := unlisted(ctx, s.Registry, ClassDestination, listed)
	if err != nil {
		return changes, err
	}
	for _, name := range gone {
		ch := DestinationChange{Destination: name, Action: ActionRemove}
		if !opts.DryRun {
			e, err := s.RemoveDestination(ctx, name)
			if err != nil {
				return changes, err
			}
			ch.Revision = e.Revision
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

func (s *Service) applyDestination(ctx context.Context, eng DeliveryEngine, d config.Destination, opts ApplyOptions) (DestinationChange, error) {
	a, err := applyEntry(ctx, s.Registry, d.Name, d, opts, applyClass[config.Destination]{
		noun:           "destination",
		class:          ClassDestination,
		decode:         DecodeDestination,
		add:            s.AddDestination,
		edit:           s.EditDestination,
		start:          eng.StartDelivery,
		startFix:       "run `ordersync deliveries start " + d.Name + "`",
		startAfterEdit: true,
	})
	return DestinationChange{Destination: d.Name, Action: a.action, Fields: a.fields, Revision: a.revision}, err
}

// deliveryEngine is the service's engine as a DeliveryEngine.
func (s *Service) deliveryEngine() (DeliveryEngine, error) {
	eng, ok := s.Engine.(DeliveryEngine)
	if !ok {
		return nil, fmt.Errorf("this service's engine (%T) cannot start or stop deliveries", s.Engine)
	}
	return eng, nil
}

// releaser is where a removed destination's consumer row is released:
// Feed, or else the registry when it lives in the store that keeps the
// feed (store.RegistryOf's registries do).
func (s *Service) releaser() ConsumerReleaser {
	if s.Feed != nil {
		return s.Feed
	}
	if r, ok := s.Registry.(ConsumerReleaser); ok {
		return r
	}
	return nil
}

// destinationToChange is what an edit or a removal starts from: the
// engine that moves the Delivery along, and the registered destination.
func (s *Service) destinationToChange(ctx context.Context, name string) (DeliveryEngine, Entry, config.Destination, error) {
	eng, err := s.deliveryEngine()
	if err != nil {
		return nil, Entry{}, config.Destination{}, err
	}
	old, d, err := s.currentDestination(ctx, name)
	if err != nil {
		return nil, Entry{}, config.Destination{}, err
	}
	return eng, old, d, nil
}

// currentDestination reads a registered destination, removed ones included.
func (s *Service) currentDestination(ctx context.Context, name string) (Entry, config.Destination, error) {
	e, found, err := s.Registry.Get(ctx, ClassDestination, name)
	switch {
	case err != nil:
		return Entry{}, config.Destination{}, err
	case !found:
		return Entry{}, config.Destination{}, fmt.Errorf("destination %q: %w", name, ErrNotFound)
	}
	d, err := DecodeDestination(e)
	return e, d, err
}

func (s *Service) putDestination(ctx context.Context, d config.Destination, state State, expect int64) (Entry, error) {
	e, err := DestinationEntry(d, state)
	if err != nil {
		return Entry{}, err
	}
	rev, err := s.Registry.Put(ctx, e, expect)
	if err != nil {
		return Entry{}, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	e.Revision = rev
	return e, nil
}

// changedSettings names the top-level settings (by their JSON names) in
// which b differs from a, sorted.
func changedSettings(a, b any) []string {
	var ma, mb map[string]any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []string
	for k, va := range ma {
		if vb, ok := mb[k]; !ok || !reflect.DeepEqual(va, vb) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
