package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Running e2e tests side by side (see doc.go for the rules a test follows).
//
// parallel(t, share) is t.Parallel plus a share of the machine: the Go test
// runner starts every parallel test at once (TestMain lifts
// -test.parallel), and each then waits until its weight fits in the
// capacity (2 a core). Most tests spend most of their time waiting for the
// clock (settle times, intervals, retry schedules), so a light one counts
// 1, a heavy one 2, a chaos run 3 as long as its chaos lasts, a timed one
// all but 1.
type share struct {
	weight int
	// postgres: the test runs Temporal on PostgreSQL (postgresStack,
	// startPostgresCluster, `ordersync cluster`), whose pools and workers
	// were seen at 48 connections: as many such tests run at once as
	// PostgreSQL's max_connections allows (postgresSlots).
	postgres bool
	// timed: weight is all the capacity but a light test's.
	timed bool
	// long: the test runs for minutes (chaos, the rolling upgrade, token
	// rotation); it starts before the others of its weight, so that its
	// end does not come after everyone else's.
	long bool
}

var (
	// light: one embedded server, a simulator, a SQLite store and workers in
	// the test process (most tests).
	light = share{weight: 1}
	// heavy: worker or server OS processes, or a lot of orders.
	heavy = share{weight: 2}
	// heavyPostgres: heavy, with Temporal on PostgreSQL.
	heavyPostgres = share{weight: 2, postgres: true}
	// timed: the test bounds a rate, a latency or a deadline (the rate-limit
	// tests, a refetch within 5 s, a lag across a kill), so it runs next to
	// one light test at most (all the capacity but 1).
	timed = share{timed: true}
	// timedPostgres: timed, with Temporal on PostgreSQL.
	timedPostgres = share{timed: true, postgres: true}
)

// loadCapacityEnv overrides the capacity (e.g. 1: one test at a time).
const loadCapacityEnv = "ORDERSYNC_E2E_CAPACITY"

// defaultCapacity: 2 a core (measured on the 2-core development machine,
// see docs/development.md): four light tests, or two heavy ones, or a chaos
// run and a light one, kept each test's own time within a few percent of
// its time alone.
func defaultCapacity() int {
	return 2 * runtime.NumCPU()
}

// TestMain lets every parallel test start (each then waits in parallel for
// its share), unless -parallel is given, e.g. -parallel 1 to run them one
// after another.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "1000")
	}
	load.capacity = defaultCapacity()
	load.postgresSlots = postgresSlots()
	if v := os.Getenv(loadCapacityEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "%s=%q: want a whole number of at least 1\n", loadCapacityEnv, v)
			os.Exit(2)
		}
		load.capacity = n
	}
	os.Exit(m.Run())
}

// postgresSlots is how many PostgreSQL-backed tests may run at once: one
// per 50 connections of the test server's max_connections, less 10 for
// everything else, at most 2 (Debian's default of 100 allows one;
// .ci/postgres.sh sets 200).
func postgresSlots() int {
	dsn := os.Getenv(postgresDSNEnv)
	if dsn == "" {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 1 // requirePostgres says what is wrong
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&n); err != nil {
		return 1
	}
	return min(2, max(1, (n-10)/50))
}

// parallel marks t parallel and waits until its share fits next to the
// tests already running. Call it first thing in the test.
func parallel(t *testing.T, sh share) {
	t.Helper()
	t.Parallel()
	if sh.timed {
		sh.weight = max(1, load.capacity-light.weight)
	}
	sh.weight = min(sh.weight, load.capacity)
	waited := load.acquire(sh)
	load.mu.Lock()
	load.held[t] = sh
	load.mu.Unlock()
	t.Cleanup(func() { load.release(load.drop(t)) })
	if waited > time.Second {
		t.Logf("waited %s for a share of the machine (%d of %d)", waited.Round(time.Second), sh.weight, load.capacity)
	}
}

