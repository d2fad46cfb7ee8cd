package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// feedCases is the change feed's behaviour on every backend.
var feedCases = []conformanceCase{
	{"every accepted version appends one change", testFeedAppends},
	{"a change carries its order and lines", testFeedCarriesOrder},
	{"paging, resuming and the platform filter", testFeedPaging},
	{"a seq list and keys only", testFeedSeqsAndKeys},
	{"a refused batch appends nothing", testFeedRefusedBatch},
	{"concurrent writers: unique seqs, never out of order to a resuming reader", testFeedConcurrentWriters},
	{"acks only grow", testFeedAcks},
	{"counting what was committed before a cutoff", testFeedCountCommittedBefore},
	{"compaction keeps what a consumer has not acknowledged", testFeedCompaction},
	{"a released consumer no longer holds compaction", testFeedReleaseConsumer},
}

func TestFeedConformance(t *testing.T) { runConformance(t, feedCases) }

func allChanges(t *testing.T, s Store) []Change {
	t.Helper()
	var out []Change
	var after int64
	for {
		page, err := s.Changes(context.Background(), ChangeQuery{After: after, Limit: 1000})
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Seq
	}
}

// changeKeys summarises changes as "kind id@version-minute" for readable failures.
func changeKeys(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s@%d", c.Kind, c.OrderID, int(c.UpdatedAt.Sub(base)/time.Minute)))
	}
	return out
}

func testFeedAppends(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	sameClockOtherStatus := version("p", "1", 5)
	sameClockOtherStatus.Status = "refunded"
	otherLines := withLines(sameClockOtherStatus, 1)
	steps := []struct {
		name string
		in   []connectors.Order
		want []string // changes appended by this step
	}{
		{"new", []connectors.Order{version("p", "1", 2)}, []string{"created 1@2"}},
		{"newer", []connectors.Order{version("p", "1", 5)}, []string{"updated 1@5"}},
		{"older: nothing", []connectors.Order{version("p", "1", 3)}, nil},
		{"same version again: nothing", []connectors.Order{version("p", "1", 5)}, nil},
		// The order's content changed without its clock: receivers must hear of it.
		{"same updated_at, other content", []connectors.Order{sameClockOtherStatus}, []string{"updated 1@5"}},
		{"same updated_at, other lines", []connectors.Order{otherLines}, []string{"updated 1@5"}},
		{"same lines again: nothing", []connectors.Order{otherLines}, nil},
		{"duplicates in one batch", []connectors.Order{version("p", "2", 1), version("p", "2", 1), version("p", "2", 3), version("p", "2", 2)},
			[]string{"created 2@1", "updated 2@3"}},
	}
	var seen int
	for _, st := range steps {
		upsert(t, s, st.in...)
		all := allChanges(t, s)
		require.Equal(t, st.want, changeKeys(all[seen:]), st.name)
		seen = len(all)
	}
	all := allChanges(t, s)
	for i, c := range all {
		require.Equal(t, int64(i+1), c.Seq, "seqs start at 1 and leave no gaps")
	}
	head, err := s.Head(context.Background())
	require.NoError(t, err)
	require.Equal(t, FeedHead{LastSeq: int64(len(all)), Retained: int64(len(all))}, head)
}

func testFeedCarriesOrder(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	withL := withLines(version("p", "1", 1), 2)
	upsert(t, s, withL, version("p", "2", 1))
	all := allChanges(t, s)
	require.Len(t, all, 2)
	require.Equal(t, normalize(withL), all[0].Order.Order)
	require.Equal(t, normalize(version("p", "2", 1)), all[1].Order.Order)
	require.Equal(t, ChangeCreated, all[0].Kind)
	require.False(t, all[0].CommittedAt.IsZero())

	// An older change reads the newest stored version: a reader never
	// sees an order go back.
	upsert(t, s, version("p", "2", 4))
	all = allChanges(t, s)
	require.Len(t, all, 3)
	require.Equal(t, base.Add(time.Minute), all[1].UpdatedAt, "the change keeps the version it accepted")
	require.Equal(t, "v4", all[1].Order.Status, "but carries the order as stored now")
}

func testFeedPaging(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	for i := range 7 {
		upsert(t, s, version("a", fmt.Sprint(i), 1), version("b", fmt.Sprint(i), 1))
	}
	var got []int64
	var after int64
	for {
		page, err := s.Changes(ctx, ChangeQuery{After: after, Limit: 3, Platform: "b"})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 3)
		if len(page) == 0 {
			break
		}
		for _, c := range page {
			require.Equal(t, "b", c.Platform)
			got = append(got, c.Seq)
		}
		after = page[len(page)-1].Seq
	}
	require.Equal(t, []int64{2, 4, 6, 8, 10, 12, 14}, got)
	n, err := s.CountChanges(ctx, "a", 2, 9)
	require.NoError(t, err)
	require.Equal(t, int64(4), n) // 3, 5, 7, 9
	_, err = s.Changes(ctx, ChangeQuery{After: -1})
	require.ErrorIs(t, err, ErrBadQuery)
}

