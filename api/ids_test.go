package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSliceWorkflowIDs(t *testing.T) {
	round := time.Date(2026, 11, 21, 12, 15, 0, 0, time.UTC)
	odd := time.Date(2026, 11, 21, 12, 12, 51, 895169000, time.UTC)
	half := time.Date(2026, 11, 21, 12, 7, 30, 500000000, time.UTC)
	cases := []struct {
		name       string
		start, end time.Time
		id, v01    string
	}{
		{"whole seconds print no fraction", round, round.Add(15 * time.Minute),
			"slice/shop-x/20261121T121500Z-20261121T123000Z",
			"slice/shop-x/20261121T121500.000000Z-20261121T123000.000000Z"},
		{"microseconds print as before", odd, round,
			"slice/shop-x/20261121T121251.895169Z-20261121T121500Z",
			"slice/shop-x/20261121T121251.895169Z-20261121T121500.000000Z"},
		{"a split half prints its fraction short", round.Add(-15 * time.Minute), half,
			"slice/shop-x/20261121T120000Z-20261121T120730.5Z",
			"slice/shop-x/20261121T120000.000000Z-20261121T120730.500000Z"},
		{"times are written in UTC", round.In(time.FixedZone("X", 3600)), round.Add(time.Minute),
			"slice/shop-x/20261121T121500Z-20261121T121600Z",
			"slice/shop-x/20261121T121500.000000Z-20261121T121600.000000Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.id, SliceWorkflowID("shop-x", tc.start, tc.end))
			require.Equal(t, tc.v01, SliceWorkflowIDV01("shop-x", tc.start, tc.end))
			for _, id := range []string{tc.id, tc.v01} {
				p, s, e, err := ParseSliceWorkflowID(id)
				require.NoError(t, err, id)
				require.Equal(t, "shop-x", p)
				require.True(t, s.Equal(tc.start) && e.Equal(tc.end), "%s parses as [%s, %s)", id, s, e)
			}
		})
	}
}

func TestParseSliceWorkflowIDRejects(t *testing.T) {
	for _, id := range []string{
		"cursor/shop-x", "slice/shop-x", "slice/shop-x/20261121T121500Z",
		"slice/shop-x/20261121T1215Z-20261121T123000Z", "slice/shop-x/20261121T121500Z-tomorrow",
	} {
		_, _, _, err := ParseSliceWorkflowID(id)
		require.Error(t, err, id)
	}
}