// lighten gives back part of a parallel test's share once its busy part is
// over (e.g. chaos, once the simulator is quiet and what is left is waiting
// for Amazon's 2-minute rule): sh.weight is what it needs from here on (a
// postgres slot stays held). A no-op in a serial test.
func lighten(t *testing.T, sh share) {
	load.mu.Lock()
	defer load.mu.Unlock()
	held, ok := load.held[t]
	if !ok || sh.weight >= held.weight {
		return
	}
	load.used -= held.weight - sh.weight
	if sh.weight == light.weight {
		load.light += sh.weight
	}
	held.weight = sh.weight
	load.held[t] = held
	load.grant()
}

// load is a weighted semaphore. Waiting tests go heaviest first (the heavy
// ones are the long ones: started late, they would run on alone at the
// end), postgres first within a weight, then in order of arrival; a test
// is not overtaken by the ones behind it, except while it waits for a
// postgres slot.
var load = loadGate{gather: gatherFor, held: map[*testing.T]share{}}

type loadGate struct {
	mu       sync.Mutex
	capacity int
	gather   time.Duration // gatherFor, or 0 in TestLoadGate
	// gathering: the gate is shut, the first tests queue; opened: since
	// when it is open.
	gathering bool
	opened    time.Time
	used      int
	light     int // of used, by light shares (lightened ones too)
	postgres  int // postgres shares held
	// postgresSlots is how many may be held at once (at least 1).
	postgresSlots int
	queue         []loadWaiter
	held          map[*testing.T]share // by test, as parallel and lighten leave it
}

type loadWaiter struct {
	share
	ready chan struct{}
}

// before says sh goes ahead of w in the queue: heavier first; at one
// weight, long ones first, then postgres ones (few at a time, they are the
// longest chain).
func (w loadWaiter) before(sh share) bool {
	switch {
	case w.weight != sh.weight:
		return w.weight < sh.weight
	case w.long != sh.long:
		return sh.long
	default:
		return sh.postgres && !w.postgres
	}
}

// gatherFor is how long the gate stays shut after the first test asks:
// the parallel tests all resume at once when the serial ones are done, and
// reach the gate in no particular order; shut for a moment, it sees them
// all and starts the heaviest first.
const gatherFor = 250 * time.Millisecond

func (g *loadGate) acquire(sh share) time.Duration {
	began := time.Now()
	w := loadWaiter{share: sh, ready: make(chan struct{})}
	g.mu.Lock()
	i := len(g.queue)
	for i > 0 && g.queue[i-1].before(sh) {
		i--
	}
	g.queue = slices.Insert(g.queue, i, w)
	switch {
	case !g.gathering && g.opened.IsZero():
		g.gathering = true
		time.AfterFunc(g.gather, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.gathering = false
			g.opened = time.Now()
			g.grant()
		})
	case !g.gathering:
		g.grant()
	}
	g.mu.Unlock()
	<-w.ready
	return time.Since(began)
}

func (g *loadGate) release(sh share) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used -= sh.weight
	if sh.weight == light.weight {
		g.light -= sh.weight
	}
	if sh.postgres {
		g.postgres--
	}
	g.grant()
}

// drop forgets t's share and returns it.
func (g *loadGate) drop(t *testing.T) share {
	g.mu.Lock()
	defer g.mu.Unlock()
	sh := g.held[t]
	delete(g.held, t)
	return sh
}

