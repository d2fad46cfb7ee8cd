package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
)

// registryCases is the registry behaviour every backend must show. Each
// case gets a DSN naming a fresh, empty store.
var registryCases = []conformanceCase{
	{"revisions grow across entries and Get reads them back", testRegistryRevisions},
	{"expect guards every write", testRegistryExpect},
	{"removed names are tombstones, reused only explicitly", testRegistryTombstones},
	{"what the registry cannot keep writes nothing", testRegistryRefuses},
	{"impossible queries are refused", testRegistryBadQueries},
	{"List pages and filters, Count counts alike", testRegistryListAndCount},
	{"List caps its page", testRegistryPageCap},
	{"name order is byte order on both stores", testRegistryByteOrder},
	{"Changes in revision order", testRegistryChanges},
	{"TaskQueues", testRegistryTaskQueues},
	{"concurrent writers and a polling reader", testRegistryConcurrentWriters},
	{"concurrent guarded writes lose nothing", testRegistryConcurrentGuarded},
	{"a registry written before migration 6 upgrades", testRegistryUpgrade},
}

func TestConformanceRegistry(t *testing.T) { runConformance(t, registryCases) }

// openRegistry opens a store on dsn and returns its registry.
func openRegistry(t *testing.T, dsn string) accounts.Registry {
	t.Helper()
	r, ok := RegistryOf(openStore(t, dsn))
	require.True(t, ok, "the store keeps a registry")
	return r
}

// entry is a platform entry with small settings naming it.
func regEntry(name string, state accounts.State) accounts.Entry {
	return accounts.Entry{
		Class: accounts.ClassPlatform, Name: name, State: state, Kind: "shopify",
		Settings: json.RawMessage(fmt.Sprintf(`{"name": %q, "kind": "shopify"}`, name)),
	}
}

func regPut(t *testing.T, r accounts.Registry, e accounts.Entry, expect int64) int64 {
	t.Helper()
	rev, err := r.Put(context.Background(), e, expect)
	require.NoError(t, err, "put %s %s expecting %d", e.Class, e.Name, expect)
	return rev
}

func regGet(t *testing.T, r accounts.Registry, class accounts.Class, name string) accounts.Entry {
	t.Helper()
	e, ok, err := r.Get(context.Background(), class, name)
	require.NoError(t, err)
	require.True(t, ok, "%s %s is stored", class, name)
	return e
}

func regRevision(t *testing.T, r accounts.Registry) int64 {
	t.Helper()
	rev, err := r.Revision(context.Background())
	require.NoError(t, err)
	return rev
}

func testRegistryRevisions(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	require.Equal(t, int64(0), regRevision(t, r), "an empty registry is at revision 0")
	_, ok, err := r.Get(ctx, accounts.ClassPlatform, "shop-a")
	require.NoError(t, err)
	require.False(t, ok, "nothing stored yet")

	before := time.Now().Add(-time.Second)
	a := regEntry("shop-a", accounts.Active)
	a.TaskQueue = "orders-shop-a"
	a.Settings = json.RawMessage("{\"b\": 1,\n  \"a\": [1, 2.50]}") // kept byte for byte, not normalised
	revA := regPut(t, r, a, 0)
	revB := regPut(t, r, regEntry("shop-b", accounts.Paused), 0)
	// A destination may share a platform's name: another namespace.
	d := accounts.Entry{Class: accounts.ClassDestination, Name: "shop-a", State: accounts.Active, Kind: "webhook", Settings: json.RawMessage(`{}`)}
	revD := regPut(t, r, d, 0)
	revA2 := regPut(t, r, regEntry("shop-a", accounts.Paused), revA)
	require.Equal(t, []int64{1, 2, 3, 4}, []int64{revA, revB, revD, revA2}, "each write takes the next registry-wide revision")
	require.Equal(t, int64(4), regRevision(t, r))

	got := regGet(t, r, accounts.ClassPlatform, "shop-a")
	require.Equal(t, accounts.Paused, got.State)
	require.Equal(t, int64(4), got.Revision)
	require.Equal(t, "", got.TaskQueue, "the whole entry is replaced")
	require.True(t, got.UpdatedAt.After(before) && got.UpdatedAt.Location() == time.UTC, "updated_at is the store's time, UTC: %v", got.UpdatedAt)

	r2 := openRegistry(t, dsn) // another process
	got = regGet(t, r2, accounts.ClassDestination, "shop-a")
	require.Equal(t, accounts.Entry{Class: accounts.ClassDestination, Name: "shop-a", Revision: 3, State: accounts.Active,
		Kind: "webhook", Settings: json.RawMessage(`{}`), UpdatedAt: got.UpdatedAt}, got)

	// Settings come back byte for byte.
	regPut(t, r2, a, accounts.Any)
	require.Equal(t, string(a.Settings), string(regGet(t, r, accounts.ClassPlatform, "shop-a").Settings))
	require.Equal(t, "orders-shop-a", regGet(t, r, accounts.ClassPlatform, "shop-a").TaskQueue)
}

