package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// freshResult is B3: how long after a version became visible at the
// platform it was in the store.
type freshResult struct {
	Shops         int              `json:"shops"`
	LiveRate      float64          `json:"live_orders_per_second_per_shop"`
	MaxUpdates    int              `json:"max_updates"`
	UpdateSpread  string           `json:"update_spread"`
	Late          string           `json:"late"`
	Settings      platformSettings `json:"settings"`
	WarmupSeconds float64          `json:"warmup_seconds"`
	WindowSeconds float64          `json:"window_seconds"`
	Versions      int              `json:"versions"`
	NotLanded     int              `json:"not_landed"`
	P50           float64          `json:"p50_seconds"`
	P90           float64          `json:"p90_seconds"`
	P99           float64          `json:"p99_seconds"`
	Max           float64          `json:"max_seconds"`
	Target        float64          `json:"target_p99_seconds"`
	// DelayP50 and DelayP99 are how long after its slice was due (slice end
	// + settle) a version landed, for versions visible by then: the part of
	// the latency ordersync and Temporal add on top of interval and settle.
	DelayP50 float64 `json:"due_delay_p50_seconds"`
	DelayP99 float64 `json:"due_delay_p99_seconds"`
	Note     string  `json:"note,omitempty"`
}

// landings records when each order version first reached the store: the
// moment UpsertOrders returned for a batch holding it. It wraps the real
// store, so what is timed is the store's own commit.
type landings struct {
	store.Store
	mu sync.Mutex
	at map[string]map[string][]landing // platform -> id -> versions
}

type landing struct {
	updated time.Time
	at      time.Time
}

func (l *landings) UpsertOrders(ctx context.Context, orders []connectors.Order) (store.UpsertResult, error) {
	res, err := l.Store.UpsertOrders(ctx, orders)
	if err != nil {
		return res, err
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range orders {
		byID := l.at[o.Platform]
		if byID == nil {
			byID = map[string][]landing{}
			l.at[o.Platform] = byID
		}
		vs := byID[o.ID]
		seen := false
		for _, v := range vs {
			seen = seen || v.updated.Equal(o.UpdatedAt)
		}
		if !seen {
			byID[o.ID] = append(vs, landing{updated: o.UpdatedAt, at: now})
		}
	}
	return res, nil
}

// landedBy is when the store first held v or a newer version of the order:
// a version superseded before ordersync fetched it counts as stored when
// its successor is.
func (l *landings) landedBy(platform, id string, updated time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, v := range l.at[platform][id] {
		if !v.updated.Before(updated.Truncate(time.Microsecond)) && (first.IsZero() || v.at.Before(first)) {
			first = v.at
		}
	}
	return first, !first.IsZero()
}

// runFreshness runs B3: live orders with updates and late visibility,
// ordersync following the present. Every version that became visible in
// the window is looked up in the landing log.
func runFreshness(ctx context.Context, env *benchEnv, p *params) (freshResult, error) {
	interval, err := time.ParseDuration(p.B3Interval)
	if err != nil {
		return freshResult{}, err
	}
	settle, err := time.ParseDuration(p.B3Settle)
	if err != nil {
		return freshResult{}, err
	}
	res := freshResult{Shops: p.B3Shops, LiveRate: p.B3LiveRate, MaxUpdates: 3, UpdateSpread: p.B3Spread.String(), Late: p.B3Late,
		WarmupSeconds: p.B3Warmup.Seconds(), WindowSeconds: p.B3Window.Seconds(),
		Target: (interval + settle + 3*time.Second).Seconds()}
	late, err := time.ParseDuration(p.B3Late)
	if err != nil {
		return res, err
	}
	simCfg := sim.DefaultConfig()
	simCfg.Seed = 13
	simCfg.Shops = shops(p.B3Shops)
	simCfg.AdminToken = "bench-admin"
	simCfg.HistoryOrders, simCfg.History = 0, 0
	simCfg.LiveRate = p.B3LiveRate
	simCfg.MaxUpdates = res.MaxUpdates
	simCfg.UpdateSpread = p.B3Spread
	simCfg.Late = late
	simCfg.RateLimit = sim.RateLimit{}
	simCfg.Faults = sim.Faults{}
	res.Settings = platformSettings{
		Start: time.Now().UTC().Truncate(time.Second), Interval: p.B3Interval, Overlap: p.B3Overlap, Settle: p.B3Settle,
		Timeout: "10s", Concurrency: 4, RPS: 1000, Burst: 1000, PageSize: 100, MaxPages: 100,
	}
	land := &landings{at: map[string]map[string][]landing{}}
	sys, err := startSystem(ctx, env.caseDir("b3"), systemOptions{sim: simCfg, settings: res.Settings, serverDB: env.serverDB,
		wrapStore: func(st store.Store) activities.OrderStore { land.Store = st; return land }})
	if err != nil {
		return res, err
	}
	defer sys.stop()
	env.logf("B3: %d shops, %g live orders/s each, interval %s, settle %s, overlap %s, late %s",
		p.B3Shops, p.B3LiveRate, p.B3Interval, p.B3Settle, p.B3Overlap, p.B3Late)
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	if err := sleep(ctx, p.B3Warmup); err != nil {
		return res, err
	}
	from := sys.sim.Now()
	if err := sleep(ctx, p.B3Window); err != nil {
		return res, err
	}
	to := sys.sim.Now()
	// Wait until the window's versions can all have been fetched: the
	// watermark is past the window plus the visibility delay.
	overlap, _ := time.ParseDuration(p.B3Overlap)
	if _, err := sys.waitWatermarks(ctx, to.Add(late+overlap), 2*time.Minute); err != nil {
		res.Note = err.Error()
	}
	var lat, delays []float64
	start := res.Settings.Start
	for _, shop := range shopNames(simCfg) {
		vs, err := sys.sim.VisibleBetween(shop, from, to)
		if err != nil {
			return res, err
		}
		for _, v := range vs {
			at, ok := land.landedBy(shop, v.ID, v.UpdatedAt)
			if !ok {
				res.NotLanded++
				continue
			}
			lat = append(lat, at.Sub(v.VisibleAt).Seconds())
			due := start.Add((v.UpdatedAt.Sub(start)/interval+1)*interval + settle)
			if !v.VisibleAt.After(due) {
				delays = append(delays, at.Sub(due).Seconds())
			}
		}
	}
	res.Versions = len(lat) + res.NotLanded
	if len(lat) == 0 {
		return res, fmt.Errorf("no versions became visible in the window")
	}
	sort.Float64s(lat)
	res.P50, res.P90, res.P99, res.Max = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99), lat[len(lat)-1]
	sort.Float64s(delays)
	res.DelayP50, res.DelayP99 = quantile(delays, 0.5), quantile(delays, 0.99)
	return res, nil
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
