package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/ordersync/ordersync/internal/metrics"
)

// Workers run with their metrics on, as in production (the default
// ORDERSYNC_METRICS_ADDRESS): that includes the status poller, which
// queries every served platform's cursor within its query budget
// (ORDERSYNC_METRICS_QUERY_RATE). Each worker process gets its own port,
// so several on one machine (B4PG) do not collide; the cases read the
// pollers' series from them.

// inProcessMetrics gives the in-process worker a production worker's
// metrics (its status poller among them), served on a free port.
func (s *system) inProcessMetrics() (*metrics.Recorder, error) {
	rec := metrics.New()
	srv, err := rec.Serve("127.0.0.1:0", nil)
	if err != nil {
		return nil, err
	}
	s.metricsServers = append(s.metricsServers, srv)
	s.metricsURLs = append(s.metricsURLs, srv.URL())
	return rec, nil
}

// waitMetrics waits until a worker process serves url: it is up, and its
// metrics port was free (one taken makes the worker exit at once).
func waitMetrics(url, logPath string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("worker metrics at %s did not answer within %s (see %s)", url, timeout, logPath)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pollerStats is what the workers' status pollers did over a case's
// measurement window, from their /metrics.
type pollerStats struct {
	Processes int `json:"processes"`
	// QueryRateBudget is each process's ORDERSYNC_METRICS_QUERY_RATE (the
	// default unless the environment sets it).
	QueryRateBudget float64 `json:"query_rate_budget_per_process"`
	// QueriesPerSecond are the pollers' queries over the window, all
	// processes together; Errors those that failed.
	QueriesPerSecond float64 `json:"queries_per_second"`
	Errors           float64 `json:"query_errors"`
	// PassSecondsMax is the longest last pass of a process at the window's
	// end: each platform's status series are refreshed about that often.
	PassSecondsMax float64 `json:"pass_seconds_max"`
	// StatusAgeMaxSeconds is the oldest cursor status a process exported
	// at the window's end.
	StatusAgeMaxSeconds float64 `json:"status_age_max_seconds"`
	Note                string  `json:"note,omitempty"`

	queriesAtStart float64
	errorsAtStart  float64
	started        time.Time
}

// pollerScrape is one scrape's poller series, summed or maxed over the
// processes.
type pollerScrape struct {
	queries, errors, passMax, ageMax float64
}

func (s *system) scrapePollers(ctx context.Context) (pollerScrape, error) {
	var out pollerScrape
	for _, url := range s.metricsURLs {
		if err := scrapePoller(ctx, url, &out); err != nil {
			return out, fmt.Errorf("scrape %s: %w", url, err)
		}
	}
	return out, nil
}

// startPollerStats notes the pollers' query counts at the window's start.
func (s *system) startPollerStats(ctx context.Context) *pollerStats {
	ps := &pollerStats{Processes: len(s.metricsURLs), QueryRateBudget: metrics.DefaultQueryRate, started: time.Now()}
	if v, err := strconv.ParseFloat(os.Getenv("ORDERSYNC_METRICS_QUERY_RATE"), 64); err == nil {
		ps.QueryRateBudget = v
	}
	sc, err := s.scrapePollers(ctx)
	if err != nil {
		ps.Note = err.Error()
	}
	ps.queriesAtStart, ps.errorsAtStart = sc.queries, sc.errors
	return ps
}

// end fills in the window's numbers.
func (ps *pollerStats) end(ctx context.Context, s *system) {
	sc, err := s.scrapePollers(ctx)
	if err != nil {
		ps.Note = joinNote(ps.Note, err.Error())
		return
	}
	secs := time.Since(ps.started).Seconds()
	ps.QueriesPerSecond = (sc.queries - ps.queriesAtStart) / secs
	ps.Errors = sc.errors - ps.errorsAtStart
	ps.PassSecondsMax, ps.StatusAgeMaxSeconds = sc.passMax, sc.ageMax
}

func scrapePoller(ctx context.Context, url string, out *pollerScrape) error {
	return scrapeSeries(ctx, url, func(name, labels string, v float64) {
		switch name {
		case "ordersync_status_queries_total":
			out.queries += v
			if labelValue(labels, "result") == "error" {
				out.errors += v
			}
		case "ordersync_status_pass_seconds":
			out.passMax = max(out.passMax, v)
		case "ordersync_cursor_status_timestamp_seconds":
			out.ageMax = max(out.ageMax, float64(time.Now().UnixNano())/1e9-v)
		}
	})
}

// summary is the report's words for ps ("" without one).
func (ps *pollerStats) summary() string {
	if ps == nil {
		return ""
	}
	// The pass gauge is the last finished pass: 0 when none finished yet
	// (a large fleet's first pass can outlast the window).
	pass := "no pass finished yet"
	if ps.PassSecondsMax > 0 {
		pass = fmt.Sprintf("last pass up to %.0fs", ps.PassSecondsMax)
	}
	return fmt.Sprintf("; status pollers (%d processes): %.1f queries/s in all (budget %.0f/s each), %s, oldest status %.0fs",
		ps.Processes, ps.QueriesPerSecond, ps.QueryRateBudget, pass, ps.StatusAgeMaxSeconds) + note(ps.Note)
}
