package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// Conformance cases for order lines: they follow their order's version.

// withLines gives o n lines; their SKUs and titles carry o's status, so
// two versions' lines differ, and LineCount becomes n.
func withLines(o connectors.Order, n int) connectors.Order {
	o.HasLines, o.LineCount = true, n
	o.Lines = make([]connectors.OrderLine, n)
	for i := range o.Lines {
		o.Lines[i] = connectors.OrderLine{
			ID:        fmt.Sprintf("L%d", i+1),
			SKU:       fmt.Sprintf("SKU-%s-%d", o.Status, i+1),
			Title:     "Tasse ☕ " + o.Status,
			Quantity:  int64(i + 1),
			UnitPrice: fmt.Sprintf("%d.50", i),
			Currency:  "EUR",
		}
	}
	return o
}

// linesOf is o's lines under another version's content: what the store
// holds after a version without lines (o) wins over one with lines.
func linesOf(o connectors.Order, from connectors.Order) connectors.Order {
	o.HasLines, o.Lines = true, from.Lines
	return o
}

func testLinesRoundTrip(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	in := withLines(version("shopify", "1001", 1), 3)
	in.Lines[1] = connectors.OrderLine{ID: "line/2 ü", Quantity: 0} // no SKU, title, price or currency
	in.Lines[2].UnitPrice = "-1234567890.123456789"                 // text, never a float
	empty := version("shopify", "empty", 1)
	empty.HasLines, empty.Lines = true, []connectors.OrderLine{}
	none := version("shopify", "none", 1)
	require.Equal(t, UpsertResult{Inserted: 3}, upsert(t, s, in, empty, none))

	got := get(t, s, "shopify", "1001")
	require.True(t, got.HasLines)
	require.Equal(t, in.Lines, got.Lines, "every field, in position order")
	requireVersion(t, s, in)

	got = get(t, s, "shopify", "empty")
	require.True(t, got.HasLines, "an order known to have no lines")
	require.Nil(t, got.Lines)
	got = get(t, s, "shopify", "none")
	require.False(t, got.HasLines, "an order whose lines are unknown")
	require.Nil(t, got.Lines)
}

// testLinesFollowTheVersion runs one order through a sequence of versions
// and checks the counts and the stored order, lines included, after each.
func testLinesFollowTheVersion(t *testing.T, dsn string) {
	v := func(n, lines int) connectors.Order { return withLines(version("p", "1", n), lines) }
	noLines := func(n int) connectors.Order { return version("p", "1", n) }
	sameTimeOtherLines := func(o connectors.Order) connectors.Order {
		o.Lines = append([]connectors.OrderLine(nil), o.Lines...)
		o.Lines[0].Quantity += 10
		return o
	}
	tests := []struct {
		name  string
		steps []connectors.Order
		want  []UpsertResult
		final connectors.Order
	}{
		{"a newer version replaces the lines",
			[]connectors.Order{v(1, 3), v(2, 3)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, v(2, 3)},
		{"an older version arriving later leaves them",
			[]connectors.Order{v(2, 2), v(1, 3)},
			[]UpsertResult{{Inserted: 1}, {Unchanged: 1}}, v(2, 2)},
		{"lines shrink from 3 to 1",
			[]connectors.Order{v(1, 3), v(2, 1)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, v(2, 1)},
		{"lines grow from 1 to 4",
			[]connectors.Order{v(1, 1), v(2, 4)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, v(2, 4)},
		{"lines drop to none",
			[]connectors.Order{v(1, 2), v(2, 0)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, v(2, 0)},
		{"a newer version without lines keeps them",
			[]connectors.Order{v(1, 3), noLines(2)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, linesOf(noLines(2), v(1, 3))},
		{"and the next version with lines replaces them",
			[]connectors.Order{v(1, 3), noLines(2), v(3, 1)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}, {Updated: 1}}, v(3, 1)},
		{"the same version again without lines is unchanged",
			[]connectors.Order{v(1, 2), func() connectors.Order { o := v(1, 2); o.HasLines, o.Lines = false, nil; return o }()},
			[]UpsertResult{{Inserted: 1}, {Unchanged: 1}}, v(1, 2)},
		{"the same version again with the same lines is unchanged",
			[]connectors.Order{v(1, 2), v(1, 2)},
			[]UpsertResult{{Inserted: 1}, {Unchanged: 1}}, v(1, 2)},
		{"equal updated_at with other lines is applied",
			[]connectors.Order{v(1, 2), sameTimeOtherLines(v(1, 2)), sameTimeOtherLines(v(1, 2))},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}, {Unchanged: 1}}, sameTimeOtherLines(v(1, 2))},
		{"lines for a version stored without them are applied",
			[]connectors.Order{noLines(1), v(1, 1)},
			[]UpsertResult{{Inserted: 1}, {Updated: 1}}, v(1, 1)},
		{"an older version without lines changes nothing",
			[]connectors.Order{v(2, 2), noLines(1)},
			[]UpsertResult{{Inserted: 1}, {Unchanged: 1}}, v(2, 2)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, dsn)
			id := fmt.Sprintf("seq-%d", i)
			for j, o := range tt.steps {
				o.ID = id
				require.Equal(t, tt.want[j], upsert(t, s, o), "step %d", j+1)
			}
			final := tt.final
			final.ID = id
			requireVersion(t, s, final)
		})
	}
}

