// Package quota spaces a platform's requests across every worker process,
// through the database the workers already share (the order store's).
//
// Each platform has one row holding its theoretical arrival time (TAT) in
// microseconds: the generic cell rate algorithm. A request reserves its slot
// with one atomic upsert,
//
//	TAT' = max(TAT, now) + T        (T = 1/rps)
//	send at max(now, TAT - tau)     (tau = (burst-1) * T)
//
// and sleeps until then. Every process books from the same row, so
// together they send at most rps requests a second, evenly spaced, however
// many processes there are and however Temporal spreads the activities
// among them. Temporal's per-task-queue activity rate cannot do this alone:
// it is a token bucket holding a second's worth of tasks, split across the
// queue's partitions, so after a lull the workers together may send up to
// twice the rate within one second (docs/ratelimit.md has the measurements).
//
// Platforms that meter requests by cost book a budget of points the same
// way (points.go). The slots Open returns implement Points as well.
//
// The rows live in their own tables, ordersync_request_slots and
// ordersync_points_budgets, created on Open; they hold no order data and
// may be dropped at any time.
package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ordersync/ordersync/store"
)

// ErrNoSlot means the next free slot is further away than the caller can
// wait (its activity attempt would time out first).
var ErrNoSlot = errors.New("no request slot within the wait allowed")

// Slots books request slots.
type Slots interface {
	// Reserve books the next request of key at rps with the given burst
	// and returns how long to wait before sending it. When that would be
	// longer than maxWait nothing is booked and ErrNoSlot is returned.
	Reserve(ctx context.Context, key string, rps float64, burst int, maxWait time.Duration) (time.Duration, error)
	Close() error
}

// Open opens the slots table in the store named by dsn (the same DSN forms
// as store.Open: sqlite://path, path.db, postgres://...).
func Open(ctx context.Context, dsn string) (Slots, error) {
	backend, target, err := store.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("request slots: %w", err)
	}
	if backend == store.BackendSQLite {
		return openSQLite(ctx, target)
	}
	return openPostgres(ctx, target)
}

// JitterAllowance widens the spacing of slots by this fraction, for rates
// of one request a second or more. Evenly spaced at exactly rps, rps+1
// requests span exactly one second, and a few milliseconds of scheduling or
// network delay on the first of them puts all of them into one second as
// the platform counts it. Spaced at (1+JitterAllowance)/rps they span
// 1.05 s, so the platform never counts more than rps in any second unless
// one request is delayed 50 ms more than another (a busy host's timers are
// late by that much); the price is 5% of the quota.
//
// Slower rates get the same 50 ms as a fixed margin (jitterMargin), not 5%:
// requests a second or more apart cannot crowd a second, and a platform's
// bucket or window that refills one request per 1/rps is kept safe by the
// margin for one request's delay. At Amazon's 0.0167 requests/s, 5% would
// be 3 s a request, wasting 5% of a quota that takes hours to drain a
// backlog (docs/performance.md, B6); 50 ms is 0.08%.
const JitterAllowance = 0.05

// jitterMargin is the allowance of rates below one request a second: what
// JitterAllowance comes to at exactly one a second.
const jitterMargin = JitterAllowance * float64(time.Second/time.Microsecond)

// spacing is the slot interval at rps, in µs: 1/rps widened by the jitter
// allowance (5% at one request a second or more, else a fixed 50 ms).
func spacing(rps float64) int64 {
	t := 1e6 / rps
	return max(1, int64(math.Round(t+min(JitterAllowance*t, jitterMargin))))
}

// params turns a rate into the algorithm's integers (µs).
func params(rps float64, burst int, maxWait time.Duration) (interval, tolerance, limit int64, err error) {
	if rps <= 0 || math.IsNaN(rps) || math.IsInf(rps, 0) {
		return 0, 0, 0, fmt.Errorf("request slots: rate must be positive, got %v", rps)
	}
	interval = spacing(rps)
	tolerance = int64(max(burst, 1)-1) * interval
	return interval, tolerance, max(0, maxWait.Microseconds()), nil
}

// wait turns a booked TAT back into the delay before sending.
func wait(newTAT, now, interval, tolerance int64) time.Duration {
	return time.Duration(max(0, newTAT-interval-tolerance-now)) * time.Microsecond
}

// createPointsTable holds the points budgets (points.go): the TAT, the
// floor of the newest reading, the bookings still to be sent (JSON), the µs
// a point they were booked in, and the
// bucket the platform last stated. The same text is valid SQLite and
// PostgreSQL.
const createPointsTable = `CREATE TABLE IF NOT EXISTS ordersync_points_budgets (
	key TEXT PRIMARY KEY, tat_us BIGINT NOT NULL, floor_us BIGINT NOT NULL, pending TEXT NOT NULL,
	per_point DOUBLE PRECISION NOT NULL,
	rate DOUBLE PRECISION NOT NULL, capacity DOUBLE PRECISION NOT NULL)`

// upsertPoints writes a points row in SQLite.
const upsertPoints = `INSERT INTO ordersync_points_budgets (key, tat_us, floor_us, pending, per_point, rate, capacity) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (key) DO UPDATE SET tat_us = excluded.tat_us, floor_us = excluded.floor_us, pending = excluded.pending, per_point = excluded.per_point, rate = excluded.rate, capacity = excluded.capacity`
