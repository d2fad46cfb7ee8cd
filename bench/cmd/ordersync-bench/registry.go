package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// B10 registry: 100,000 registered accounts (all but a few paused, as a
// middleman's fleet of quiet shops), one `ordersync worker` process
// following the registry. It measures what an operator waits for (add,
// first slice of an added account, remove, list, status, apply) and what
// the registered-but-inactive accounts cost the worker (its memory before
// and after they were registered).

type registryParams struct {
	Accounts int `json:"accounts"`
	Active   int `json:"active_accounts"`
	Adds     int `json:"adds_measured"`
	Apply    int `json:"apply_file_platforms"`
}

func (p *registryParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Accounts, "b10-accounts", 100000, "B10: registered accounts (all but -b10-active paused)")
	fs.IntVar(&p.Active, "b10-active", 5, "B10: accounts that fetch (simulator shops)")
	fs.IntVar(&p.Adds, "b10-adds", 10, "B10: accounts added (and removed) while the worker runs, each timed")
	fs.IntVar(&p.Apply, "b10-apply", 200, "B10: platforms in the file `platform apply` registers")
}

type registryResult struct {
	Params        registryParams `json:"params"`
	FillPerSecond float64        `json:"fill_puts_per_second"`
	// WorkerRSS before and after the paused accounts were registered
	// (each after the worker's registry poll caught up and a settle).
	WorkerRSSBeforeMiB float64 `json:"worker_rss_before_mib"`
	WorkerRSSAfterMiB  float64 `json:"worker_rss_after_mib"`
	// WorkerHeap is the Go heap in use (go_memstats_heap_inuse_bytes), which
	// shows what the process holds; RSS keeps pages a transient read used
	// until the runtime returns them minutes later.
	WorkerHeapBeforeMiB float64 `json:"worker_heap_before_mib"`
	WorkerHeapAfterMiB  float64 `json:"worker_heap_after_mib"`
	// Timings in milliseconds (p50 / max over the measured operations).
	AddMS        []float64 `json:"add_ms"`
	FirstSliceMS []float64 `json:"first_slice_ms"`
	RemoveMS     []float64 `json:"remove_ms"`
	ListPageMS   float64   `json:"list_page_1000_no_cursors_ms"`
	ListMS       float64   `json:"list_page_100_with_cursors_ms"`
	StatusMS     float64   `json:"status_page_100_ms"`
	ApplyMS      float64   `json:"apply_new_ms"`
	ReapplyMS    float64   `json:"apply_unchanged_ms"`
	Note         string    `json:"note,omitempty"`
}

