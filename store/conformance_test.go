package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// conformanceCases is the behaviour every backend must show. Each case gets
// a DSN naming a fresh, empty store.
var conformanceCases = []conformanceCase{
	{"round trip keeps every field", testRoundTrip},
	{"versions arriving out of order", testOutOfOrder},
	{"a version stamped in the future does not pin the order", testFutureStampedDoesNotPin},
	{"duplicates inside one batch", testDuplicatesInBatch},
	{"concurrent upserts of the same orders", testConcurrentUpserts},
	{"10000-order batch", testLargeBatch},
	{"first_seen and last_seen", testSeenTimes},
	{"invalid input writes nothing", testInvalidInput},
	{"what one store cannot keep neither keeps", testRefusedAlike},
	{"reopen keeps data", testReopen},
	{"concurrent open migrates once", testConcurrentOpen},
	{"OrderVersions and CountOrders", testVersionsAndCounts},
	{"lines round trip", testLinesRoundTrip},
	{"lines follow the version", testLinesFollowTheVersion},
	{"lines of a version stamped in the future are replaced", testLinesFutureStampedHeals},
	{"lines of duplicates inside one batch", testLinesDuplicatesInBatch},
	{"big orders and big batches with lines", testLinesBigOrder},
	{"invalid lines write nothing", testInvalidLines},
	{"OrderLines", testOrderLines},
	{"orders stored before lines existed", testLinesAfterUpgrade},
}

func TestConformance(t *testing.T) { runConformance(t, conformanceCases) }

// conformanceCase is one behaviour every backend must show, run on a DSN
// naming a fresh, empty store.
type conformanceCase struct {
	name string
	run  func(t *testing.T, dsn string)
}

// runConformance runs every case on every backend this machine has.
func runConformance(t *testing.T, cases []conformanceCase) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			skipUnavailable(t, b)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, b.fresh(t)) })
			}
		})
	}
}

// base is a fixed instant so versions are easy to read in failures.
var base = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// version returns order id of platform as of version v: each version is
// one minute newer and differs in status, total and raw.
func version(platform, id string, v int) connectors.Order {
	return connectors.Order{
		Platform:  platform,
		ID:        id,
		Status:    fmt.Sprintf("v%d", v),
		CreatedAt: base,
		UpdatedAt: base.Add(time.Duration(v) * time.Minute),
		Currency:  "EUR",
		Total:     fmt.Sprintf("%d.10", v),
		LineCount: v,
		Raw:       json.RawMessage(fmt.Sprintf(`{"id":%q,"v":%d}`, id, v)),
	}
}

func openStore(t *testing.T, dsn string) Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func upsert(t *testing.T, s Store, orders ...connectors.Order) UpsertResult {
	t.Helper()
	res, err := s.UpsertOrders(context.Background(), orders)
	require.NoError(t, err)
	return res
}

func get(t *testing.T, s Store, platform, id string) StoredOrder {
	t.Helper()
	got, ok, err := s.GetOrder(context.Background(), platform, id)
	require.NoError(t, err)
	require.True(t, ok, "order %s/%s not found", platform, id)
	return got
}

// requireVersion checks the stored content equals want (all Order fields).
func requireVersion(t *testing.T, s Store, want connectors.Order) {
	t.Helper()
	got := get(t, s, want.Platform, want.ID)
	require.Equal(t, normalize(want), got.Order)
}

func testRoundTrip(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	berlin := time.FixedZone("CET", 3600)
	in := connectors.Order{
		Platform:  "shopify",
		ID:        "#1001/ü",
		Status:    "paid",
		CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 123456789, berlin),
		UpdatedAt: time.Date(2024, 1, 2, 4, 4, 5, 987654321, berlin),
		Currency:  "JPY",
		Total:     "1000.10", // trailing zero must survive: text, not float
		LineCount: 3,
		Raw:       json.RawMessage(`{"b":1, "a":[1.0,2e3], "a":"dup"}`), // bytes kept as sent
	}
	require.Equal(t, UpsertResult{Inserted: 1}, upsert(t, s, in))

	got := get(t, s, "shopify", "#1001/ü")
	require.Equal(t, "1000.10", got.Total)
	require.Equal(t, string(in.Raw), string(got.Raw))
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Equal(t, time.UTC, got.UpdatedAt.Location())
	require.Equal(t, time.UTC, got.FirstSeenAt.Location())
	require.Equal(t, time.UTC, got.LastSeenAt.Location())
	require.Equal(t, time.Date(2024, 1, 2, 2, 4, 5, 123456000, time.UTC), got.CreatedAt, "UTC, microsecond precision")
	require.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 987654000, time.UTC), got.UpdatedAt)
	require.Equal(t, normalize(in), got.Order)

	// Empty Raw round-trips as nil on both backends.
	noRaw := version("shopify", "no-raw", 1)
	noRaw.Raw = nil
	upsert(t, s, noRaw)
	require.Nil(t, get(t, s, "shopify", "no-raw").Raw)

	_, ok, err := s.GetOrder(ctx, "shopify", "missing")
	require.NoError(t, err)
	require.False(t, ok)

	res, err := s.UpsertOrders(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, UpsertResult{}, res)
}

