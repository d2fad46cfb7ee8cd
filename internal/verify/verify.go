// Package verify compares what the store holds for a platform with what the
// platform shows (for the simulator, its ground truth). It is the check
// behind `ordersync verify` and the no-loss tests.
package verify

import (
	"sort"
	"time"
)

// Expected is one order as the platform shows it.
type Expected struct {
	ID        string
	UpdatedAt time.Time
}

// Report lists the differences. Missing and Stale are losses; Extra are
// orders the store has that the platform no longer shows (or never did).
type Report struct {
	Platform string   `json:"platform"`
	Checked  int      `json:"checked"`
	Missing  []string `json:"missing"`
	Stale    []string `json:"stale"`
	Extra    []string `json:"extra"`
}

// OK is true when nothing is missing or stale.
func (r Report) OK() bool { return len(r.Missing) == 0 && len(r.Stale) == 0 }

// Compare checks every expected order against the stored versions
// (id -> stored updated_at). A stored version older than the expected one is
// stale; a newer one is fine (the platform may have moved on meanwhile).
func Compare(platform string, expected []Expected, stored map[string]time.Time) Report {
	r := Report{Platform: platform, Checked: len(expected), Missing: []string{}, Stale: []string{}, Extra: []string{}}
	seen := make(map[string]bool, len(expected))
	for _, e := range expected {
		seen[e.ID] = true
		got, ok := stored[e.ID]
		switch {
		case !ok:
			r.Missing = append(r.Missing, e.ID)
		case got.Before(e.UpdatedAt.Truncate(time.Microsecond)):
			r.Stale = append(r.Stale, e.ID)
		}
	}
	for id := range stored {
		if !seen[id] {
			r.Extra = append(r.Extra, id)
		}
	}
	sort.Strings(r.Missing)
	sort.Strings(r.Stale)
	sort.Strings(r.Extra)
	return r
}

// CompareAsOf checks a store against what the platform showed as of cutoff:
// expected holds the versions visible then that were updated before it, and
// stored every stored version (a newer one is fine). Extra counts only
// orders stored at a version from before cutoff that the platform does not
// show at all: shown lists every id the platform shows now, or is nil when
// only the expected ids are known. An order updated after the cutoff is
// then never extra, so verify does not cry wolf on a moving platform.
func CompareAsOf(platform string, expected []Expected, stored map[string]time.Time, cutoff time.Time, shown map[string]bool) Report {
	r := Compare(platform, expected, stored)
	extra := r.Extra[:0]
	for _, id := range r.Extra {
		if !stored[id].Before(cutoff) || shown[id] {
			continue
		}
		extra = append(extra, id)
	}
	r.Extra = extra
	return r
}
