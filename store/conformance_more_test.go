package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// Heavier conformance cases: concurrency, volume and lifecycle.

func testConcurrentUpserts(t *testing.T, dsn string) {
	const workers, ids, versions, batchSize = 8, 150, 4, 40
	// Two handles on the same database stand in for two processes: the
	// in-process write mutex of SQLite does not cover the second one.
	handles := []Store{openStore(t, dsn), openStore(t, dsn)}

	var all []connectors.Order
	for id := range ids {
		for v := 1; v <= versions; v++ {
			// Lines too: replacing them must not deadlock or mix versions.
			all = append(all, withLines(version("shop", fmt.Sprintf("c%03d", id), v), v))
		}
	}

	var (
		mu    sync.Mutex
		total UpsertResult
		errs  []error
		wg    sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			s := handles[w%len(handles)]
			mine := append([]connectors.Order(nil), all...)
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
			for start := 0; start < len(mine); start += batchSize {
				res, err := s.UpsertOrders(context.Background(), mine[start:min(start+batchSize, len(mine))])
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
				}
				total.Inserted += res.Inserted
				total.Updated += res.Updated
				total.Unchanged += res.Unchanged
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)

	require.Equal(t, ids, total.Inserted, "each key is inserted exactly once: %+v", total)
	require.Equal(t, workers*len(all), total.Inserted+total.Updated+total.Unchanged, "every order counted once: %+v", total)
	for id := range ids {
		requireVersion(t, handles[0], withLines(version("shop", fmt.Sprintf("c%03d", id), versions), versions))
	}
	n, err := handles[1].CountOrders(context.Background(), "shop")
	require.NoError(t, err)
	require.Equal(t, ids, n)
}

func testLargeBatch(t *testing.T, dsn string) {
	const n = 10000
	s := openStore(t, dsn)
	batch := func(v int) []connectors.Order {
		out := make([]connectors.Order, n)
		for i := range out {
			out[i] = version("bulk", fmt.Sprintf("o%05d", i), v)
		}
		return out
	}
	require.Equal(t, UpsertResult{Inserted: n}, upsert(t, s, batch(2)...))
	require.Equal(t, UpsertResult{Unchanged: n}, upsert(t, s, batch(2)...))
	require.Equal(t, UpsertResult{Unchanged: n}, upsert(t, s, batch(1)...))
	require.Equal(t, UpsertResult{Updated: n}, upsert(t, s, batch(3)...))

	count, err := s.CountOrders(context.Background(), "bulk")
	require.NoError(t, err)
	require.Equal(t, n, count)
	got, err := s.OrderVersions(context.Background(), "bulk")
	require.NoError(t, err)
	require.Len(t, got, n)
	for id, ts := range got {
		require.Equal(t, base.Add(3*time.Minute), ts, id)
	}
	requireVersion(t, s, version("bulk", "o09999", 3))
}

// clockSetter is implemented by both backends so tests can pin "now".
type clockSetter interface{ setClock(func() time.Time) }

func testSeenTimes(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	var now time.Time
	s.(clockSetter).setClock(func() time.Time { return now })
	// Nanoseconds and a non-UTC zone: stored as UTC microseconds.
	t0 := time.Date(2024, 6, 1, 9, 0, 0, 123456789, time.FixedZone("X", -5*3600))
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour).UTC().Truncate(time.Microsecond) }

	steps := []struct {
		name        string
		clock       int // hours after t0
		v           int
		want        UpsertResult
		first, last int // expected hours after t0
		stored      int
	}{
		{"insert", 0, 2, UpsertResult{Inserted: 1}, 0, 0, 2},
		{"identical again bumps last_seen", 1, 2, UpsertResult{Unchanged: 1}, 0, 1, 2},
		{"older still bumps last_seen", 2, 1, UpsertResult{Unchanged: 1}, 0, 2, 2},
		{"newer keeps first_seen", 3, 3, UpsertResult{Updated: 1}, 0, 3, 3},
		{"lagging clock never moves last_seen back", 1, 3, UpsertResult{Unchanged: 1}, 0, 3, 3},
		{"lagging clock on an update", 2, 4, UpsertResult{Updated: 1}, 0, 3, 4},
	}
	for _, st := range steps {
		now = t0.Add(time.Duration(st.clock) * time.Hour)
		require.Equal(t, st.want, upsert(t, s, version("p", "seen", st.v)), st.name)
		got := get(t, s, "p", "seen")
		require.Equal(t, at(st.first), got.FirstSeenAt, st.name)
		require.Equal(t, at(st.last), got.LastSeenAt, st.name)
		require.Equal(t, normalize(version("p", "seen", st.stored)), got.Order, st.name)
	}
}

// appliedMigrations reads schema_migrations through the backend's handle.
func appliedMigrations(t *testing.T, s Store) int {
	t.Helper()
	var n int
	var err error
	switch s := s.(type) {
	case *sqliteStore:
		err = s.pool.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
	case *postgresStore:
		err = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n)
	default:
		t.Fatalf("unknown store type %T", s)
	}
	require.NoError(t, err)
	return n
}

func testReopen(t *testing.T, dsn string) {
	ctx := context.Background()
	migs, err := loadMigrations(dialectOf(dsn))
	require.NoError(t, err)
	require.NotEmpty(t, migs)

	for round := 1; round <= 3; round++ {
		s, err := Open(ctx, dsn)
		require.NoError(t, err, "open #%d", round)
		require.Equal(t, len(migs), appliedMigrations(t, s), "open #%d", round)
		if round > 1 {
			requireVersion(t, s, version("p", "keep", round-1))
		}
		require.Equal(t, UpsertResult{Inserted: btoi(round == 1), Updated: btoi(round > 1)},
			upsert(t, s, version("p", "keep", round)))
		require.NoError(t, s.Close())
	}
}

func dialectOf(dsn string) string {
	if strings.HasPrefix(dsn, "postgres") {
		return "postgres"
	}
	return "sqlite"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func testConcurrentOpen(t *testing.T, dsn string) {
	const openers = 6
	stores := make([]Store, openers)
	errs := make([]error, openers)
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
	}
	wg.Wait()
	for i := range openers {
		require.NoError(t, errs[i], "opener %d", i)
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	migs, err := loadMigrations(dialectOf(dsn))
	require.NoError(t, err)
	require.Equal(t, len(migs), appliedMigrations(t, stores[0]))
	for i, s := range stores {
		require.Equal(t, UpsertResult{Inserted: 1}, upsert(t, s, version("p", fmt.Sprintf("open-%d", i), 1)))
	}
}