func runRegistry(ctx context.Context, env *benchEnv, p *registryParams) (registryResult, error) {
	r := registryResult{Params: *p}
	if env.workerBin == "" {
		return r, fmt.Errorf("B10 needs the ordersync binary (-ordersync)")
	}
	cfg := sim.DefaultConfig()
	cfg.Shops = shops(p.Active)
	cfg.History, cfg.HistoryOrders, cfg.LiveRate = 10*time.Minute, 50, 0.2
	settings := platformSettings{Start: time.Now().Add(-15 * time.Minute), Interval: "1m", Overlap: "5s", Settle: "2s",
		Timeout: "10s", Concurrency: 2, RPS: 50, Burst: 10, PageSize: 100, MaxPages: 50}
	dir := env.caseDir("b10")
	s, err := startSystem(ctx, dir, systemOptions{sim: cfg, settings: settings, serverDB: "memory", childBin: env.workerBin})
	if err != nil {
		return r, err
	}
	defer s.stop()
	reg, ok := store.RegistryOf(s.store)
	if !ok {
		return r, fmt.Errorf("the store keeps no registry")
	}
	svc := &accounts.Service{Registry: reg, Engine: starter.Engine{Client: s.client}}
	if err := s.startCursors(ctx); err != nil {
		return r, err
	}
	settle := func() { time.Sleep(20 * time.Second) }
	settle()
	before, err := readMemory(s.child.Process.Pid)
	if err != nil {
		return r, err
	}
	r.WorkerRSSBeforeMiB = before.RSSMiB
	if r.WorkerHeapBeforeMiB, err = heapInUse(ctx, s.metricsURLs[0]); err != nil {
		return r, err
	}

	// The fleet: paused accounts (registered, not fetching), put straight
	// into the registry as `platform apply` of many files would.
	template := s.file.Platforms[0]
	env.logf("B10: registering %d paused accounts", p.Accounts)
	began := time.Now()
	for i := range p.Accounts {
		q := template
		q.Name = fmt.Sprintf("fleet-%06d", i)
		e, err := accounts.PlatformEntry(q, accounts.Paused)
		if err != nil {
			return r, err
		}
		if _, err := reg.Put(ctx, e, 0); err != nil {
			return r, err
		}
	}
	r.FillPerSecond = float64(p.Accounts) / time.Since(began).Seconds()
	settle()
	after, err := readMemory(s.child.Process.Pid)
	if err != nil {
		return r, err
	}
	r.WorkerRSSAfterMiB = after.RSSMiB
	if r.WorkerHeapAfterMiB, err = heapInUse(ctx, s.metricsURLs[0]); err != nil {
		return r, err
	}
	env.logf("B10: worker RSS %.0f MiB before, %.0f MiB after %d registered accounts (heap in use %.0f / %.0f MiB)",
		before.RSSMiB, after.RSSMiB, p.Accounts, r.WorkerHeapBeforeMiB, r.WorkerHeapAfterMiB)

	// Add accounts while the worker runs: the add itself, then until the
	// account's first slice completed (its onboarding latency).
	var added []string
	for i := range p.Adds {
		q := template
		q.Name = fmt.Sprintf("added-%03d", i)
		t0 := time.Now()
		if _, err := svc.AddPlatform(ctx, q, accounts.AddOptions{}); err != nil {
			return r, err
		}
		r.AddMS = append(r.AddMS, ms(time.Since(t0)))
		added = append(added, q.Name)
		for {
			st, err := s.status(ctx, q.Name)
			if err == nil && st.Counts.SlicesCompleted > 0 {
				break
			}
			if time.Since(t0) > 2*time.Minute {
				return r, fmt.Errorf("%s fetched no slice within 2 minutes of its add", q.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		r.FirstSliceMS = append(r.FirstSliceMS, ms(time.Since(t0)))
	}
	cli := func(args ...string) (float64, error) {
		cmd := exec.CommandContext(ctx, env.workerBin, args...)
		cmd.Env = append(os.Environ(), "ORDERSYNC_TEMPORAL_ADDRESS="+s.srv.FrontendAddress(),
			"ORDERSYNC_TEMPORAL_NAMESPACE="+s.namespace, "ORDERSYNC_STORE_DSN="+s.storeDSN(), "ORDERSYNC_LOG_LEVEL=error")
		cmd.Stdout = io.Discard
		var errOut strings.Builder
		cmd.Stderr = &errOut
		t0 := time.Now()
		err := cmd.Run()
		if err != nil && !strings.Contains(strings.Join(args, " "), "status") { // status exits 1 when a row fails
			return 0, fmt.Errorf("ordersync %s: %v: %s", strings.Join(args, " "), err, errOut.String())
		}
		return ms(time.Since(t0)), nil
	}
	if r.ListPageMS, err = cli("platform", "list", "--limit", "1000", "--no-cursors"); err != nil {
		return r, err
	}
	if r.ListMS, err = cli("platform", "list", "--limit", "100"); err != nil {
		return r, err
	}
	if r.StatusMS, err = cli("platform", "status", "--limit", "100"); err != nil {
		return r, err
	}
	for _, name := range added {
		t0 := time.Now()
		if _, err := svc.RemovePlatform(ctx, name, accounts.RemoveOptions{}); err != nil {
			return r, err
		}
		r.RemoveMS = append(r.RemoveMS, ms(time.Since(t0)))
	}
	// A file of new platforms, applied, then applied again unchanged.
	if p.Apply > 0 {
		var names []string
		for i := range p.Apply {
			names = append(names, fmt.Sprintf("filed-%05d", i))
		}
		raw, err := platformsYAML(settings, s.simSrv.URL, names)
		if err != nil {
			return r, err
		}
		// Every filed account reads the first simulator shop.
		raw = regexp.MustCompile(`/shops/filed-\d+`).ReplaceAll(raw, []byte("/shops/shop-0000"))
		if _, err := config.Parse(raw); err != nil {
			return r, err
		}
		path := filepath.Join(dir, "apply.yaml")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			return r, err
		}
		if r.ApplyMS, err = cli("platform", "apply", "-f", path); err != nil {
			return r, err
		}
		if r.ReapplyMS, err = cli("platform", "apply", "-f", path); err != nil {
			return r, err
		}
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func p50max(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2], s[len(s)-1]
}

func printRegistry(w io.Writer, r registryResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "B10 registry\t%d accounts registered (%d fetching)\n", r.Params.Accounts, r.Params.Active)
	fmt.Fprintf(tw, "  fill\t%.0f puts/s\n", r.FillPerSecond)
	fmt.Fprintf(tw, "  worker RSS\t%.0f MiB before, %.0f MiB after\n", r.WorkerRSSBeforeMiB, r.WorkerRSSAfterMiB)
	fmt.Fprintf(tw, "  worker Go heap in use\t%.0f MiB before, %.0f MiB after\n", r.WorkerHeapBeforeMiB, r.WorkerHeapAfterMiB)
	for _, row := range []struct {
		name string
		v    []float64
	}{{"add", r.AddMS}, {"add -> first slice", r.FirstSliceMS}, {"remove", r.RemoveMS}} {
		p50, mx := p50max(row.v)
		fmt.Fprintf(tw, "  %s\tp50 %.0f ms, max %.0f ms (%d)\n", row.name, p50, mx, len(row.v))
	}
	fmt.Fprintf(tw, "  list 1000, no cursors\t%.0f ms\n", r.ListPageMS)
	fmt.Fprintf(tw, "  list 100, with cursors\t%.0f ms\n", r.ListMS)
	fmt.Fprintf(tw, "  status 100\t%.0f ms\n", r.StatusMS)
	fmt.Fprintf(tw, "  apply %d new / unchanged\t%.0f ms / %.0f ms\n", r.Params.Apply, r.ApplyMS, r.ReapplyMS)
	_ = tw.Flush()
}

func writeRegistry(dir string, r registryResult) error {
	return writeResultFile(dir, "registry-latest.json", r)
}

// writeResultFile writes a result as indented JSON to dir/name, making
// dir if need be.
func writeResultFile(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}

// heapInUse reads the worker's Go heap in use from its /metrics, in MiB.
func heapInUse(ctx context.Context, url string) (float64, error) {
	v := -1.0
	err := scrapeSeries(ctx, url, func(name, _ string, x float64) {
		if name == "go_memstats_heap_inuse_bytes" {
			v = x / (1 << 20)
		}
	})
	if err == nil && v < 0 {
		err = fmt.Errorf("%s has no go_memstats_heap_inuse_bytes", url)
	}
	return v, err
}