func testRegistryExpect(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	conflict := func(e accounts.Entry, expect int64) {
		t.Helper()
		before := regRevision(t, r)
		_, err := r.Put(ctx, e, expect)
		require.ErrorIs(t, err, accounts.ErrConflict, "put %s expecting %d", e.Name, expect)
		require.NotErrorIs(t, err, accounts.ErrRemovedName)
		require.Equal(t, before, regRevision(t, r), "a refused write takes no revision")
	}

	rev := regPut(t, r, regEntry("shop", accounts.Active), 0)  // 0: the name is unused
	conflict(regEntry("shop", accounts.Active), 0)             // 0 over an active entry
	conflict(regEntry("shop", accounts.Paused), rev+1)         // a revision it is not at
	conflict(regEntry("other", accounts.Active), 1)            // a revision, but no entry has the name
	rev = regPut(t, r, regEntry("shop", accounts.Paused), rev) // the revision it is at
	conflict(regEntry("shop", accounts.Active), 0)             // 0 over a paused entry
	conflict(regEntry("shop", accounts.Active), rev-1)         // a stale revision
	rev2 := regPut(t, r, regEntry("shop", accounts.Active), accounts.Any)
	require.Greater(t, rev2, rev, "Any writes whatever is stored")
	regPut(t, r, regEntry("new", accounts.Active), accounts.Any) // and over nothing

	_, err := r.Put(ctx, regEntry("shop", accounts.Active), -2)
	require.ErrorIs(t, err, ErrInvalidEntry, "expect below Any")
	require.Equal(t, rev2, regGet(t, r, accounts.ClassPlatform, "shop").Revision, "nothing written")
}

func testRegistryTombstones(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	rev := regPut(t, r, regEntry("shop", accounts.Active), 0)
	removed := regPut(t, r, regEntry("shop", accounts.Removed), rev)

	got := regGet(t, r, accounts.ClassPlatform, "shop")
	require.Equal(t, accounts.Removed, got.State, "Get returns a removed entry")
	require.Equal(t, removed, got.Revision)

	for _, expect := range []int64{0, accounts.Any} {
		before := regRevision(t, r)
		_, err := r.Put(ctx, regEntry("shop", accounts.Active), expect)
		require.ErrorIs(t, err, accounts.ErrRemovedName, "expect %d over a removed name", expect)
		require.NotErrorIs(t, err, accounts.ErrConflict)
		require.Equal(t, before, regRevision(t, r))
	}
	_, err := r.Put(ctx, regEntry("shop", accounts.Active), rev)
	require.ErrorIs(t, err, accounts.ErrConflict, "a revision older than the removal")

	// Explicit reuse: name the removed entry's revision.
	reused := regPut(t, r, regEntry("shop", accounts.Active), removed)
	got = regGet(t, r, accounts.ClassPlatform, "shop")
	require.Equal(t, accounts.Active, got.State)
	require.Equal(t, reused, got.Revision)

	// A tombstone is listed only when asked for, and a cache sees it.
	gone := regPut(t, r, regEntry("gone", accounts.Active), 0)
	gone = regPut(t, r, regEntry("gone", accounts.Removed), gone)
	list, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform})
	require.NoError(t, err)
	require.Equal(t, []string{"shop"}, regNames(list))
	list, err = r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform, State: accounts.Removed})
	require.NoError(t, err)
	require.Equal(t, []string{"gone"}, regNames(list))
	changes, err := r.Changes(ctx, reused, 0)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, accounts.Removed, changes[0].State)
	require.Equal(t, gone, changes[0].Revision)
}

func regNames(entries []accounts.Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return out
}

