package sim

import (
	"encoding/json"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// run drives a simulator through a fixed sequence of clock readings, listing
// a shop at each, and returns the final truth of every shop as JSON.
func run(t *testing.T, seed int64, steps []time.Duration) []byte {
	t.Helper()
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(seed, clk))
	for _, d := range steps {
		clk.Add(d)
		listAll(t, ts.URL, "acme", "acme-token", epoch, farAway, 50)
	}
	var out []*Truth
	for _, shop := range []string{"acme", "globex"} {
		tr, err := s.Truth(shop, time.Time{})
		require.NoError(t, err)
		out = append(out, tr)
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return b
}

func TestDeterminism(t *testing.T) {
	steps := []time.Duration{time.Minute, 17 * time.Minute, time.Hour, 3 * time.Second, 5 * time.Hour}
	a := run(t, 7, steps)
	require.Equal(t, a, run(t, 7, steps), "same seed, same clock readings")
	require.NotEqual(t, a, run(t, 8, steps), "another seed")

	// The world at a time does not depend on the readings that led there.
	var total time.Duration
	for _, d := range steps {
		total += d
	}
	require.Equal(t, a, run(t, 7, []time.Duration{total}), "one jump to the same time")
}

// TestListMatchesTruth: at every instant the list endpoint over all time
// shows exactly the truth, sorted by (updated_at, id), and a truth asked for
// a past instant equals the truth taken at that instant.
func TestListMatchesTruth(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(3, clk))
	type snap struct {
		at    time.Time
		truth *Truth
	}
	var snaps []snap
	for i := 0; i < 12; i++ {
		clk.Add(time.Duration(i*i) * 7 * time.Minute)
		list := listAll(t, ts.URL, "globex", "globex-token", epoch, farAway, 7)
		require.True(t, sort.SliceIsSorted(list, func(a, b int) bool {
			if list[a].UpdatedAt != list[b].UpdatedAt {
				return mustTime(t, list[a].UpdatedAt).Before(mustTime(t, list[b].UpdatedAt))
			}
			return list[a].ID < list[b].ID
		}), "sorted by (updated_at, id)")
		tr, err := s.Truth("globex", time.Time{})
		require.NoError(t, err)
		require.Equal(t, briefsOfTruth(tr), briefsOfList(list))
		require.Len(t, list, len(tr.Orders), "each order once")
		snaps = append(snaps, snap{clk.Now(), tr})
	}
	for _, sn := range snaps {
		tr, err := s.Truth("globex", sn.at)
		require.NoError(t, err)
		require.Equal(t, sn.truth, tr, "truth as of %s", sn.at)
	}
	_, err := s.Truth("globex", clk.Now().Add(time.Second))
	require.ErrorContains(t, err, "after the simulator's now")
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

// TestLateVisibility: versions appear after their updated_at, keep that
// updated_at, and until then the order shows its previous version.
func TestLateVisibility(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(11, clk)
	cfg.Late = 30 * time.Minute
	s, _ := startTest(t, cfg)
	before, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	t1 := clk.Now()
	clk.Add(cfg.Late)
	after, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)

	old := map[string]TruthOrder{}
	for _, o := range before.Orders {
		old[o.ID] = o
	}
	late, superseded := 0, 0
	for _, o := range after.Orders {
		prev, seen := old[o.ID]
		if o.UpdatedAt.Before(t1) && (!seen || !prev.UpdatedAt.Equal(o.UpdatedAt)) {
			late++ // updated before t1 but not visible at t1
			if seen {
				superseded++ // and meanwhile the order showed its previous version
				require.True(t, prev.UpdatedAt.Before(o.UpdatedAt))
			}
		}
	}
	require.Positive(t, late, "some versions become visible late")
	require.Positive(t, superseded, "some orders showed their previous version meanwhile")
}

// TestStopCreating: after the returned instant nothing changes any more.
func TestStopCreating(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(5, clk)
	cfg.LiveRate = 1
	s, _ := startTest(t, cfg)
	clk.Add(10 * time.Minute)
	quiet := s.StopCreating()
	require.Equal(t, clk.Now().Add(cfg.Late), quiet)
	clk.Add(cfg.Late)
	settled, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	clk.Add(48 * time.Hour)
	later, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	require.Equal(t, settled.Orders, later.Orders)
	st := s.Stats().Shops["acme"]
	require.Equal(t, st.Orders, st.VisibleOrders, "every order became visible")
	require.Equal(t, len(later.Orders), st.Orders)
}

// TestVersions checks the derived versions' invariants over many orders.
func TestVersions(t *testing.T) {
	sh := shape{maxUpdates: 15, spread: time.Hour.Microseconds(), late: time.Minute.Microseconds()}
	var buf versionBuf
	counts := map[int]int{}
	for seed := uint64(1); seed < 5000; seed++ {
		o := order{created: 1_700_000_000_000_000, seed: seed}
		vs := sh.versions(&o, 1<<62, &buf)
		counts[len(vs)]++
		require.Equal(t, statusPending, vs[0].status)
		for i := 1; i < len(vs); i++ {
			require.Greater(t, vs[i].updated, vs[i-1].updated, "updates strictly after each other")
			require.GreaterOrEqual(t, vs[i].visible, vs[i-1].visible, "visibility in order")
			require.LessOrEqual(t, vs[i].updated-o.created, sh.spread+int64(i), "within the spread")
		}
		for _, v := range vs {
			require.GreaterOrEqual(t, v.visible, v.updated)
			require.Positive(t, v.total)
		}
		cut := sh.versions(&o, vs[len(vs)-1].updated, &buf)
		require.Len(t, cut, len(vs)-1, "versions at or after stopAt do not exist")
	}
	require.Len(t, counts, 16, "0..15 updates all occur")
}

// TestMillionOrders: the memory budget — a million orders in memory.
func TestMillionOrders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a million orders")
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	clk := newFakeClock()
	cfg := testConfig(1, clk)
	cfg.Shops = []ShopConfig{{Name: "a", Token: "a"}, {Name: "b", Token: "b"}, {Name: "c", Token: "c"}, {Name: "d", Token: "d"}}
	cfg.History, cfg.HistoryOrders = 90*24*time.Hour, 250_000
	start := time.Now()
	s, err := New(cfg)
	require.NoError(t, err)
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	st := s.Stats()
	total := 0
	for _, sh := range st.Shops {
		total += sh.Orders
	}
	require.Equal(t, 1_000_000, total)
	perOrder := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(total)
	t.Logf("1M orders: built in %s, %.0f bytes/order on the heap", build, perOrder)
	require.Less(t, perOrder, 100.0)
	runtime.KeepAlive(s)
}
