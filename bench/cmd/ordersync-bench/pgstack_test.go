package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/cluster"
)

func TestPostgresStatsCountsBackendsOverTheWindow(t *testing.T) {
	ps := newPostgresStats("test", "db")
	t0 := time.Unix(1000, 0)
	// At the start: two backends that have used 50 s and 7 s already.
	ps.record(t0, map[int]float64{10: 50, 11: 7})
	// A backend born in the window (1.5 s, all of it in the window); 10
	// used 2 s more, 11 ended (its 1 s before ending was seen).
	ps.record(t0.Add(5*time.Second), map[int]float64{10: 51, 11: 8, 12: 0.5})
	ps.record(t0.Add(10*time.Second), map[int]float64{10: 52, 12: 1.5})
	want := (2.0 + 1 + 1.5) / 10
	if math.Abs(ps.CPUCores-want) > 1e-9 {
		t.Fatalf("cpu cores = %v, want %v (CPU before the window must not count, a backend born in it counts whole)", ps.CPUCores, want)
	}
	if ps.Backends != 3 {
		t.Fatalf("backends = %d, want 3", ps.Backends)
	}
}

func TestSumProcessesAddsUp(t *testing.T) {
	got := sumProcesses("all", []processStats{{RSSMeanMiB: 100, RSSMaxMiB: 110, PeakRSSMiB: 120, CPUCores: 0.25}, {RSSMeanMiB: 50, RSSMaxMiB: 60, PeakRSSMiB: 70, CPUCores: 0.5}})
	if got.RSSMeanMiB != 150 || got.RSSMaxMiB != 170 || got.PeakRSSMiB != 190 || got.CPUCores != 0.75 || got.What != "all" {
		t.Fatalf("sum = %+v", got)
	}
}

func TestClusterPortLeavesEveryServicePortBelow32768(t *testing.T) {
	for range 20 {
		port, err := clusterPort()
		if err != nil {
			t.Fatal(err)
		}
		p := cluster.StandardPorts(port)
		for _, q := range []int{port, p.FrontendMembership, p.History, p.HistoryMembership, p.Matching, p.MatchingMembership, p.Worker, p.WorkerMembership, p.Metrics} {
			if q <= 1024 || q >= 32768 {
				t.Fatalf("frontend %d gives port %d: the membership table needs every port below 32768", port, q)
			}
		}
	}
}

func TestPrintScale(t *testing.T) {
	var b bytes.Buffer
	printScale(&b, "B4 scale (PostgreSQL stack)", &scaleResult{Platforms: 1000, Skipped: "no PostgreSQL: X is not set"})
	if !strings.Contains(b.String(), "SKIPPED: no PostgreSQL: X is not set") {
		t.Fatalf("skipped row does not say why: %q", b.String())
	}
	// Three workers of 200 MiB each: 600 MiB in all, but the RSS target
	// is per process, so the row meets it.
	r := &scaleResult{Platforms: 100, Settings: platformSettings{Interval: "60s"}, LagSamples: 10, LagP99: 30,
		WorkerProc:       processStats{RSSMeanMiB: 600, RSSMaxMiB: 600, PeakRSSMiB: 600},
		WorkerProcs:      []processStats{{RSSMaxMiB: 200, PeakRSSMiB: 200}, {RSSMaxMiB: 200, PeakRSSMiB: 200}, {RSSMaxMiB: 200, PeakRSSMiB: 200}},
		TemporalPostgres: newPostgresStats("t"), StorePostgres: newPostgresStats("s"), Driver: &processStats{}}
	b.Reset()
	printScale(&b, "B4 scale (PostgreSQL stack)", r)
	if !strings.HasSuffix(strings.TrimSpace(b.String()), "yes") {
		t.Fatalf("three 200 MiB workers should meet the 512 MiB per-process target: %q", b.String())
	}
	r.WorkerProcs[1].PeakRSSMiB = 600
	b.Reset()
	printScale(&b, "B4 scale (PostgreSQL stack)", r)
	if !strings.HasSuffix(strings.TrimSpace(b.String()), "no") {
		t.Fatalf("a 600 MiB worker misses the per-process target: %q", b.String())
	}
}
