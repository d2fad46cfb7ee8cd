package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// machine describes where the numbers came from.
type machine struct {
	Uname     string  `json:"uname"`
	CPUModel  string  `json:"cpu_model"`
	NumCPU    int     `json:"nproc"`
	MemoryGiB float64 `json:"memory_gib"`
	GoVersion string  `json:"go_version"`
	GitCommit string  `json:"git_commit"`
	GitDirty  bool    `json:"git_dirty"`
	// GCPercent is the benchmark process's GOGC, the same default the
	// ordersync binary runs with (internal/gctune); both B1 phases share it.
	GCPercent int `json:"gc_percent"`
}

// report is the JSON written to bench/results.
type report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  machine   `json:"machine"`
	Params   params    `json:"params"`
	ServerDB string    `json:"server_db"`
	// Worker is the `ordersync worker` binary B2 and B4 run ("": in process).
	Worker string           `json:"worker_binary"`
	B1     []backfillResult `json:"b1_backfill,omitempty"`
	B2     *rateResult      `json:"b2_rate_limited,omitempty"`
	B3     *freshResult     `json:"b3_freshness,omitempty"`
	B4     *scaleResult     `json:"b4_scale,omitempty"`
	B4PG   *scaleResult     `json:"b4_scale_postgres,omitempty"`
	B5     *fleetResult     `json:"b5_fleet,omitempty"`
	B6     *quotaResult     `json:"b6_quota,omitempty"`
	B8     *deliveryReport  `json:"b8_delivery,omitempty"`
	env    *benchEnv
}

func newReport(p params, env *benchEnv) *report {
	return &report{Started: env.start.UTC(), Machine: describeMachine(env.gcPercent), Params: p, ServerDB: env.serverDB, Worker: env.workerBin, env: env}
}

func (r *report) finish() { r.Seconds = time.Since(r.env.start).Seconds() }

func describeMachine(gcPercent int) machine {
	m := machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), GCPercent: gcPercent}
	if out, err := exec.Command("uname", "-a").Output(); err == nil {
		m.Uname = strings.TrimSpace(string(out))
	}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		fmt.Sscanf(kb, "%f", &n)
		m.MemoryGiB = n / 1024 / 1024
	}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		m.GitCommit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain").Output(); err == nil {
		m.GitDirty = len(strings.TrimSpace(string(out))) > 0
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	name := filepath.Join(dir, r.Started.Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "results: %s (and latest.json)\n", name)
	return nil
}

func (r *report) printTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "\nordersync benchmark, %s; %d CPUs (%s), %.1f GiB, %s; server DB: %s; %.0fs in all\n\n",
		r.Started.Format(time.RFC3339), m.NumCPU, m.CPUModel, m.MemoryGiB, m.GoVersion, r.ServerDB, r.Seconds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tsetting\tresult\ttarget\tmet")
	for _, b := range r.B1 {
		span := b.Params.Settings.BackfillMaxSpan
		if span == "" {
			span = "default"
		}
		setting := fmt.Sprintf("%d orders, %d shops, interval %s, backfill_max_span %s (%d slices in all; direct loop %d windows/shop), page %d, concurrency %d",
			b.Orders, b.Params.Shops, b.Params.Settings.Interval, span, b.Slices, b.DirectWindows, b.Params.Settings.PageSize, b.Params.Settings.Concurrency)
		result := fmt.Sprintf("ordersync %.1fs (%.0f orders/s, %.1f slices/s), direct %.1fs (%.0f orders/s): ratio %.2f; CPU %.1fs vs %.1fs: %.2f",
			b.TemporalSecs, b.OrdersPerSec, b.SlicesPerSec, b.DirectSeconds, b.DirectPerSec, b.Ratio, b.TemporalCPU, b.DirectCPU, b.CPURatio)
		result += note(b.Note)
		// Issue 18: within 1.15 of the direct loop in wall time and in CPU.
		fmt.Fprintf(tw, "B1 backfill\t%s\t%s\tratio <= 1.15, CPU too\t%s\n", setting, result, yes(b.Note == "" && b.Ratio <= 1.15 && b.CPURatio <= 1.15))
	}
	if b := r.B2; b != nil {
		setting := fmt.Sprintf("%d shops, R = %g req/s (burst %d) at the simulator and in the platforms file, page %d, %s",
			b.Shops, b.LimitRPS, b.LimitBurst, b.Settings.PageSize, b.Worker)
		result := fmt.Sprintf("%.2f req/s per shop over %.0fs: %.2f x R (slowest shop %.2f); 429s: %d in the window, %d in all",
			b.AchievedRPS, b.WindowSeconds, b.Ratio, b.MinShopRatio, b.RateLimited, b.RateLimitedAll)
		result += note(b.Note)
		fmt.Fprintf(tw, "B2 rate-limited\t%s\t%s\t>= 0.9 x R, 0 429s\t%s\n", setting, result,
			yes(b.Note == "" && b.Ratio >= 0.9 && b.RateLimitedAll == 0))
	}
	if b := r.B3; b != nil {
		setting := fmt.Sprintf("%d shops, %g new orders/s each + updates, interval %s, settle %s, overlap %s, late <= %s",
			b.Shops, b.LiveRate, b.Settings.Interval, b.Settings.Settle, b.Settings.Overlap, b.Late)
		result := fmt.Sprintf("p50 %.1fs, p90 %.1fs, p99 %.1fs, max %.1fs over %d versions (%d not stored); stored %.1fs (p50) / %.1fs (p99) after the slice was due",
			b.P50, b.P90, b.P99, b.Max, b.Versions, b.NotLanded, b.DelayP50, b.DelayP99)
		result += note(b.Note)
		fmt.Fprintf(tw, "B3 freshness\t%s\t%s\tp99 <= %.0fs\t%s\n", setting, result, b.Target,
			yes(b.Note == "" && b.NotLanded == 0 && b.P99 <= b.Target && b.Versions > 0))
	}
	printScale(tw, "B4 scale", r.B4)
	printScale(tw, "B4 scale (PostgreSQL stack)", r.B4PG)
	printFleet(tw, r.B5)
	printQuota(tw, r.B6)
	if r.B8 != nil {
		r.B8.printRows(tw)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func note(s string) string {
	if s == "" {
		return ""
	}
	return " [" + s + "]"
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
