package verify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	expected := []Expected{{"a", t0}, {"b", t0.Add(time.Minute)}, {"c", t0}, {"d", t0}}
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
	expected := []Expected{{"a", t0}, {"moved", t0}, {"notyet", t0}}
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
