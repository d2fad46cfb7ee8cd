package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConformanceReconcile: both stores count the current versions of
// one platform whose updated_at lies in [from, to) (an order updated
// again moves out of its old window; other platforms never count), keep
// reconcile results with one row per platform, window and check, and
// read them newest first.
func TestConformanceReconcile(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			skipUnavailable(t, b)
			s := openStore(t, b.fresh(t))
			ctx := context.Background()
			// version(p, id, v) is updated at base + v minutes.
			upsert(t, s, version("shop", "a", 1), version("shop", "b", 2), version("shop", "c", 3), version("shop", "d", 10),
				version("other", "a", 2))
			count := func(from, to int) int {
				n, err := s.CountUpdated(ctx, "shop", base.Add(time.Duration(from)*time.Minute), base.Add(time.Duration(to)*time.Minute))
				require.NoError(t, err)
				return n
			}
			require.Equal(t, 3, count(1, 4), "a, b, c")
			require.Equal(t, 2, count(1, 3), "to is exclusive")
			require.Equal(t, 2, count(2, 10), "from is inclusive, d at 10 is out")
			require.Equal(t, 0, count(4, 10))
			upsert(t, s, version("shop", "b", 5)) // b's current version moves to minute 5
			require.Equal(t, 2, count(1, 4), "a, c: b's current version left the window")
			require.Equal(t, 1, count(4, 10), "b")
			n, err := s.CountUpdated(ctx, "shop", base.Add(time.Minute+time.Nanosecond), base.Add(2*time.Minute+time.Nanosecond))
			require.NoError(t, err)
			require.Equal(t, 0, n, "a bound inside a microsecond selects the times after it")

			first := ReconcileResult{Platform: "shop", From: base, To: base.Add(time.Hour), Check: "first", PlatformCount: 5, Precision: "exact",
				StoreCount: 4, Outcome: "closed", Reprocessed: true, RecountPlatform: 5, RecountStore: 5, CheckedAt: base.Add(2 * time.Hour)}
			require.NoError(t, s.SaveReconcileResult(ctx, first))
			recheck := first
			recheck.Check, recheck.Outcome, recheck.Reprocessed, recheck.RecountPlatform, recheck.RecountStore = "recheck", "match", false, 0, 0
			recheck.StoreCount, recheck.CheckedAt = 5, base.Add(72*time.Hour)
			require.NoError(t, s.SaveReconcileResult(ctx, recheck))
			other := ReconcileResult{Platform: "other", From: base, To: base.Add(time.Hour), Check: "first", Precision: "exact", Outcome: "match", CheckedAt: base.Add(3 * time.Hour)}
			require.NoError(t, s.SaveReconcileResult(ctx, other))
			got, err := s.ReconcileResults(ctx, "shop", 0)
			require.NoError(t, err)
			require.Equal(t, []ReconcileResult{recheck, first}, got, "newest first, one platform")

			first.Outcome, first.CheckedAt = "open", base.Add(4*time.Hour)
			require.NoError(t, s.SaveReconcileResult(ctx, first), "the same window and check again replaces")
			got, err = s.ReconcileResults(ctx, "", 2)
			require.NoError(t, err)
			require.Equal(t, []ReconcileResult{recheck, first}, got, "every platform, at most 2")

			require.Error(t, s.SaveReconcileResult(ctx, ReconcileResult{Platform: "shop", From: base, To: base}), "an empty window")
			require.Error(t, s.SaveReconcileResult(ctx, ReconcileResult{From: base, To: base.Add(time.Hour)}), "no platform")
		})
	}
}