func testLinesFutureStampedHeals(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	pinned := withLines(version("p", "2999", 1), 3)
	pinned.UpdatedAt = time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	real := withLines(version("p", "2999", 2), 1)
	require.Equal(t, UpsertResult{Inserted: 1}, upsert(t, s, pinned))
	require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, real), "the pinned version and its lines are replaced")
	requireVersion(t, s, real)
}

func testLinesDuplicatesInBatch(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	v := func(n, lines int) connectors.Order { return withLines(version("p", "", n), lines) }
	cases := []struct {
		name   string
		stored connectors.Order // Platform "" for none
		batch  []connectors.Order
		want   UpsertResult
		final  connectors.Order
	}{
		{"new then newer", connectors.Order{}, []connectors.Order{v(1, 3), v(2, 1)}, UpsertResult{Inserted: 1, Updated: 1}, v(2, 1)},
		{"new then older", connectors.Order{}, []connectors.Order{v(2, 1), v(1, 3)}, UpsertResult{Inserted: 1, Unchanged: 1}, v(2, 1)},
		{"same new order twice", connectors.Order{}, []connectors.Order{v(1, 2), v(1, 2)}, UpsertResult{Inserted: 1, Unchanged: 1}, v(1, 2)},
		{"stored, newer, newest, older", v(1, 1), []connectors.Order{v(2, 2), v(4, 4), v(3, 3)}, UpsertResult{Updated: 2, Unchanged: 1}, v(4, 4)},
		{"newer with lines, then newest without", v(1, 1), []connectors.Order{v(2, 3), version("p", "", 3)}, UpsertResult{Updated: 2},
			linesOf(version("p", "", 3), v(2, 3))},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("dup-%d", i)
		if tc.stored.Platform != "" {
			tc.stored.ID = id
			upsert(t, s, tc.stored)
		}
		var batch []connectors.Order
		for _, o := range tc.batch {
			o.ID = id
			batch = append(batch, o)
		}
		// Another order with lines mixed in must not disturb the lines.
		other := withLines(version("p", "other-"+id, 1), 2)
		batch = append(batch, other)
		want := tc.want
		want.Inserted++
		require.Equal(t, want, upsert(t, s, batch...), tc.name)
		tc.final.ID = id
		requireVersion(t, s, tc.final)
		requireVersion(t, s, other)
	}
}

func testLinesBigOrder(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	big := withLines(version("p", "big", 1), maxLinesPerOrder)
	small := withLines(version("p", "small", 1), 2)
	require.Equal(t, UpsertResult{Inserted: 2}, upsert(t, s, big, small))
	requireVersion(t, s, big)
	require.Equal(t, UpsertResult{Unchanged: 2}, upsert(t, s, big, small), "re-fetched: the digest matches, no line is read")

	bigger := withLines(version("p", "big", 2), maxLinesPerOrder)
	require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, bigger))
	requireVersion(t, s, bigger)
	shrunk := withLines(version("p", "big", 3), 1)
	require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, shrunk))
	requireVersion(t, s, shrunk)
	requireVersion(t, s, small)

	// Many orders with lines in one batch: more than one round trip's worth.
	many := func(v int) []connectors.Order {
		out := make([]connectors.Order, 1200)
		for i := range out {
			out[i] = withLines(version("many", fmt.Sprintf("m%04d", i), v), 1+(i+v)%4)
		}
		return out
	}
	require.Equal(t, UpsertResult{Inserted: 1200}, upsert(t, s, many(1)...))
	require.Equal(t, UpsertResult{Updated: 1200}, upsert(t, s, many(2)...))
	require.Equal(t, UpsertResult{Unchanged: 1200}, upsert(t, s, many(1)...))
	stored := orderLines(t, s, "many")
	require.Len(t, stored, 1200)
	for _, o := range many(2) {
		require.Equal(t, StoredLines{UpdatedAt: o.UpdatedAt, HasLines: true, Lines: o.Lines}, stored[o.ID], o.ID)
	}

	tooBig := withLines(version("p", "too-big", 1), maxLinesPerOrder+1)
	_, err := s.UpsertOrders(context.Background(), []connectors.Order{tooBig})
	require.ErrorIs(t, err, ErrInvalidOrder)
	require.ErrorContains(t, err, "10001 lines, at most 10000")
}