func testRegistryRefuses(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	big := `{"pad":"` + strings.Repeat("x", accounts.MaxSettingsSize) + `"}`
	cases := map[string]func(e *accounts.Entry){
		"settings over 64 KiB":     func(e *accounts.Entry) { e.Settings = json.RawMessage(big) },
		"invalid JSON":             func(e *accounts.Entry) { e.Settings = json.RawMessage(`{"a":`) },
		"no settings":              func(e *accounts.Entry) { e.Settings = nil },
		"settings not UTF-8":       func(e *accounts.Entry) { e.Settings = json.RawMessage("{\"a\":\"\xff\"}") },
		"empty name":               func(e *accounts.Entry) { e.Name = "" },
		"name too long":            func(e *accounts.Entry) { e.Name = strings.Repeat("n", accounts.MaxNameLength+1) },
		"name with a NUL byte":     func(e *accounts.Entry) { e.Name = "shop\x00" },
		"name not UTF-8":           func(e *accounts.Entry) { e.Name = "shop\xff" },
		"unknown class":            func(e *accounts.Entry) { e.Class = "warehouse" },
		"unknown state":            func(e *accounts.Entry) { e.State = "deleted" },
		"no state":                 func(e *accounts.Entry) { e.State = "" },
		"kind too long":            func(e *accounts.Entry) { e.Kind = strings.Repeat("k", maxRegistryKindBytes+1) },
		"kind with a NUL byte":     func(e *accounts.Entry) { e.Kind = "shop\x00ify" },
		"task queue too long":      func(e *accounts.Entry) { e.TaskQueue = strings.Repeat("q", maxRegistryTaskQueueBytes+1) },
		"task queue not UTF-8":     func(e *accounts.Entry) { e.TaskQueue = "orders-\xfe" },
		"task queue with NUL byte": func(e *accounts.Entry) { e.TaskQueue = "orders\x00" },
	}
	for name, spoil := range cases {
		e := regEntry("shop", accounts.Active)
		spoil(&e)
		_, err := r.Put(ctx, e, accounts.Any)
		require.ErrorIs(t, err, ErrInvalidEntry, name)
	}
	require.Equal(t, int64(0), regRevision(t, r), "nothing written")

	// The bounds themselves are kept.
	e := regEntry(strings.Repeat("n", accounts.MaxNameLength), accounts.Active)
	e.Settings = json.RawMessage(big[:accounts.MaxSettingsSize-2] + `"}`)
	e.Kind, e.TaskQueue = strings.Repeat("k", maxRegistryKindBytes), strings.Repeat("q", maxRegistryTaskQueueBytes)
	require.NoError(t, e.Check())
	regPut(t, r, e, 0)
	got := regGet(t, r, accounts.ClassPlatform, e.Name)
	require.Equal(t, string(e.Settings), string(got.Settings))
	require.Equal(t, e.TaskQueue, got.TaskQueue)
}

func testRegistryBadQueries(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	regPut(t, r, regEntry("shop", accounts.Active), 0)
	for name, f := range map[string]accounts.Filter{
		"no class":             {},
		"unknown class":        {Class: "warehouse"},
		"unknown state":        {Class: accounts.ClassPlatform, State: "deleted"},
		"negative limit":       {Class: accounts.ClassPlatform, Limit: -1},
		"after too long":       {Class: accounts.ClassPlatform, After: strings.Repeat("a", accounts.MaxNameLength+1)},
		"kind with a NUL byte": {Class: accounts.ClassPlatform, Kind: "a\x00"},
		"task queue not UTF-8": {Class: accounts.ClassPlatform, TaskQueue: "\xff"},
	} {
		_, err := r.List(ctx, f)
		require.ErrorIs(t, err, ErrBadRegistryQuery, "List: %s", name)
		_, err = r.Count(ctx, f)
		require.ErrorIs(t, err, ErrBadRegistryQuery, "Count: %s", name)
	}
	_, _, err := r.Get(ctx, "warehouse", "shop")
	require.ErrorIs(t, err, ErrBadRegistryQuery)
	_, _, err = r.Get(ctx, accounts.ClassPlatform, "shop\x00")
	require.ErrorIs(t, err, ErrBadRegistryQuery)
	_, err = r.Changes(ctx, 0, -1)
	require.ErrorIs(t, err, ErrBadRegistryQuery)
	_, err = r.TaskQueues(ctx, "")
	require.ErrorIs(t, err, ErrBadRegistryQuery)
}