func testOutOfOrder(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	steps := []struct {
		name  string
		in    connectors.Order
		want  UpsertResult
		final int // version stored afterwards
	}{
		{"v2 new", version("p", "1", 2), UpsertResult{Inserted: 1}, 2},
		{"v5 newer", version("p", "1", 5), UpsertResult{Updated: 1}, 5},
		{"v3 older ignored", version("p", "1", 3), UpsertResult{Unchanged: 1}, 5},
		{"v1 much older ignored", version("p", "1", 1), UpsertResult{Unchanged: 1}, 5},
		{"v5 again identical", version("p", "1", 5), UpsertResult{Unchanged: 1}, 5},
		{"v6 newest", version("p", "1", 6), UpsertResult{Updated: 1}, 6},
	}
	for _, st := range steps {
		require.Equal(t, st.want, upsert(t, s, st.in), st.name)
		requireVersion(t, s, version("p", "1", st.final))
	}

	// Equal updated_at with different content: applied and counted Updated,
	// whichever field differs.
	changes := map[string]func(o *connectors.Order){
		"status":     func(o *connectors.Order) { o.Status = "refunded" },
		"total":      func(o *connectors.Order) { o.Total = "6.1" },
		"currency":   func(o *connectors.Order) { o.Currency = "USD" },
		"line_count": func(o *connectors.Order) { o.LineCount = 99 },
		"raw":        func(o *connectors.Order) { o.Raw = json.RawMessage(`{"changed":true}`) },
		"created_at": func(o *connectors.Order) { o.CreatedAt = base.Add(time.Second) },
	}
	for field, change := range changes {
		o := version("p", "1", 6)
		change(&o)
		require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, o), field)
		requireVersion(t, s, o)
		require.Equal(t, UpsertResult{Unchanged: 1}, upsert(t, s, o), field+" again")
	}
}

func testFutureStampedDoesNotPin(t *testing.T, dsn string) {
	now := time.Now().UTC()
	stamped := func(v int, at time.Time) connectors.Order {
		o := version("p", "", v)
		o.UpdatedAt = at
		return o
	}
	year2999 := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		skew     time.Duration // 0: the default
		stored   connectors.Order
		incoming connectors.Order
		want     UpsertResult
		wantKept string // "stored" or "incoming"
	}{
		{"2999 replaced by the real version", 0, stamped(1, year2999), version("p", "", 2), UpsertResult{Updated: 1}, "incoming"},
		{"2999 replaced even by an older one", 0, stamped(3, year2999), version("p", "", 1), UpsertResult{Updated: 1}, "incoming"},
		{"2999 sent again, identical", 0, stamped(1, year2999), stamped(1, year2999), UpsertResult{Unchanged: 1}, "stored"},
		{"beyond the default skew", 0, stamped(1, now.Add(10*time.Minute)), version("p", "", 2), UpsertResult{Updated: 1}, "incoming"},
		{"within the default skew: older still loses", 0, stamped(1, now.Add(time.Minute)), version("p", "", 2), UpsertResult{Unchanged: 1}, "stored"},
		{"within a 2h skew: older still loses", 2 * time.Hour, stamped(1, now.Add(time.Hour)), version("p", "", 2), UpsertResult{Unchanged: 1}, "stored"},
		{"beyond a 2h skew", 2 * time.Hour, stamped(1, now.Add(3*time.Hour)), version("p", "", 2), UpsertResult{Updated: 1}, "incoming"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), dsn, WithFutureSkew(tt.skew))
			require.NoError(t, err)
			defer s.Close()
			id := fmt.Sprintf("future-%d", i)
			tt.stored.ID, tt.incoming.ID = id, id
			require.Equal(t, UpsertResult{Inserted: 1}, upsert(t, s, tt.stored))
			require.Equal(t, tt.want, upsert(t, s, tt.incoming))
			kept := map[string]connectors.Order{"stored": tt.stored, "incoming": tt.incoming}[tt.wantKept]
			requireVersion(t, s, kept)
			if tt.wantKept == "incoming" {
				// Healed for good: the order moves on as usual.
				next := version("p", id, 9)
				require.Equal(t, UpsertResult{Updated: 1}, upsert(t, s, next))
				require.Equal(t, UpsertResult{Unchanged: 1}, upsert(t, s, tt.incoming), "the healed order does not regress")
				requireVersion(t, s, next)
			}
		})
	}
}

