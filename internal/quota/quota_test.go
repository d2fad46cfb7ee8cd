package quota_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/quota"
)

// backends are the DSNs to test: SQLite always, PostgreSQL when
// ORDERSYNC_TEST_POSTGRES_DSN names one (CI sets it).
func backends(t *testing.T) map[string]string {
	dsns := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "orders.db")}
	if dsn := os.Getenv("ORDERSYNC_TEST_POSTGRES_DSN"); dsn != "" {
		dsns["postgres"] = dsn
	}
	return dsns
}

// TestSlotsSpaceRequestsAcrossHandles books from three handles on one
// database, as three worker processes would, and checks the slots handed
// out are spaced by 1/rps overall, after the burst. The send times are
// observed when Reserve returns, tens of milliseconds late on a loaded
// machine, so the rate is low enough that a 50 ms tolerance still tells
// spacing from none.
func TestSlotsSpaceRequestsAcrossHandles(t *testing.T) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := "spacing-" + time.Now().Format("150405.000000000")
			const rps, burst, perHandle = 20.0, 3, 10
			const jitter = 50 * time.Millisecond
			var handles []quota.Slots
			for range 3 {
				s, err := quota.Open(ctx, dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				handles = append(handles, s)
			}
			start := time.Now()
			var mu sync.Mutex
			var sendAt []time.Duration
			var wg sync.WaitGroup
			for _, h := range handles {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range perHandle {
						w, err := h.Reserve(ctx, key, rps, burst, time.Minute)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						sendAt = append(sendAt, time.Since(start)+w)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.Len(t, sendAt, 3*perHandle)
			sort.Slice(sendAt, func(i, j int) bool { return sendAt[i] < sendAt[j] })
			// 30 requests at 50/s with a burst of 3: the last may go no
			// earlier than (30-3)/50 s after the first.
			span := sendAt[len(sendAt)-1] - sendAt[0]
			require.GreaterOrEqual(t, span, time.Duration(float64(3*perHandle-burst)/rps*float64(time.Second))-jitter)
			// ... and not much later: nothing is wasted.
			require.Less(t, span, time.Duration(float64(3*perHandle)/rps*float64(time.Second))+4*jitter)
			// The bucket's bound: k+1 requests span at least (k+1-burst)/rps.
			const k = 10
			for i := k; i < len(sendAt); i++ {
				gap := sendAt[i] - sendAt[i-k]
				require.GreaterOrEqual(t, gap, time.Duration(float64(k+1-burst)/rps*float64(time.Second))-jitter,
					"slots %d and %d closer than the rate allows", i-k, i)
			}
		})
	}
}

// TestSlotsRefuseTooFarAhead: a caller that cannot wait long enough books
// nothing, so giving up does not push later requests back.
func TestSlotsRefuseTooFarAhead(t *testing.T) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := "ahead-" + time.Now().Format("150405.000000000")
			s, err := quota.Open(ctx, dsn)
			require.NoError(t, err)
			defer s.Close()
			w, err := s.Reserve(ctx, key, 1, 1, time.Second) // first: now
			require.NoError(t, err)
			require.Less(t, w, 50*time.Millisecond)
			w, err = s.Reserve(ctx, key, 1, 1, 5*time.Second) // second: a second later
			require.NoError(t, err)
			require.InDelta(t, time.Second.Seconds(), w.Seconds(), 0.1)
			_, err = s.Reserve(ctx, key, 1, 1, 500*time.Millisecond) // third would wait ~2s
			require.ErrorIs(t, err, quota.ErrNoSlot)
			w, err = s.Reserve(ctx, key, 1, 1, 5*time.Second) // still ~2s: the refusal booked nothing
			require.NoError(t, err)
			require.InDelta(t, (2 * time.Second).Seconds(), w.Seconds(), 0.1)

			_, err = s.Reserve(ctx, key, 0, 1, time.Second)
			require.Error(t, err, "a zero rate is a configuration error, not a slot")
		})
	}
}

// TestSlowRatesLoseOnlyAFixedMargin: below one request a second the slots
// are 1/rps plus 50 ms apart, not 5% wider (3 s a request at Amazon's
// 0.0167/s); from one a second up the 5% stays.
func TestSlowRatesLoseOnlyAFixedMargin(t *testing.T) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := quota.Open(ctx, dsn)
			require.NoError(t, err)
			defer s.Close()
			for _, c := range []struct {
				rps  float64
				want time.Duration
			}{
				{0.0167, 59880239520 + 50*time.Millisecond}, // 1/0.0167 s
				{0.5, 2*time.Second + 50*time.Millisecond},
				{10, 105 * time.Millisecond},
			} {
				key := "margin-" + strconv.FormatFloat(c.rps, 'f', -1, 64) + "-" + time.Now().Format("150405.000000000")
				_, err := s.Reserve(ctx, key, c.rps, 1, time.Hour)
				require.NoError(t, err)
				w, err := s.Reserve(ctx, key, c.rps, 1, time.Hour)
				require.NoError(t, err)
				require.InDelta(t, c.want.Seconds(), w.Seconds(), 0.02, "second slot at %v requests/s", c.rps)
			}
		})
	}
}

// TestOpenConcurrentlyOnANewDatabase opens the slots from many handles at
// once on an empty PostgreSQL schema, as worker processes starting together
// on a new database do: every one must succeed.
func TestOpenConcurrentlyOnANewDatabase(t *testing.T) {
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("ORDERSYNC_TEST_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	schema := "quota_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	const handles = 8
	errs := make(chan error, handles)
	var wg sync.WaitGroup
	for range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := quota.Open(ctx, u.String())
			if err == nil {
				_ = s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