// registryFixture writes n platforms (and a few destinations, which no
// platform list may show) with states, kinds and queues in a pattern, and
// returns the platforms as stored.
func registryFixture(t *testing.T, r accounts.Registry, n int) []accounts.Entry {
	t.Helper()
	states := []accounts.State{accounts.Active, accounts.Paused, accounts.Paused, accounts.Removed}
	kinds := []string{"shopify", "amazon", "woo"}
	queues := []string{"", "", "orders-big", "orders-eu", ""}
	var out []accounts.Entry
	for i := range n {
		e := regEntry(fmt.Sprintf("shop-%04d", (i*7919)%n), accounts.Active) // written out of name order
		e.Kind, e.TaskQueue = kinds[i%len(kinds)], queues[i%len(queues)]
		rev := regPut(t, r, e, 0)
		if st := states[i%len(states)]; st != accounts.Active {
			e.State = st
			regPut(t, r, e, rev)
		}
		out = append(out, e)
	}
	for i := range 3 {
		regPut(t, r, accounts.Entry{Class: accounts.ClassDestination, Name: fmt.Sprintf("shop-%04d", i), State: accounts.Active,
			Kind: "shopify", TaskQueue: "orders-big", Settings: json.RawMessage(`{}`)}, 0)
	}
	slices.SortFunc(out, func(a, b accounts.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func testRegistryListAndCount(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	all := registryFixture(t, r, 60)
	filters := []accounts.Filter{{}}
	for _, st := range []accounts.State{"", accounts.Active, accounts.Paused, accounts.Removed} {
		for _, kind := range []string{"", "shopify", "amazon", "none"} {
			for _, q := range []string{"", "orders-big", "orders-eu"} {
				filters = append(filters, accounts.Filter{State: st, Kind: kind, TaskQueue: q})
			}
		}
	}
	for _, f := range filters {
		f.Class = accounts.ClassPlatform
		want := []string{}
		for _, e := range all {
			if (f.State == "" && e.State != accounts.Removed || f.State == e.State) &&
				(f.Kind == "" || f.Kind == e.Kind) && (f.TaskQueue == "" || f.TaskQueue == e.TaskQueue) {
				want = append(want, e.Name)
			}
		}
		n, err := r.Count(ctx, f)
		require.NoError(t, err)
		require.Equal(t, len(want), n, "Count %+v", f)

		got := []string{}
		for page := f; ; {
			page.Limit = 4
			list, err := r.List(ctx, page)
			require.NoError(t, err)
			require.LessOrEqual(t, len(list), 4)
			for _, e := range list {
				require.Equal(t, accounts.ClassPlatform, e.Class)
				got = append(got, e.Name)
			}
			if len(list) < 4 {
				break
			}
			page.After = list[len(list)-1].Name
		}
		require.Equal(t, want, got, "pages of %+v", f)
		whole, err := r.List(ctx, f)
		require.NoError(t, err)
		require.Equal(t, want, regNames(whole), "one page of %+v", f)
	}
	// Entries come back whole.
	list, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform, After: "shop-0009", Limit: 1})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, regGet(t, r, accounts.ClassPlatform, list[0].Name), list[0])
	n, err := r.Count(ctx, accounts.Filter{Class: accounts.ClassDestination, Kind: "shopify", After: "shop-0001", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 3, n, "Count ignores After and Limit")
}

func testRegistryPageCap(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	for i := range accounts.MaxPage + 2 {
		regPut(t, r, regEntry(fmt.Sprintf("shop-%05d", i), accounts.Paused), 0)
	}
	for _, limit := range []int{0, accounts.MaxPage + 1, 1 << 30} {
		list, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform, Limit: limit})
		require.NoError(t, err)
		require.Len(t, list, accounts.MaxPage, "limit %d", limit)
		changes, err := r.Changes(ctx, 0, limit)
		require.NoError(t, err)
		require.Len(t, changes, accounts.MaxPage, "changes, limit %d", limit)
	}
	n, err := r.Count(ctx, accounts.Filter{Class: accounts.ClassPlatform})
	require.NoError(t, err)
	require.Equal(t, accounts.MaxPage+2, n)
}

