package accounts

import (
	"encoding/json"
	"fmt"

	"github.com/ordersync/ordersync/config"
)

// PlatformEntry is the registry entry for a validated platform, in state.
func PlatformEntry(p config.Platform, state State) (Entry, error) {
	return encodeEntry(ClassPlatform, p.Name, p.Kind, p.TaskQueue, p, state)
}

// DecodePlatform reads a platform entry's settings back, strictly, and
// validates them: an entry written by an older release, or by hand into
// the database, is checked like a platforms file.
func DecodePlatform(e Entry) (config.Platform, error) {
	return decodeEntry(e, ClassPlatform, config.DecodePlatformJSON, func(p config.Platform) (string, error) {
		if ve := p.Validate(); ve != nil {
			return p.Name, ve
		}
		return p.Name, nil
	})
}

// SamePlatform reports whether two platforms' settings are equal as they
// are stored (JSON), so an apply that changes nothing writes nothing.
func SamePlatform(a, b config.Platform) bool { return sameJSON(a, b) }

// encodeEntry is the registry entry of class for settings v, in state.
func encodeEntry(class Class, name, kind, taskQueue string, v any, state State) (Entry, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Entry{}, fmt.Errorf("%s %s: encode settings: %w", class, name, err)
	}
	e := Entry{Class: class, Name: name, State: state, Kind: kind, TaskQueue: taskQueue, Settings: b}
	return e, e.Check()
}

// decodeEntry reads an entry of class back with decode, strictly, and
// checks it with check, which says the settings' name and whether they
// are valid: it must be the entry's.
func decodeEntry[T any](e Entry, class Class, decode func([]byte) (T, error), check func(T) (string, error)) (T, error) {
	var zero T
	if e.Class != class {
		return zero, fmt.Errorf("registry entry %s is a %s, not a %s", e.Name, e.Class, class)
	}
	v, err := decode(e.Settings)
	if err != nil {
		return zero, fmt.Errorf("registry entry %s (revision %d): %w", e.Name, e.Revision, err)
	}
	name, invalid := check(v)
	if name != e.Name {
		return zero, fmt.Errorf("registry entry %s (revision %d): its settings name %q", e.Name, e.Revision, name)
	}
	if invalid != nil {
		return zero, fmt.Errorf("registry entry %s (revision %d): %w", e.Name, e.Revision, invalid)
	}
	return v, nil
}

// sameJSON reports whether a and b encode to the same JSON (false when
// either does not encode).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
