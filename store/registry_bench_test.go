package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ordersync/ordersync/accounts"
)

// registryBenchEntriesEnv overrides how many entries BenchmarkRegistryScale
// fills the registry with (100,000 by default), for a quick trial run.
const registryBenchEntriesEnv = "ORDERSYNC_REGISTRY_BENCH_ENTRIES"

// BenchmarkRegistryScale fills each store's registry with 100,000
// platforms, as issue 25 sizes it (90% paused, 9% active, 1% removed; three
// kinds; 1% on a dedicated task queue; settings of about 400 bytes), one
// Put at a time as `platform apply` would, logs the insert rate, then
// measures single calls at that size. docs/performance.md ("Registry of
// 100,000 accounts") has the numbers and the command:
//
//	eval "$(bash .ci/postgres.sh | tail -n1)"
//	go test -run '^$' -bench RegistryScale -benchtime 200x ./store/
func BenchmarkRegistryScale(b *testing.B) {
	n := 100_000
	if v := os.Getenv(registryBenchEntriesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("%s=%q: want a number of at least 100", registryBenchEntriesEnv, v)
		}
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			if reason := be.unavailable(); reason != "" {
				b.Skip(reason)
			}
			s, err := Open(context.Background(), be.fresh(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			r, _ := RegistryOf(s)
			benchRegistry(b, r, n)
		})
	}
}

func benchEntry(i int) accounts.Entry {
	name := fmt.Sprintf("shop-%06d", i)
	e := accounts.Entry{Class: accounts.ClassPlatform, Name: name, State: accounts.Paused, Kind: []string{"shopify", "amazon", "woo"}[i%3]}
	switch {
	case i%100 == 0:
		e.State = accounts.Removed
	case i%100 < 10:
		e.State = accounts.Active
	}
	if i%100 == 7 {
		e.TaskQueue = "orders-" + name
	}
	e.Settings = json.RawMessage(fmt.Sprintf(`{"name":%q,"kind":%q,"endpoint":"https://%s.example.com/admin/api/2026-01",`+
		`"credentials":{"token_ref":"vault:secret/ordersync/%s#token"},"interval":"5m","settle":"2m","overlap":"1m",`+
		`"concurrency":2,"page_limit":250,"retry":{"max_attempts":10,"initial":"1s","max":"5m"},"options":{"api_version":"2026-01"}}`,
		name, e.Kind, name, name))
	return e
}

func benchRegistry(b *testing.B, r accounts.Registry, n int) {
	ctx := context.Background()
	start := time.Now()
	for i := range n {
		if _, err := r.Put(ctx, benchEntry(i), 0); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	// Printed, not logged: a benchmark that has sub-benchmarks shows no log.
	fmt.Printf("%s: filled %d entries one Put at a time in %s: %.0f puts/s\n", b.Name(), n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	rng := rand.New(rand.NewPCG(1, 2))
	live := func() int { // an entry that is not removed
		for {
			if i := rng.IntN(n); i%100 != 0 {
				return i
			}
		}
	}

	b.Run("Put/add", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := r.Put(ctx, benchEntry(n+i), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Put/edit", func(b *testing.B) {
		for b.Loop() {
			e := benchEntry(live())
			if _, err := r.Put(ctx, e, accounts.Any); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, ok, err := r.Get(ctx, accounts.ClassPlatform, benchEntry(live()).Name); err != nil || !ok {
				b.Fatal(err, ok)
			}
		}
	})
	for _, c := range []struct {
		name string
		f    accounts.Filter
	}{
		{"List/page of 1000", accounts.Filter{}},
		{"List/page of 100 active shopify", accounts.Filter{State: accounts.Active, Kind: "shopify", Limit: 100}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f := c.f
				f.Class, f.After = accounts.ClassPlatform, benchEntry(rng.IntN(n)).Name
				if _, err := r.List(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		f    accounts.Filter
	}{
		{"Count/all", accounts.Filter{}},
		{"Count/paused", accounts.Filter{State: accounts.Paused}},
		{"Count/active amazon", accounts.Filter{State: accounts.Active, Kind: "amazon"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.f.Class = accounts.ClassPlatform
			for b.Loop() {
				if _, err := r.Count(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	head, err := r.Revision(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Changes/page of 1000", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Changes(ctx, rng.Int64N(head-accounts.MaxPage), accounts.MaxPage); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Changes/caught up", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Changes(ctx, head, accounts.MaxPage); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TaskQueues", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.TaskQueues(ctx, accounts.ClassPlatform); err != nil {
				b.Fatal(err)
			}
		}
	})
}
