// Package verify compares what the store holds for a platform with what the
// platform shows (for the simulator, its ground truth). It is the check
// behind `ordersync verify` and the no-loss tests.
package verify

import (
	"slices"
	"sort"
	"time"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// Expected is one order as the platform shows it.
type Expected struct {
	ID        string
	UpdatedAt time.Time
	// HasLines says the platform listed the version with its Lines (in the
	// platform's order, with the ids a connector gives them).
	HasLines bool
	Lines    []connectors.OrderLine
}

// Report lists the differences. Missing, Stale and LinesDiffer are losses;
// Extra are orders the store has that the platform no longer shows (or
// never did).
type Report struct {
	Platform string   `json:"platform"`
	Checked  int      `json:"checked"`
	Missing  []string `json:"missing"`
	Stale    []string `json:"stale"`
	// LinesDiffer are orders stored in the platform's version whose stored
	// lines are not that version's lines: a line missing, extra, changed
	// or out of order, or no lines stored at all. Only CompareLines fills it.
	LinesDiffer []string `json:"lines_differ"`
	Extra       []string `json:"extra"`
	// Judged is the range of update times judged (InRange, TrimExtraIn):
	// zero when the caller judged everything before a cutoff.
	Judged Range `json:"judged,omitzero"`
}

// OK is true when nothing is missing, stale or has other lines.
func (r Report) OK() bool { return len(r.Missing) == 0 && len(r.Stale) == 0 && len(r.LinesDiffer) == 0 }

// Compare checks every expected order against the stored versions
// (id -> stored updated_at). A stored version older than the expected one is
// stale; a newer one is fine (the platform may have moved on meanwhile).
// Lines are not checked (see CompareLines).
func Compare(platform string, expected []Expected, stored map[string]time.Time) Report {
	r := Report{Platform: platform, Checked: len(expected), Missing: []string{}, Stale: []string{}, LinesDiffer: []string{}, Extra: []string{}}
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
// show at all (TrimExtra).
func CompareAsOf(platform string, expected []Expected, stored map[string]time.Time, cutoff time.Time, shown map[string]bool) Report {
	return TrimExtra(Compare(platform, expected, stored), stored, cutoff, shown)
}

// TrimExtra keeps as extra only the orders stored at a version from before
// cutoff that the platform does not show at all: shown lists every id the
// platform shows now, or is nil when only the expected ids are known. An
// order updated after the cutoff is then never extra, so verify does not
// cry wolf on a moving platform.
func TrimExtra(r Report, stored map[string]time.Time, cutoff time.Time, shown map[string]bool) Report {
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

// CompareLines is Compare over what store.OrderLines read, plus the lines
// check: an expected order with lines whose stored version is the
// expected one (the same updated_at) must hold exactly those lines, else
// it is listed in LinesDiffer. A stored version newer than the platform's
// is not checked: the lines of a version the platform no longer shows
// cannot be compared. Missing and stale orders are reported as such, not
// again here.
func CompareLines(platform string, expected []Expected, stored map[string]store.StoredLines) Report {
	versions := make(map[string]time.Time, len(stored))
	for id, s := range stored {
		versions[id] = s.UpdatedAt
	}
	r := Compare(platform, expected, versions)
	for _, e := range expected {
		s, ok := stored[e.ID]
		if !e.HasLines || !ok || !s.UpdatedAt.Equal(e.UpdatedAt.Truncate(time.Microsecond)) {
			continue
		}
		if !s.HasLines || !slices.Equal(s.Lines, e.Lines) {
			r.LinesDiffer = append(r.LinesDiffer, e.ID)
		}
	}
	sort.Strings(r.LinesDiffer)
	return r
}

// InRange keeps the expected versions updated in r. An order the platform
// shows at a version from before r's start is not the cursor's to fetch
// (its backfill starts there), and one from r's end on is not due yet.
func InRange(expected []Expected, r Range) []Expected {
	out := make([]Expected, 0, len(expected))
	for _, e := range expected {
		if r.Contains(e.UpdatedAt) {
			out = append(out, e)
		}
	}
	return out
}

// TrimExtraIn keeps as extra only the orders stored at a version in r that
// the platform does not show (shown: every id it shows, or nil when only
// the expected ids are known), and records r as the range judged. A
// version stored from before r (an earlier cursor's, or the overlap of the
// first window) is outside the judgement, as is one from r's end on.
func TrimExtraIn(rep Report, stored map[string]time.Time, r Range, shown map[string]bool) Report {
	extra := rep.Extra[:0]
	for _, id := range rep.Extra {
		if !r.Contains(stored[id]) || shown[id] {
			continue
		}
		extra = append(extra, id)
	}
	rep.Extra = extra
	rep.Judged = r
	return rep
}