// grant starts the waiting tests that fit, in the queue's order. One that
// waits only for a postgres slot is passed over. The first that does not
// fit (the head) stops the heavier ones behind it; light ones behind it may
// start only while the light shares held, theirs included, leave room for
// the head: then only the heavier shares now held keep the head waiting,
// as they would anyway.
func (g *loadGate) grant() {
	if g.gathering {
		return
	}
	var head *loadWaiter
	for i := 0; i < len(g.queue); {
		w := g.queue[i]
		switch {
		case w.postgres && g.postgres >= max(1, g.postgresSlots):
			i++
			continue
		case g.used+w.weight > g.capacity:
			if head == nil {
				head = &g.queue[i]
			}
			i++
			continue
		case head != nil && (w.weight != light.weight || g.light+w.weight+head.weight > g.capacity):
			i++
			continue
		}
		g.used += w.weight
		if w.postgres {
			g.postgres++
		}
		if w.weight == light.weight {
			g.light += w.weight
		}
		close(w.ready)
		g.queue = slices.Delete(g.queue, i, i+1)
		if head != nil {
			head = nil // the queue moved: find the head again
			i = 0
		}
	}
}

// The process environment is shared by every test, and t.Setenv refuses to
// run in a parallel test. envMu guards it: setenv claims a variable for a
// parallel test, withEnv swaps a CLI command's variables in, and environ
// copies it for a child process, without the swapped ones.
var (
	envMu     sync.Mutex
	envClaims = map[string]envClaim{} // by parallel tests, for the whole run
	// envSwapped holds what withEnv replaced, for environ.
	envSwapped = map[string]savedEnv{}
	// cliMu lets one withEnv at a time swap its variables in.
	cliMu sync.Mutex
)

type envClaim struct{ value, test string }

type savedEnv struct {
	value string
	set   bool
}

// setenv sets an environment variable for t. In a serial test it is
// t.Setenv. In a parallel one (or a subtest of one) the variable stays set
// for the rest of the run, and another parallel test that wants it with
// another value fails at once, whether or not the two overlap this time:
// give it another name.
func setenv(t *testing.T, key, value string) {
	t.Helper()
	envMu.Lock()
	defer envMu.Unlock()
	if serialSetenv(t, key, value) {
		return
	}
	if c, ok := envClaims[key]; ok {
		if c.value != value {
			t.Fatalf("environment variable %s: %s set it to another value; parallel tests share the environment, so use another name", key, c.test)
		}
		return
	}
	envClaims[key] = envClaim{value: value, test: t.Name()}
	if err := os.Setenv(key, value); err != nil {
		t.Fatalf("set %s: %v", key, err)
	}
}

// serialSetenv is t.Setenv, false where t.Setenv refuses (it panics, before
// it changes anything, in a parallel test or a subtest of one).
func serialSetenv(t *testing.T, key, value string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	t.Setenv(key, value)
	return true
}

// environ is os.Environ for a child process: what a CLI command of another
// test has swapped in (withEnv) is left out.
func environ() []string {
	envMu.Lock()
	defer envMu.Unlock()
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, swapped := envSwapped[k]; !swapped {
			out = append(out, kv)
		}
	}
	for k, v := range envSwapped {
		if v.set {
			out = append(out, k+"="+v.value)
		}
	}
	return out
}

// withEnv runs f with the variables set, and puts them back after. The
// CLI commands of other tests wait meanwhile (nothing else does); waited is
// how long this one waited for them.
func withEnv(vars map[string]string, f func()) (waited time.Duration) {
	began := time.Now()
	cliMu.Lock()
	defer cliMu.Unlock()
	waited = time.Since(began)
	envMu.Lock()
	for k, v := range vars {
		old, set := os.LookupEnv(k)
		envSwapped[k] = savedEnv{old, set}
		_ = os.Setenv(k, v)
	}
	envMu.Unlock()
	defer func() {
		envMu.Lock()
		defer envMu.Unlock()
		for k, old := range envSwapped {
			if old.set {
				_ = os.Setenv(k, old.value)
			} else {
				_ = os.Unsetenv(k)
			}
			delete(envSwapped, k)
		}
	}()
	f()
	return waited
}

