package verify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

func TestCompare(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	expected := []Expected{{ID: "a", UpdatedAt: t0}, {ID: "b", UpdatedAt: t0.Add(time.Minute)}, {ID: "c", UpdatedAt: t0}, {ID: "d", UpdatedAt: t0}}
	stored := map[string]time.Time{
		"a": t0,                // same version
		"b": t0,                // older than the platform's: stale
		"d": t0.Add(time.Hour), // newer: fine
		"x": t0,                // not on the platform: extra
	}
	r := Compare("p", expected, stored)
	require.Equal(t, 4, r.Checked)
	require.Equal(t, []string{"c"}, r.Missing)
	require.Equal(t, []string{"b"}, r.Stale)
	require.Equal(t, []string{"x"}, r.Extra)
	require.Equal(t, []string{}, r.LinesDiffer, "not checked")
	require.False(t, r.OK())

	require.True(t, Compare("p", expected[:1], map[string]time.Time{"a": t0}).OK())
}

// TestCompareAsOf: orders updated after the cutoff are judged by the version
// visible at the cutoff; they are neither missing (their newer version is
// stored) nor extra (the platform shows them); an order the platform never
// showed is extra.
func TestCompareAsOf(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cutoff := t0.Add(time.Hour)
	expected := []Expected{{ID: "a", UpdatedAt: t0}, {ID: "moved", UpdatedAt: t0}, {ID: "notyet", UpdatedAt: t0}}
	stored := map[string]time.Time{
		"a":      t0,
		"moved":  cutoff.Add(time.Minute), // updated after the cutoff and already fetched
		"notyet": t0,                      // updated after the cutoff, new version not fetched yet
		"later":  cutoff.Add(time.Minute), // created after the cutoff
		"ghost":  t0,                      // never on the platform
	}
	shown := map[string]bool{"a": true, "moved": true, "notyet": true, "later": true}
	r := CompareAsOf("p", expected, stored, cutoff, shown)
	require.Empty(t, r.Missing)
	require.Empty(t, r.Stale)
	require.Equal(t, []string{"ghost"}, r.Extra)

	// Without the cutoff rule, Compare calls the order created later extra.
	require.Equal(t, []string{"ghost", "later"}, Compare("p", expected, stored).Extra)
}

func TestCompareLines(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	mug := connectors.OrderLine{ID: "1", SKU: "MUG", Title: "Espresso Cup", Quantity: 2, UnitPrice: "7.50", Currency: "EUR"}
	tea := connectors.OrderLine{ID: "2", SKU: "TEA", Title: "Tea Sampler", Quantity: 1, UnitPrice: "10.00", Currency: "EUR"}
	more := mug
	more.Quantity = 3
	tests := []struct {
		name     string
		expected Expected
		stored   *store.StoredLines // nil: not stored
		differ   bool
		report   string // the category it lands in otherwise: missing, stale, or "" for none
	}{
		{name: "same lines", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug, tea}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug, tea}}},
		{name: "no lines on either side", expected: Expected{UpdatedAt: t0, HasLines: true},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true}},
		{name: "a line missing", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug, tea}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}}, differ: true},
		{name: "a line extra", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug, tea}}, differ: true},
		{name: "a quantity changed", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{more}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}}, differ: true},
		{name: "out of order", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug, tea}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{tea, mug}}, differ: true},
		{name: "no lines stored", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}},
			stored: &store.StoredLines{UpdatedAt: t0}, differ: true},
		{name: "the platform lists no lines: not checked", expected: Expected{UpdatedAt: t0},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}}},
		{name: "stored version newer: not checked", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}},
			stored: &store.StoredLines{UpdatedAt: t0.Add(time.Minute), HasLines: true, Lines: []connectors.OrderLine{tea}}},
		{name: "stale: reported as stale only", expected: Expected{UpdatedAt: t0.Add(time.Minute), HasLines: true, Lines: []connectors.OrderLine{mug}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{tea}}, report: "stale"},
		{name: "missing: reported as missing only", expected: Expected{UpdatedAt: t0, HasLines: true, Lines: []connectors.OrderLine{mug}},
			report: "missing"},
		{name: "nanoseconds the store cannot keep", expected: Expected{UpdatedAt: t0.Add(999), HasLines: true, Lines: []connectors.OrderLine{mug}},
			stored: &store.StoredLines{UpdatedAt: t0, HasLines: true}, differ: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.expected.ID = "o"
			stored := map[string]store.StoredLines{}
			if tt.stored != nil {
				stored["o"] = *tt.stored
			}
			r := CompareLines("p", []Expected{tt.expected}, stored)
			want := Report{Platform: "p", Checked: 1, Missing: []string{}, Stale: []string{}, LinesDiffer: []string{}, Extra: []string{}}
			switch {
			case tt.differ:
				want.LinesDiffer = []string{"o"}
			case tt.report == "stale":
				want.Stale = []string{"o"}
			case tt.report == "missing":
				want.Missing = []string{"o"}
			}
			require.Equal(t, want, r)
			require.Equal(t, !tt.differ && tt.report == "", r.OK())
		})
	}
}
