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