// testRegistryByteOrder: names sort by their bytes (Go's string order) on
// both stores, whatever PostgreSQL's locale (which would sort "b" before
// "C" and ignore punctuation), so pages are the same everywhere.
func testRegistryByteOrder(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	want := []string{"shop-b", "Shop-C", "shop_a", "shop.d", "shop-a", "éshop", "zshop", "Zshop", "shop", "sh-op"}
	for _, name := range want {
		regPut(t, r, regEntry(name, accounts.Active), 0)
	}
	slices.Sort(want)
	var got []string
	for after := ""; ; {
		list, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform, After: after, Limit: 3})
		require.NoError(t, err)
		if len(list) == 0 {
			break
		}
		got = append(got, regNames(list)...)
		after = list[len(list)-1].Name
	}
	require.Equal(t, want, got)
}

func testRegistryChanges(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	a := regPut(t, r, regEntry("a", accounts.Active), 0)
	regPut(t, r, regEntry("b", accounts.Active), 0)
	d := regPut(t, r, accounts.Entry{Class: accounts.ClassDestination, Name: "d", State: accounts.Active, Settings: json.RawMessage(`{}`)}, 0)
	a = regPut(t, r, regEntry("a", accounts.Paused), a)

	changes, err := r.Changes(ctx, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "d", "a"}, regNames(changes), "each entry once, at its latest revision, of any class")
	require.Equal(t, []int64{2, d, a}, []int64{changes[0].Revision, changes[1].Revision, changes[2].Revision})
	require.Equal(t, accounts.Paused, changes[2].State)

	changes, err = r.Changes(ctx, 2, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"d"}, regNames(changes), "after a revision, up to limit")
	changes, err = r.Changes(ctx, a, 10)
	require.NoError(t, err)
	require.Empty(t, changes, "nothing after the latest")
}

func testRegistryTaskQueues(t *testing.T, dsn string) {
	r := openRegistry(t, dsn)
	ctx := context.Background()
	queues, err := r.TaskQueues(ctx, accounts.ClassPlatform)
	require.NoError(t, err)
	require.Empty(t, queues)
	registryFixture(t, r, 20)
	e := regEntry("solo", accounts.Removed)
	e.TaskQueue = "orders-solo" // only a removed entry has it
	regPut(t, r, e, 0)
	queues, err = r.TaskQueues(ctx, accounts.ClassPlatform)
	require.NoError(t, err)
	require.Equal(t, []string{"orders-big", "orders-eu"}, queues)
	queues, err = r.TaskQueues(ctx, accounts.ClassDestination)
	require.NoError(t, err)
	require.Equal(t, []string{"orders-big"}, queues)
}

