package main

import (
	"context"
	"math/rand/v2"
	"sort"
	"time"
)

// lagWindow is the measurement window B4 and B5 share: every 10 s it
// samples the processes' memory (and whatever more) and asks lagSample
// random cursors for their lag; it measures the processes' CPU over the
// whole window.
type lagWindow struct {
	procs     []*processStats
	more      func() // further samples each turn and at both ends (PostgreSQL backends); may be nil
	names     []string
	lagSample int
	rng       *rand.Rand
	length    time.Duration
}

// windowed is what a lagWindow measured.
type windowed struct {
	start, end  time.Time
	lags        []float64 // sorted
	queryErrors int
}

func (lw lagWindow) sampleMore() {
	if lw.more != nil {
		lw.more()
	}
}

func (lw lagWindow) run(ctx context.Context, sys *system) (windowed, error) {
	var w windowed
	for _, p := range lw.procs {
		p.startCPU()
	}
	lw.sampleMore()
	w.start = time.Now()
	for time.Since(w.start) < lw.length {
		for _, p := range lw.procs {
			p.sample()
		}
		lw.sampleMore()
		// Queries cost the server and the worker too, so only a few a second.
		at := time.Now()
		var err error
		if w.lags, err = sampleLags(ctx, sys, lw.rng, lw.names, lw.lagSample, at, w.lags); err != nil {
			w.queryErrors++
		}
		if err := sleep(ctx, 10*time.Second-time.Since(at)); err != nil {
			return w, err
		}
	}
	w.end = time.Now()
	for _, p := range lw.procs {
		p.endCPU()
		p.sample()
	}
	lw.sampleMore()
	sort.Float64s(w.lags)
	return w, nil
}

// seconds is the window's length.
func (w windowed) seconds() float64 { return w.end.Sub(w.start).Seconds() }

// quantiles are the lags' p50, p99 and maximum (zeros without samples).
func (w windowed) quantiles() (p50, p99, top float64) {
	if len(w.lags) == 0 {
		return 0, 0, 0
	}
	return quantile(w.lags, 0.5), quantile(w.lags, 0.99), w.lags[len(w.lags)-1]
}

// sampleLags appends the lag (at minus the watermark) of n random cursors
// of names to lags; a failed query still appends what the others answered.
func sampleLags(ctx context.Context, sys *system, rng *rand.Rand, names []string, n int, at time.Time, lags []float64) ([]float64, error) {
	perm := rng.Perm(len(names))[:min(len(names), n)]
	sample := make([]string, len(perm))
	for i, j := range perm {
		sample[i] = names[j]
	}
	sts, err := sys.statuses(ctx, sample)
	for _, st := range sts {
		lags = append(lags, at.Sub(st.Watermark).Seconds())
	}
	return lags, err
}