// testFeedSeqsAndKeys: a delivery lane reads only its seqs (with After,
// Limit and Platform still applying), and a listing reads keys without
// orders.
func testFeedSeqsAndKeys(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	for i := range 5 {
		upsert(t, s, version("a", fmt.Sprint(i), 1), version("b", fmt.Sprint(i), 1))
	}
	seqsOf := func(cs []Change) []int64 {
		var out []int64
		for _, c := range cs {
			out = append(out, c.Seq)
		}
		return out
	}
	got, err := s.Changes(ctx, ChangeQuery{Seqs: []int64{9, 2, 5, 42}})
	require.NoError(t, err)
	require.Equal(t, []int64{2, 5, 9}, seqsOf(got), "in seq order, absent seqs ignored")
	require.Equal(t, "v1", got[0].Order.Status, "with the order")
	got, err = s.Changes(ctx, ChangeQuery{After: 2, Limit: 1, Seqs: []int64{9, 2, 5}})
	require.NoError(t, err)
	require.Equal(t, []int64{5}, seqsOf(got))
	got, err = s.Changes(ctx, ChangeQuery{Platform: "b", Seqs: []int64{1, 2, 3, 4}})
	require.NoError(t, err)
	require.Equal(t, []int64{2, 4}, seqsOf(got))

	keys, err := s.Changes(ctx, ChangeQuery{After: 3, Limit: 4, KeysOnly: true})
	require.NoError(t, err)
	full, err := s.Changes(ctx, ChangeQuery{After: 3, Limit: 4})
	require.NoError(t, err)
	require.Len(t, keys, 4)
	for i := range keys {
		require.Empty(t, keys[i].Order.Status)
		full[i].Order = StoredOrder{}
		require.Equal(t, full[i], keys[i])
	}
	keys, err = s.Changes(ctx, ChangeQuery{Platform: "a", Seqs: []int64{1, 2, 3}, KeysOnly: true})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 3}, seqsOf(keys))
	_, err = s.Changes(ctx, ChangeQuery{Seqs: make([]int64, maxQuerySeqs+1)})
	require.ErrorIs(t, err, ErrBadQuery)
}

func testFeedRefusedBatch(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	bad := version("p", "", 1)
	_, err := s.UpsertOrders(context.Background(), []connectors.Order{version("p", "1", 1), bad})
	require.Error(t, err)
	require.Empty(t, allChanges(t, s))
}

// testFeedConcurrentWriters runs writers against a reader that resumes
// after the last seq it saw, as a destination does. If a later seq could
// commit before an earlier one (a plain sequence on PostgreSQL), the
// reader would skip the earlier one for ever; here it must see every
// change, each once, in seq order. Checked by hand: with the numbers taken
// from a PostgreSQL sequence (nextval) instead of the counter row this
// failed in 5 runs out of 5; with the counter row it passes.
func testFeedConcurrentWriters(t *testing.T, dsn string) {
	const writers, batches, perBatch = 6, 80, 8
	s := openStore(t, dsn)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var batch []connectors.Order
				for i := range perBatch {
					// Overlapping keys between writers, so they also contend on rows.
					batch = append(batch, version("p", fmt.Sprintf("%d", (w*7+b*perBatch+i)%150), b+1))
				}
				if _, err := s.UpsertOrders(ctx, batch); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var read []int64
	var after int64
	finished := false
	for !finished {
		select {
		case <-done:
			finished = true // one more read after the last commit
		default:
		}
		page, err := s.Changes(ctx, ChangeQuery{After: after, Limit: 37})
		require.NoError(t, err)
		for _, c := range page {
			read = append(read, c.Seq)
		}
		if len(page) > 0 {
			after = page[len(page)-1].Seq
			finished = false // drain before stopping
		}
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all := allChanges(t, s)
	require.NotEmpty(t, all)
	want := make([]int64, len(all))
	for i, c := range all {
		want[i] = c.Seq
		require.Equal(t, int64(i+1), c.Seq, "unique seqs without gaps")
	}
	require.Equal(t, want, read, "the resuming reader saw every change once, in order")
}

func testFeedAcks(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	require.NoError(t, s.AckChanges(ctx, "hook", 5))
	require.NoError(t, s.AckChanges(ctx, "hook", 3))
	require.NoError(t, s.AckChanges(ctx, "nats", 0))
	acks, err := s.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"hook": 5, "nats": 0}, acks)
	require.ErrorIs(t, s.AckChanges(ctx, "", 1), ErrBadQuery)
}

