package cli

import (
	"context"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// TestTimeFlagsTakeDays: relative times and durations accept day units
// (--from -2d was refused: "want ... a negative duration (-6h)").
func TestTimeFlagsTakeDays(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	got, err := parseTime("from", "-2d", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-48*time.Hour), got)
	got, err = parseTime("to", "-1d12h", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-36*time.Hour), got)
	_, err = parseTime("from", "2d", now)
	require.Error(t, err, "a relative time is in the past")

	// A duration flag: --min-lag 2d is two days.
	cmd := newPlatformStatusCommand(&App{})
	require.NoError(t, cmd.Flags().Parse([]string{"--min-lag", "2d"}))
	require.Equal(t, "48h0m0s", cmd.Flags().Lookup("min-lag").Value.String())

	// The command line end to end: a usage error names the flag, days are
	// accepted.
	code, _, stderr := runCommand(t, nil, "slices", "reprocess", "--platform", "x", "--from", "-2x", "--to", "-1d")
	require.Equal(t, ExitUsage, code, stderr)
	require.Contains(t, stderr, "--from")
	require.Contains(t, stderr, "-2d")
}

// fakeFeed is a feed with chosen commit times, counting the reads.
type fakeFeed struct {
	store.Feed
	changes []store.Change
	reads   int
}

func (f *fakeFeed) Head(context.Context) (store.FeedHead, error) {
	var last int64
	if n := len(f.changes); n > 0 {
		last = f.changes[n-1].Seq
	}
	return store.FeedHead{LastSeq: last, Retained: int64(len(f.changes))}, nil
}

func (f *fakeFeed) Changes(_ context.Context, q store.ChangeQuery) ([]store.Change, error) {
	f.reads++
	for _, c := range f.changes {
		if c.Seq > q.After {
			return []store.Change{c}, nil
		}
	}
	return nil, nil
}

// TestSinceATimeFindsTheFirstChangeCommittedThen: `changes --since` takes a
// time too; the position is found in about log2(seq) reads, across gaps
// that compaction leaves.
func TestSinceATimeFindsTheFirstChangeCommittedThen(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	f := &fakeFeed{}
	// Retained from seq 1000 (older ones compacted), one a minute, with a
	// gap 3000..3999.
	for seq := int64(1000); seq < 10000; seq++ {
		if seq >= 3000 && seq < 4000 {
			continue
		}
		f.changes = append(f.changes, store.Change{Seq: seq, CommittedAt: t0.Add(time.Duration(seq) * time.Minute)})
	}
	ctx := context.Background()
	for _, tc := range []struct {
		at   time.Time
		want int64 // After: the change printed first is the next one
	}{
		{t0, 0},                            // before everything retained
		{t0.Add(1500 * time.Minute), 1499}, // exactly a commit time
		{t0.Add(1500*time.Minute + time.Second), 1500},
		{t0.Add(3500 * time.Minute), 2999},  // inside the gap: the first after it is 4000
		{t0.Add(20000 * time.Minute), 9999}, // after the head: nothing to print
	} {
		f.reads = 0
		got, err := seqBefore(ctx, f, tc.at)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "at %s", tc.at)
		require.LessOrEqual(t, f.reads, bits.Len64(10000)+2, "bisection, not a scan")
	}

	// The command: a time selects by commit time; a plain number is still a
	// sequence number.
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	_, err = st.UpsertOrders(ctx, testOrders())
	require.NoError(t, err)
	require.NoError(t, st.Close())
	count := func(args ...string) int {
		code, out, stderr := runCommand(t, nil, append([]string{"changes", "-o", "jsonl"}, args...)...)
		require.Equal(t, 0, code, stderr)
		return len(strings.Fields(out)) // one JSON object a line, without spaces
	}
	require.Equal(t, 2, count("--since", "-1d"), "committed in the last day")
	require.Equal(t, 0, count("--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	require.Equal(t, 1, count("--since", "1"))
}

// testOrders are two orders of one platform, each with a line.
func testOrders() []connectors.Order {
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	var out []connectors.Order
	for _, id := range []string{"1", "2"} {
		out = append(out, connectors.Order{Platform: "a", ID: id, Status: "paid", Currency: "EUR", Total: "1.00", CreatedAt: at,
			UpdatedAt: at, HasLines: true, LineCount: 1,
			Lines: []connectors.OrderLine{{ID: "L1", SKU: "S", Title: "T", Quantity: 1, UnitPrice: "1.00", Currency: "EUR"}}})
	}
	return out
}
