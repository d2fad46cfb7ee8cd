package accounts

import (
	"encoding/json"
	"fmt"

	"github.com/ordersync/ordersync/config"
)

// PlatformEntry is the registry entry for a validated platform, in state.
func PlatformEntry(p config.Platform, state State) (Entry, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return Entry{}, fmt.Errorf("platform %s: encode settings: %w", p.Name, err)
	}
	e := Entry{Class: ClassPlatform, Name: p.Name, State: state, Kind: p.Kind, TaskQueue: p.TaskQueue, Settings: b}
	return e, e.Check()
}

// DecodePlatform reads a platform entry's settings back, strictly, and
// validates them: an entry written by an older release, or by hand into
// the database, is checked like a platforms file.
func DecodePlatform(e Entry) (config.Platform, error) {
	if e.Class != ClassPlatform {
		return config.Platform{}, fmt.Errorf("registry entry %s is a %s, not a platform", e.Name, e.Class)
	}
	p, err := config.DecodePlatformJSON(e.Settings)
	if err != nil {
		return config.Platform{}, fmt.Errorf("registry entry %s (revision %d): %w", e.Name, e.Revision, err)
	}
	if p.Name != e.Name {
		return config.Platform{}, fmt.Errorf("registry entry %s (revision %d): its settings name %q", e.Name, e.Revision, p.Name)
	}
	if ve := p.Validate(); ve != nil {
		return config.Platform{}, fmt.Errorf("registry entry %s (revision %d): %w", e.Name, e.Revision, ve)
	}
	return p, nil
}

// SamePlatform reports whether two platforms' settings are equal as they
// are stored (JSON), so an apply that changes nothing writes nothing.
func SamePlatform(a, b config.Platform) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