func testFeedCountCommittedBefore(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	s.(clockSetter).setClock(func() time.Time { return now })
	for i := range 6 { // a/0 b/0 at t0, a/1 b/1 at t0+1m, a/2 b/2 at t0+2m: seqs 1-6
		now = t0.Add(time.Duration(i/2) * time.Minute)
		p := map[bool]string{true: "a", false: "b"}[i%2 == 0]
		upsert(t, s, version(p, fmt.Sprint(i/2), 1))
	}
	cases := []struct {
		platform string
		after    int64
		before   time.Time
		want     int64
	}{
		{"", 0, t0, 0},
		{"", 0, t0.Add(time.Microsecond), 2}, // the store keeps microseconds
		{"", 0, t0.Add(time.Minute), 2},      // strictly before
		{"", 0, t0.Add(2*time.Minute + time.Second), 6},
		{"a", 0, t0.Add(2*time.Minute + time.Second), 3},
		{"b", 2, t0.Add(time.Hour), 2},
		{"a", 3, t0.Add(90 * time.Second), 0},
		{"a", 2, t0.Add(90 * time.Second), 1},
	}
	for _, c := range cases {
		n, err := s.CountChangesCommittedBefore(ctx, c.platform, c.after, c.before)
		require.NoError(t, err)
		require.Equal(t, c.want, n, "platform %q after %d before %s", c.platform, c.after, c.before)
	}
}

func testFeedCompaction(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	for i := range 10 {
		upsert(t, s, version("p", fmt.Sprint(i), 1))
	}
	future := time.Now().Add(time.Hour) // every change is older than this
	steps := []struct {
		name      string
		acks      map[string]int64
		c         Compaction
		wantFirst int64 // the lowest seq left; 11 when none is
	}{
		{"a configured destination that never acked holds all", nil, Compaction{Before: future, Consumers: []string{"hook"}}, 1},
		{"retention holds what is recent", map[string]int64{"hook": 10}, Compaction{Before: time.Now().Add(-time.Hour), Consumers: []string{"hook"}}, 1},
		{"the slowest consumer holds the rest", map[string]int64{"hook": 10, "nats": 4}, Compaction{Before: future, Consumers: []string{"hook"}}, 5},
		{"all acked: all go", map[string]int64{"nats": 10}, Compaction{Before: future, Consumers: []string{"hook", "nats"}}, 11},
	}
	for _, st := range steps {
		for name, seq := range st.acks {
			require.NoError(t, s.AckChanges(ctx, name, seq))
		}
		_, err := s.CompactChanges(ctx, st.c)
		require.NoError(t, err)
		all := allChanges(t, s)
		first := int64(11)
		if len(all) > 0 {
			first = all[0].Seq
		}
		require.Equal(t, st.wantFirst, first, st.name)
	}
	head, err := s.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, FeedHead{LastSeq: 10}, head, "the head survives compaction")
	upsert(t, s, version("p", "new", 1))
	all := allChanges(t, s)
	require.Len(t, all, 1)
	require.Equal(t, int64(11), all[0].Seq, "a seq is never reused")
}

// testFeedReleaseConsumer: a removed destination's consumer row held every
// change after its last ack for ever (issue 25); released, it holds
// nothing, and the other consumers' holds are untouched.
func testFeedReleaseConsumer(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	for i := range 10 {
		upsert(t, s, version("p", fmt.Sprint(i), 1))
	}
	future := time.Now().Add(time.Hour) // every change is older than this
	require.NoError(t, s.AckChanges(ctx, "gone", 3))
	require.NoError(t, s.AckChanges(ctx, "live", 8))
	// Compaction is given only the destinations still configured, as a
	// worker does once "gone" is removed: its row alone holds from seq 4.
	c := Compaction{Before: future, Consumers: []string{"live"}}
	_, err := s.CompactChanges(ctx, c)
	require.NoError(t, err)
	all := allChanges(t, s)
	require.Len(t, all, 7)
	require.Equal(t, int64(4), all[0].Seq, "the removed destination's row holds the feed")

	released, err := s.ReleaseConsumer(ctx, "gone")
	require.NoError(t, err)
	require.True(t, released)
	acks, err := s.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"live": 8}, acks, "only the released row is gone")
	n, err := s.CompactChanges(ctx, c)
	require.NoError(t, err)
	require.Equal(t, int64(5), n, "seqs 4-8 go once the hold is released")
	all = allChanges(t, s)
	require.Len(t, all, 2)
	require.Equal(t, int64(9), all[0].Seq, "the live consumer still holds what it has not acknowledged")

	released, err = s.ReleaseConsumer(ctx, "gone")
	require.NoError(t, err)
	require.False(t, released, "releasing twice finds nothing")
	_, err = s.ReleaseConsumer(ctx, "")
	require.ErrorIs(t, err, ErrBadQuery)
	// A destination re-added under the name acks anew, from its own seq.
	require.NoError(t, s.AckChanges(ctx, "gone", 9))
	acks, err = s.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"live": 8, "gone": 9}, acks)
}
