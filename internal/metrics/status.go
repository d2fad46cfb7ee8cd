package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
)

// DefaultPollInterval is how often StatusPoller queries the workflows. A
// query is cheap but runs a workflow task on a worker; every few seconds is
// plenty for gauges scraped every 15 s or so.
const DefaultPollInterval = 5 * time.Second

// StatusSource answers the cursor's status query and the dead-letter list.
type StatusSource interface {
	CursorStatus(ctx context.Context, platform string) (api.CursorStatus, error)
	DeadLetters(ctx context.Context, platform string) ([]api.DeadLetterEntry, error)
}

// TemporalStatus queries the workflows through a Temporal client.
type TemporalStatus struct{ Client client.Client }

// CursorStatus queries cursor/<platform> for api.QueryStatus.
func (s TemporalStatus) CursorStatus(ctx context.Context, platform string) (api.CursorStatus, error) {
	var st api.CursorStatus
	v, err := s.Client.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// DeadLetters queries deadletter/<platform> for its list.
func (s TemporalStatus) DeadLetters(ctx context.Context, platform string) ([]api.DeadLetterEntry, error) {
	var list []api.DeadLetterEntry
	v, err := s.Client.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterList)
	if err == nil {
		err = v.Get(&list)
	}
	return list, err
}

// snapshot is what one poll learned about a platform.
type snapshot struct {
	status      api.CursorStatus
	statusOK    bool
	deadLetters int
	polledAt    time.Time
}

// StatusPoller keeps the latest status of each platform and exports it as
// a prometheus.Collector. Polling apart from scraping keeps a scrape fast
// and bounded even when Temporal is slow, and keeps the query load
// independent of how many scrapers there are.
type StatusPoller struct {
	Source    StatusSource
	Platforms []string
	Interval  time.Duration
	Logger    *slog.Logger
	// Now is the clock for the lag (default time.Now).
	Now func() time.Time

	mu    sync.Mutex
	snaps map[string]snapshot
}

var (
	descLag = prometheus.NewDesc(Namespace+"_watermark_lag_seconds",
		"How far the watermark trails now: every order updated before now minus this is stored or dead-lettered.",
		[]string{"platform"}, nil)
	descInFlight = prometheus.NewDesc(Namespace+"_inflight_slices",
		"Slices running now (regular, reprocess and re-sweep).", []string{"platform"}, nil)
	descQueued = prometheus.NewDesc(Namespace+"_queued_slices",
		"Slices waiting to start (split halves, retries, reprocess requests).", []string{"platform"}, nil)
	descSlices = prometheus.NewDesc(Namespace+"_slices_total",
		"Slices finished, by outcome (completed, failed, split); the cursor's running total.",
		[]string{"platform", "outcome"}, nil)
	descLate = prometheus.NewDesc(Namespace+"_late_arrivals_total",
		"Order versions first stored by a re-sweep: shown by the platform later than the overlap allowed for.",
		[]string{"platform"}, nil)
	descDeadLetters = prometheus.NewDesc(Namespace+"_dead_letters",
		"Slices in the dead-letter workflow now.", []string{"platform"}, nil)
	descPaused = prometheus.NewDesc(Namespace+"_cursor_paused",
		"1 while the cursor is paused (by an operator or the circuit breaker).", []string{"platform"}, nil)
	descBreaker = prometheus.NewDesc(Namespace+"_breaker_open",
		"1 while the circuit breaker holds the cursor.", []string{"platform"}, nil)
	descCaughtUp = prometheus.NewDesc(Namespace+"_caught_up",
		"1 once the cursor's backfill reached the present (lag alerts apply from then on).", []string{"platform"}, nil)
	descProgress = prometheus.NewDesc(Namespace+"_backfill_progress_ratio",
		"How far the watermark has come from the backfill start to now, 0 to 1.", []string{"platform"}, nil)
	descRateLimit = prometheus.NewDesc(Namespace+"_rate_limit_rps",
		"The platform's rate_limit in requests per second, as the cursor runs with it now (across all workers).", []string{"platform"}, nil)
	descUp = prometheus.NewDesc(Namespace+"_cursor_status_up",
		"1 if the last status query of the cursor succeeded; the other cursor series are from the last success.",
		[]string{"platform"}, nil)
)

// Describe implements prometheus.Collector.
func (p *StatusPoller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descInFlight, descQueued, descSlices, descLate, descDeadLetters, descPaused, descBreaker, descCaughtUp, descProgress, descRateLimit, descUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the latest snapshots.
func (p *StatusPoller) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range p.Platforms {
		s, ok := p.snaps[name]
		if !ok {
			continue // not polled yet: no data rather than made-up zeros
		}
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v int64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
		}
		gauge(descUp, boolValue(s.statusOK))
		gauge(descDeadLetters, float64(s.deadLetters))
		if s.status.Platform == "" {
			continue // never answered
		}
		st := s.status
		// Lag against the poller's clock, not the status's AsOf: a cursor
		// asleep outside its work window last read its clock hours ago, and
		// the data really is that much older.
		gauge(descLag, max(0, s.polledAt.Sub(st.Watermark).Seconds()))
		gauge(descInFlight, float64(len(st.InFlight)))
		gauge(descQueued, float64(len(st.Queued)))
		gauge(descPaused, boolValue(st.Paused))
		gauge(descBreaker, boolValue(st.BreakerOpen))
		gauge(descCaughtUp, boolValue(st.CaughtUp))
		gauge(descProgress, backfillProgress(st, s.polledAt))
		gauge(descRateLimit, st.Settings.RateLimit.RPS)
		counter(descSlices, st.Counts.SlicesCompleted, api.SliceCompleted)
		counter(descSlices, st.Counts.SlicesFailed, api.SliceFailed)
		counter(descSlices, st.Counts.SlicesSplit, api.SliceSplit)
		counter(descLate, st.Counts.LateArrivals)
	}
}

// backfillProgress is the share of [start, now) below the watermark, as
// `ordersync platform status` draws it.
func backfillProgress(st api.CursorStatus, now time.Time) float64 {
	total := now.Sub(st.Start)
	if total <= 0 {
		return 1
	}
	return min(1, max(0, st.Watermark.Sub(st.Start).Seconds()/total.Seconds()))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