func testInvalidLines(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	line := func(change func(l *connectors.OrderLine)) connectors.Order {
		o := withLines(version("p", "bad", 1), 2)
		change(&o.Lines[1])
		return o
	}
	bad := map[string]struct {
		order connectors.Order
		msg   string
	}{
		"empty line id":          {line(func(l *connectors.OrderLine) { l.ID = "" }), "line 2: empty id"},
		"repeated line id":       {line(func(l *connectors.OrderLine) { l.ID = "L1" }), "line 2: id repeats line 1"},
		"long line id":           {line(func(l *connectors.OrderLine) { l.ID = strings.Repeat("x", 256) }), "line 2: id is 256 bytes, at most 255"},
		"long sku":               {line(func(l *connectors.OrderLine) { l.SKU = strings.Repeat("x", 1025) }), "line 2: sku is 1025 bytes, at most 1024"},
		"long title":             {line(func(l *connectors.OrderLine) { l.Title = strings.Repeat("é", 2049) }), "line 2: title is 4098 bytes, at most 4096"},
		"long currency":          {line(func(l *connectors.OrderLine) { l.Currency = strings.Repeat("X", 17) }), "line 2: currency is 17 bytes, at most 16"},
		"float unit price":       {line(func(l *connectors.OrderLine) { l.UnitPrice = "1e3" }), "line 2: unit price is not a plain decimal"},
		"unit price with spaces": {line(func(l *connectors.OrderLine) { l.UnitPrice = " 1.00" }), "line 2: unit price is not a plain decimal"},
		"title not UTF-8":        {line(func(l *connectors.OrderLine) { l.Title = "caf\xe9" }), "line 2: title is not valid UTF-8"},
		"sku with a NUL":         {line(func(l *connectors.OrderLine) { l.SKU = "a\x00b" }), "line 2: sku holds a NUL byte"},
		"lines without HasLines": {func() connectors.Order { o := withLines(version("p", "bad", 1), 1); o.HasLines = false; return o }(), "1 lines but HasLines is false"},
	}
	for name, tc := range bad {
		// A valid order with lines first: neither it nor its lines may be written.
		_, err := s.UpsertOrders(ctx, []connectors.Order{withLines(version("p", "good", 1), 2), tc.order})
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrInvalidOrder), name)
		require.Contains(t, err.Error(), `order 1 (platform "p", id "bad"): `+tc.msg, name)
		require.NotContains(t, err.Error(), "xxx", "%s: the message quotes no line content", name)
		n, err := s.CountOrders(ctx, "")
		require.NoError(t, err)
		require.Zero(t, n, "%s: nothing from the batch may be written", name)
		require.Empty(t, orderLines(t, s, "p"), name)
	}
}

func orderLines(t *testing.T, s Store, platform string) map[string]StoredLines {
	t.Helper()
	got, err := s.OrderLines(context.Background(), platform)
	require.NoError(t, err)
	return got
}

func testOrderLines(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	a := withLines(version("shop", "a", 2), 3)
	empty := withLines(version("shop", "empty", 1), 0)
	none := version("shop", "none", 4)
	upsert(t, s, a, empty, none, withLines(version("other", "a", 1), 1))
	upsert(t, s, withLines(version("shop", "a", 1), 1)) // older: not stored

	got := orderLines(t, s, "shop")
	require.Equal(t, map[string]StoredLines{
		"a":     {UpdatedAt: a.UpdatedAt, HasLines: true, Lines: a.Lines},
		"empty": {UpdatedAt: empty.UpdatedAt, HasLines: true},
		"none":  {UpdatedAt: none.UpdatedAt},
	}, got)
	for _, sl := range got {
		require.Equal(t, time.UTC, sl.UpdatedAt.Location())
	}
	require.Empty(t, orderLines(t, s, "unknown"))
}

// testLinesAfterUpgrade opens a store whose orders were written before
// lines existed (migration 2 undone by hand): they read as without lines,
// and a re-fetch of the same version with lines stores them.
func testLinesAfterUpgrade(t *testing.T, dsn string) {
	ctx := context.Background()
	old := version("p", "old", 1)
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	upsert(t, s, old)
	for _, stmt := range []string{
		`DROP TABLE order_lines`,
		`ALTER TABLE orders DROP COLUMN lines_digest`,
		`DELETE FROM schema_migrations WHERE version = 2`,
	} {
		execRaw(t, s, stmt)
	}
	require.NoError(t, s.Close())

	s = openStore(t, dsn)
	require.False(t, get(t, s, "p", "old").HasLines)
	require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, withLines(old, 2)), "the same version, now with lines")
	requireVersion(t, s, withLines(old, 2))
}

// execRaw runs one statement through the backend's handle.
func execRaw(t *testing.T, s Store, stmt string) {
	t.Helper()
	var err error
	switch s := s.(type) {
	case *sqliteStore:
		_, err = s.pool.db.Exec(stmt)
	case *postgresStore:
		_, err = s.pool.Exec(context.Background(), stmt)
	default:
		t.Fatalf("unknown store type %T", s)
	}
	require.NoError(t, err, stmt)
}
