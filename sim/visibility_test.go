package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVisibleBetween checks the accessor against the list endpoint: every
// version it reports for [from, to) is what Truth shows right after its
// visibility (unless a newer one became visible at the same instant), and
// the windows split the versions without overlap.
func TestVisibleBetween(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(3, clk)
	cfg.LiveRate = 0.5
	s, err := New(cfg)
	require.NoError(t, err)
	start := clk.Now()
	clk.Add(2 * time.Hour)
	mid := start.Add(time.Hour)

	all, err := s.VisibleBetween("acme", start.Add(-48*time.Hour), clk.Now())
	require.NoError(t, err)
	first, err := s.VisibleBetween("acme", start.Add(-48*time.Hour), mid)
	require.NoError(t, err)
	second, err := s.VisibleBetween("acme", mid, clk.Now())
	require.NoError(t, err)
	require.Len(t, all, len(first)+len(second), "adjacent windows partition the versions")
	require.NotEmpty(t, second, "live orders and updates became visible after the start")

	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	newest := map[string]time.Time{}
	for _, v := range all {
		require.False(t, v.VisibleAt.Before(v.UpdatedAt), "visible no earlier than updated")
		if v.UpdatedAt.After(newest[v.ID]) {
			newest[v.ID] = v.UpdatedAt
		}
	}
	for _, o := range truth.Orders {
		require.Equal(t, o.UpdatedAt, newest[o.ID], "order %s: newest visible version", o.ID)
	}
	for _, v := range second[:min(len(second), 50)] {
		tr, err := s.Truth("acme", v.VisibleAt)
		require.NoError(t, err)
		for _, o := range tr.Orders {
			if o.ID == v.ID {
				require.False(t, o.UpdatedAt.Before(v.UpdatedAt), "order %s shows the version at its visible_at", v.ID)
			}
		}
	}

	_, err = s.VisibleBetween("acme", start, clk.Now().Add(time.Second))
	require.Error(t, err, "the future is not ground truth yet")
	_, err = s.VisibleBetween("nope", start, mid)
	require.Error(t, err)
}