func testDuplicatesInBatch(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	cases := []struct {
		name   string
		stored int   // version stored before the batch; 0 = none
		batch  []int // versions of the same order, in batch order
		want   UpsertResult
		final  int
	}{
		{"same new order twice", 0, []int{1, 1}, UpsertResult{Inserted: 1, Unchanged: 1}, 1},
		{"new then newer", 0, []int{1, 2}, UpsertResult{Inserted: 1, Updated: 1}, 2},
		{"new then older", 0, []int{2, 1}, UpsertResult{Inserted: 1, Unchanged: 1}, 2},
		{"three versions shuffled", 0, []int{2, 3, 1}, UpsertResult{Inserted: 1, Updated: 1, Unchanged: 1}, 3},
		{"stored, then newer twice", 1, []int{2, 2}, UpsertResult{Updated: 1, Unchanged: 1}, 2},
		{"stored, newer, newest, older", 1, []int{2, 3, 2}, UpsertResult{Updated: 2, Unchanged: 1}, 3},
		{"stored newer than all", 5, []int{1, 4, 5}, UpsertResult{Unchanged: 3}, 5},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("dup-%d", i)
		if tc.stored > 0 {
			upsert(t, s, version("p", id, tc.stored))
		}
		var batch []connectors.Order
		for _, v := range tc.batch {
			batch = append(batch, version("p", id, v))
		}
		// Another order mixed in must not disturb the counting.
		batch = append(batch, version("p", "other-"+id, 1))
		want := tc.want
		want.Inserted++
		require.Equal(t, want, upsert(t, s, batch...), tc.name)
		requireVersion(t, s, version("p", id, tc.final))
	}
}

func testInvalidInput(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	bad := map[string]struct {
		order connectors.Order
		msg   string
	}{
		"empty platform":  {connectors.Order{ID: "x1", UpdatedAt: base}, `order 1 (platform "", id "x1"): empty platform`},
		"empty id":        {connectors.Order{Platform: "p", UpdatedAt: base}, `order 1 (platform "p", id ""): empty id`},
		"zero updated_at": {connectors.Order{Platform: "p", ID: "x3"}, `order 1 (platform "p", id "x3"): zero updated_at`},
	}
	for name, tc := range bad {
		// A valid order first: it must not be written either.
		_, err := s.UpsertOrders(ctx, []connectors.Order{version("p", "good", 1), tc.order})
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrInvalidOrder), name)
		require.Contains(t, err.Error(), tc.msg, name)
		n, err := s.CountOrders(ctx, "")
		require.NoError(t, err)
		require.Zero(t, n, "%s: nothing from the batch may be written", name)
	}
}

func testVersionsAndCounts(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	upsert(t, s, version("shopify", "1", 1), version("shopify", "2", 4), version("woo", "1", 2))
	upsert(t, s, version("shopify", "1", 3), version("shopify", "2", 2)) // 1 moves on, 2 stays

	got, err := s.OrderVersions(ctx, "shopify")
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{
		"1": base.Add(3 * time.Minute),
		"2": base.Add(4 * time.Minute),
	}, got)
	for _, ts := range got {
		require.Equal(t, time.UTC, ts.Location())
	}

	got, err = s.OrderVersions(ctx, "unknown")
	require.NoError(t, err)
	require.Empty(t, got)

	for platform, want := range map[string]int{"shopify": 2, "woo": 1, "unknown": 0, "": 3} {
		n, err := s.CountOrders(ctx, platform)
		require.NoError(t, err)
		require.Equal(t, want, n, "CountOrders(%q)", platform)
	}
}
