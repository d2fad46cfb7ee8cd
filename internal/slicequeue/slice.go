package slicequeue

import (
	"fmt"
	"time"
)

// Kind says why a slice exists: it decides the slice's launch priority and
// whether it holds the watermark.
type Kind uint8

const (
	// Regular slices tile time from the cursor's start; they alone hold
	// the watermark.
	Regular Kind = iota
	// Reprocess slices fetch a range again at an operator's request.
	Reprocess
	// Resweep slices fetch a recent regular slice's window once more when
	// it is resweep_delay old, for orders the platform showed late.
	Resweep
)

var kindNames = [...]string{Regular: "regular", Reprocess: "reprocess", Resweep: "resweep"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// MarshalText writes the kind's name, so the carried state reads plainly.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("unknown slice kind %d", k)
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown slice kind %q", b)
}

// State is where a slice is in its life (see the package doc's diagram).
type State uint8

const (
	// Queued slices wait to start: not before Due, only inside a work
	// window unless Force, and not while a slice of the same ID runs.
	Queued State = iota
	// Running slices have a child workflow that has not reported yet.
	Running
	// Held slices are regular slices that finished (completed, or failed
	// and recorded in the dead-letter workflow) while an earlier regular
	// slice has not: they wait to drop below the watermark.
	Held
)

var stateNames = [...]string{Queued: "queued", Running: "running", Held: "held"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("unknown slice state %d", s)
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("unknown slice state %q", b)
}

// Slice is one half-open window [Start, End) the cursor tracks. Its JSON
// is part of the state a cursor carries across continue-as-new.
type Slice struct {
	// ID is the slice's child workflow ID, a function of the platform and
	// the window; one ID never runs twice at once.
	ID    string    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Kind  Kind      `json:"kind"`
	State State     `json:"state"`
	// Due is the earliest start of a queued slice: the back-off after a
	// child that ended without reporting, or a re-sweep's due time. The
	// slice waits until then ("waiting" in status).
	Due time.Time `json:"due,omitzero"`
	// Force starts the slice outside the work windows (a forced reprocess,
	// and the halves it splits into).
	Force bool `json:"force,omitempty"`
	// Sweep marks a re-sweep's fetch: what it stores was missed by the
	// first fetch (late arrivals). A re-sweep that splits runs its halves
	// as plain fetches, as v0.1 did.
	Sweep bool `json:"sweep,omitempty"`
	// StartedAt is when the slice's child last started.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// WaitingAt says whether a queued slice waits for its due time at now.
func (s Slice) WaitingAt(now time.Time) bool {
	return s.State == Queued && s.Due.After(now)
}

func (s Slice) String() string {
	return fmt.Sprintf("%s %s [%s, %s)", s.Kind, s.State, s.Start.UTC().Format(time.RFC3339Nano), s.End.UTC().Format(time.RFC3339Nano))
}
