package e2e

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Running e2e tests side by side (see doc.go for the rules a test follows).
//
// parallel(t, weight) is t.Parallel plus a share of the machine: the Go
// test runner starts every parallel test at once (TestMain lifts
// -test.parallel), and each then waits, first come first served, until its
// weight fits in loadCapacity. So a heavy test runs next to at most light
// ones, and an "alone" test next to nothing.
const (
	// light: one embedded server, a simulator, a SQLite store and workers in
	// the test process (most tests).
	light = 1
	// heavy: worker or server OS processes, the PostgreSQL-backed Temporal
	// stack, or a lot of orders.
	heavy = 2
	// alone: chaos and anything that measures time under load; it runs by
	// itself.
	alone = 1 << 20
)

// loadCapacityEnv overrides loadCapacity (e.g. 1: one test at a time).
const loadCapacityEnv = "ORDERSYNC_E2E_CAPACITY"

// defaultCapacity was measured on the 2-core CI machine kind: 3 light tests
// (or a heavy and a light one) keep both cores busy without pushing any
// test's own deadlines (docs/development.md has the numbers).
func defaultCapacity() int {
	return runtime.NumCPU() + 1
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

// parallel marks t parallel and waits until weight (light, heavy or alone)
// fits next to the tests already running. Call it first thing in the test.
func parallel(t *testing.T, weight int) {
	t.Helper()
	t.Parallel()
	waited := load.acquire(weight)
	t.Cleanup(func() { load.release(weight) })
	if waited > time.Second {
		t.Logf("waited %s for a share of the machine (weight %d of %d)", waited.Round(time.Second), min(weight, load.capacity), load.capacity)
	}
}

// load is a weighted semaphore. Waiting tests go heaviest first (the heavy
// ones are the long ones: started late, they would run on alone at the
// end), in order of arrival within a weight; a test at the head of the
// queue is not overtaken by lighter ones behind it.
var load loadGate

type loadGate struct {
	mu       sync.Mutex
	capacity int
	used     int
	queue    []loadWaiter
}

type loadWaiter struct {
	weight int
	ready  chan struct{}
}

func (g *loadGate) acquire(weight int) time.Duration {
	began := time.Now()
	g.mu.Lock()
	weight = min(weight, g.capacity)
	if len(g.queue) == 0 && g.used+weight <= g.capacity {
		g.used += weight
		g.mu.Unlock()
		return 0
	}
	w := loadWaiter{weight: weight, ready: make(chan struct{})}
	i := len(g.queue)
	for i > 0 && g.queue[i-1].weight < weight {
		i--
	}
	g.queue = slices.Insert(g.queue, i, w)
	g.mu.Unlock()
	<-w.ready
	return time.Since(began)
}

func (g *loadGate) release(weight int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used -= min(weight, g.capacity)
	for len(g.queue) > 0 && g.used+g.queue[0].weight <= g.capacity {
		g.used += g.queue[0].weight
		close(g.queue[0].ready)
		g.queue = g.queue[1:]
	}
}

// The process environment is shared by every test, and t.Setenv refuses to
// run in a parallel test. envMu guards it: setenv claims a variable for a
// parallel test, runCLI swaps the CLI's variables in for one command, and
// environ copies it for a child process.
var (
	envMu     sync.RWMutex
	envClaims = map[string]envClaim{} // by parallel tests, for the whole run
)

type envClaim struct{ value, test string }

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

// environ is os.Environ for a child process, never caught halfway through
// runCLI's swap.
func environ() []string {
	envMu.RLock()
	defer envMu.RUnlock()
	return os.Environ()
}

// withEnv runs f with the variables set, and puts them back after; other
// tests wait meanwhile for the environment (not for anything else).
func withEnv(vars map[string]string, f func()) {
	envMu.Lock()
	defer envMu.Unlock()
	type old struct {
		v  string
		ok bool
	}
	saved := map[string]old{}
	for k, v := range vars {
		ov, ok := os.LookupEnv(k)
		saved[k] = old{ov, ok}
		_ = os.Setenv(k, v)
	}
	defer func() {
		for k, o := range saved {
			if o.ok {
				_ = os.Setenv(k, o.v)
			} else {
				_ = os.Unsetenv(k)
			}
		}
	}()
	f()
}

// TestLoadGate: tests get their share heaviest first, and a light test
// never overtakes the heavy one at the head of the queue.
func TestLoadGate(t *testing.T) {
	g := &loadGate{capacity: 3}
	g.acquire(heavy)
	g.acquire(light) // fits: 3 of 3
	queue := func(weight, queued int) chan struct{} {
		started := make(chan struct{})
		go func() {
			g.acquire(weight)
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

	g.release(light) // 1 free, and heavy2, at the head, needs 2
	require.False(t, isStarted(heavy2))
	require.False(t, isStarted(light1), "a light test overtook the heavy one at the head")
	g.release(heavy) // 3 free: heavy2, then light1
	require.True(t, isStarted(heavy2))
	require.True(t, isStarted(light1))
	require.False(t, isStarted(light3))
	g.release(heavy)
	require.True(t, isStarted(light3))
	require.Equal(t, 2, g.used)
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