// testRegistryConcurrentWriters: writers on two handles (processes) add
// entries from several goroutines while a reader polls Changes. Every
// revision is handed out once, each writer's revisions grow, and the
// reader, resuming after the last revision it saw, sees every revision
// exactly once and in order: a revision committed after a higher one was
// visible would be skipped for ever.
func testRegistryConcurrentWriters(t *testing.T, dsn string) {
	handles := []accounts.Registry{openRegistry(t, dsn), openRegistry(t, dsn)}
	reader := openRegistry(t, dsn)
	const writers, each = 6, 40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		written  = map[int64]string{}
		failures []error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, err)
	}
	for w := range writers {
		wg.Go(func() {
			r := handles[w%len(handles)]
			var last int64
			for i := range each {
				name := fmt.Sprintf("w%d-%03d", w, i)
				rev, err := r.Put(ctx, regEntry(name, accounts.Active), 0)
				if err != nil {
					fail(err)
					return
				}
				if rev <= last {
					fail(fmt.Errorf("writer %d got revision %d after %d", w, rev, last))
				}
				last = rev
				mu.Lock()
				if other, dup := written[rev]; dup {
					failures = append(failures, fmt.Errorf("revision %d handed to %s and %s", rev, other, name))
				}
				written[rev] = name
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var seen []int64
	var since int64
	seenName := map[int64]string{}
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		changes, err := reader.Changes(ctx, since, 7)
		require.NoError(t, err)
		for _, c := range changes {
			require.Greater(t, c.Revision, since, "Changes returns revisions above since, in order")
			since = c.Revision
			seen = append(seen, c.Revision)
			seenName[c.Revision] = c.Name
		}
		if finished && len(changes) == 0 {
			break
		}
	}
	require.Empty(t, failures)
	total := int64(writers * each)
	require.Equal(t, total, regRevision(t, reader))
	require.Len(t, written, int(total))
	want := make([]int64, total)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, seen, "the polling reader saw every revision once, in order")
	for rev, name := range written {
		require.Equal(t, name, seenName[rev], "revision %d", rev)
	}
}

// testRegistryConcurrentGuarded: writers race for one new name (exactly
// one wins) and then edit one entry by read, modify, write with the
// revision they read: every edit that succeeds counts, none is lost.
func testRegistryConcurrentGuarded(t *testing.T, dsn string) {
	handles := []accounts.Registry{openRegistry(t, dsn), openRegistry(t, dsn)}
	const writers, edits = 6, 15
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	results := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			e := regEntry("contested", accounts.Active)
			e.Settings = json.RawMessage(`{"edits":0}`)
			_, results[w] = handles[w%len(handles)].Put(ctx, e, 0)
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range results {
		if err == nil {
			wins++
		} else {
			require.ErrorIs(t, err, accounts.ErrConflict)
		}
	}
	require.Equal(t, 1, wins, "exactly one writer adds a new name")

	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			r := handles[w%len(handles)]
			for done := 0; done < edits; {
				e, ok, err := r.Get(ctx, accounts.ClassPlatform, "contested")
				if err != nil || !ok {
					errs <- fmt.Errorf("get: %v (found %v)", err, ok)
					return
				}
				var s struct{ Edits int }
				if err := json.Unmarshal(e.Settings, &s); err != nil {
					errs <- err
					return
				}
				e.Settings = json.RawMessage(fmt.Sprintf(`{"edits":%d}`, s.Edits+1))
				_, err = r.Put(ctx, e, e.Revision)
				switch {
				case errors.Is(err, accounts.ErrConflict):
					continue // someone else edited it: read again
				case err != nil:
					errs <- err
					return
				}
				done++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := regGet(t, handles[0], accounts.ClassPlatform, "contested")
	require.JSONEq(t, fmt.Sprintf(`{"edits":%d}`, writers*edits), string(got.Settings), "no edit lost")
	require.Equal(t, int64(1+writers*edits), got.Revision, "one revision per successful write, none for a refused one")
}

// testRegistryUpgrade opens a store whose registry was written under
// migration 5 alone (6 undone by hand): migration 6 rebuilds the indexes
// (and, on PostgreSQL, the collation) around the entries, which read back
// unchanged, and the registry goes on numbering from where it was.
func testRegistryUpgrade(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	r, _ := RegistryOf(s)
	regPut(t, r, regEntry("shop-b", accounts.Active), 0)
	e := regEntry("Shop-a", accounts.Paused)
	e.TaskQueue = "orders-a"
	regPut(t, r, e, 0)
	before, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform})
	require.NoError(t, err)
	undo := []string{
		`DROP INDEX registry_by_state`, `DROP INDEX registry_by_kind`, `DROP INDEX registry_by_task_queue`,
		`CREATE INDEX registry_by_state ON registry (class, state, name)`,
		`CREATE INDEX registry_by_kind ON registry (class, kind, name)`,
		`CREATE INDEX registry_by_task_queue ON registry (class, task_queue, name)`,
		`DELETE FROM schema_migrations WHERE version = 6`,
	}
	if dialectOf(dsn) == "postgres" {
		undo = append(undo, `ALTER TABLE registry ALTER COLUMN class TYPE text COLLATE "default",
			ALTER COLUMN name TYPE text COLLATE "default", ALTER COLUMN state TYPE text COLLATE "default",
			ALTER COLUMN kind TYPE text COLLATE "default", ALTER COLUMN task_queue TYPE text COLLATE "default"`)
	}
	for _, stmt := range undo {
		execRaw(t, s, stmt)
	}
	require.NoError(t, s.Close())

	r = openRegistry(t, dsn)
	after, err := r.List(ctx, accounts.Filter{Class: accounts.ClassPlatform})
	require.NoError(t, err)
	require.Equal(t, before, after)
	queues, err := r.TaskQueues(ctx, accounts.ClassPlatform)
	require.NoError(t, err)
	require.Equal(t, []string{"orders-a"}, queues)
	require.Equal(t, int64(3), regPut(t, r, regEntry("shop-c", accounts.Active), 0))
}