// TestLoadGate: tests get their share heaviest first, a light test passes
// a heavier one at the head of the queue only while that one still fits
// beside the light ones once the heavier shares end, and no more postgres
// shares are held than there are slots.
func TestLoadGate(t *testing.T) {
	g := &loadGate{capacity: 3}
	g.acquire(heavy)
	g.acquire(light) // fits: 3 of 3
	queue := func(sh share, queued int) chan struct{} {
		started := make(chan struct{})
		go func() {
			g.acquire(sh)
			close(started)
		}()
		waitQueued(t, g, queued) // so the order of arrival is known
		return started
	}
	isStarted := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	light1 := queue(light, 1)
	heavy2 := queue(heavy, 2)
	light3 := queue(light, 3)

	g.release(light) // 1 free: heavy2, at the head, needs 2; light1 may go, as heavy2 still fits beside it once the heavy one ends
	require.False(t, isStarted(heavy2))
	require.True(t, isStarted(light1))
	require.False(t, isStarted(light3))
	g.release(heavy) // heavy2 fits beside light1
	require.True(t, isStarted(heavy2))
	require.False(t, isStarted(light3))
	g.release(heavy)
	require.True(t, isStarted(light3))
	require.Equal(t, 2, g.used)

	// Light tests pass a heavier head only as far as it still fits beside
	// them once the heavier shares held now end.
	g = &loadGate{capacity: 4}
	g.acquire(heavy)
	timed3 := queue(share{weight: 3}, 1)
	lightA := queue(light, 1)
	require.True(t, isStarted(lightA))
	lightB := queue(light, 2)
	require.False(t, isStarted(lightB), "a second light test would keep the timed one waiting after the heavy one ends")
	require.False(t, isStarted(timed3))
	g.release(heavy)
	require.True(t, isStarted(timed3))
	require.False(t, isStarted(lightB))

	// At one weight, a long test goes first, then a postgres one.
	g = &loadGate{capacity: 3}
	g.acquire(heavy)
	g.acquire(light)
	short4 := queue(heavy, 1)
	pg5 := queue(heavyPostgres, 2)
	long6 := queue(share{weight: heavy.weight, long: true}, 3)
	g.release(heavy)
	require.False(t, isStarted(short4))
	require.False(t, isStarted(pg5))
	require.True(t, isStarted(long6), "the long test did not go first")
	g.release(heavy)
	require.True(t, isStarted(pg5), "the postgres test did not go before the other")
	require.False(t, isStarted(short4))

	// One postgres share at a time; a test waiting only for it is passed over.
	g = &loadGate{capacity: 4, postgresSlots: 1}
	g.acquire(heavyPostgres)
	pg2 := queue(heavyPostgres, 1)
	light4 := queue(light, 1) // pg2 alone waits
	require.True(t, isStarted(light4), "a light test waited behind one that waits for the postgres share")
	require.False(t, isStarted(pg2), "two postgres shares at once")
	g.release(heavyPostgres)
	require.True(t, isStarted(pg2))
	require.Equal(t, 3, g.used)
	g = &loadGate{capacity: 6, postgresSlots: 2}
	g.acquire(heavyPostgres)
	g.acquire(heavyPostgres)
	pg3 := queue(heavyPostgres, 1)
	require.False(t, isStarted(pg3), "three postgres shares in two slots")

	// The first tests to ask are gathered: the heavy one starts first, even
	// though a light one asked before it.
	g = &loadGate{capacity: 2, gather: 300 * time.Millisecond}
	light5 := queue(light, 1)
	heavy6 := queue(heavy, 2)
	require.Eventually(t, func() bool { return isStarted(heavy6) }, 2*time.Second, 10*time.Millisecond,
		"the heavy test did not start when the gate opened")
	require.False(t, isStarted(light5))
	g.release(heavy)
	require.True(t, isStarted(light5))
}

func waitQueued(t *testing.T, g *loadGate, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		got := len(g.queue)
		g.mu.Unlock()
		if got == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d waiting, want %d", got, n)
		time.Sleep(time.Millisecond)
	}
}
