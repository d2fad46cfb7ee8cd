package metrics

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync/api"
)

// DefaultPollInterval is the shortest time between two passes of
// StatusPoller over its platforms: every few seconds is plenty for gauges
// scraped every 15 s or so. A pass over a large fleet takes longer (see
// DefaultQueryRate), and the next one then starts when it ends.
const DefaultPollInterval = 5 * time.Second

// DefaultQueryRate is the poller's query budget per process, in queries per
// second (ORDERSYNC_METRICS_QUERY_RATE). Each query is a round trip through
// the Temporal server and a query task on the worker that holds the
// workflow (a replay of its history when it is not cached), and every
// worker process polls every platform it serves, so the budget multiplies
// with the processes. 20/s keeps the poller small next to the work it
// watches (1,000 platforms at 60 s intervals run about 17 slices/s, each
// several workflow tasks and activities), platforms up to 100 still
// refresh every DefaultPollInterval, and a fleet of 1,000 on one queue
// refreshes about once a minute, well inside the lag alerts' windows
// (minutes).
const DefaultQueryRate = 20.0

// DefaultDeadLetterRefresh is how old a platform's dead-letter count may
// grow before it is read again although the cursor saw no new failure: it
// bounds how long a discard or a successful reprocess (which the cursor
// does not see) takes to show. See StatusPoller.
const DefaultDeadLetterRefresh = 5 * time.Minute

// deadLetterRefreshPasses is the fewest passes between two such re-reads,
// so that for a fleet whose passes are slow the re-reads cost at most a
// quarter of the status queries instead of doubling them.
const deadLetterRefreshPasses = 4

// StatusSource answers the cursor's status query and the dead-letter count.
type StatusSource interface {
	CursorStatus(ctx context.Context, platform string) (api.CursorStatus, error)
	// DeadLetterCount is the number of slices in the platform's dead-letter
	// workflow; a serviceerror.NotFound means it never held any (it starts
	// with its first entry).
	DeadLetterCount(ctx context.Context, platform string) (int, error)
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

// DeadLetterCount queries deadletter/<platform> for its status, whose
// answer is a few counts where the list carries every entry with its error.
// A dead-letter workflow run by a worker older than the status query
// answers its list instead.
func (s TemporalStatus) DeadLetterCount(ctx context.Context, platform string) (int, error) {
	var st api.DeadLetterStatus
	v, err := s.Client.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterStatus)
	if err == nil {
		err = v.Get(&st)
		return st.Entries, err
	}
	var failed *serviceerror.QueryFailed
	if !errors.As(err, &failed) || !strings.Contains(failed.Error(), "unknown queryType") {
		return 0, err
	}
	var list []api.DeadLetterEntry
	if v, err = s.Client.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterList); err == nil {
		err = v.Get(&list)
	}
	return len(list), err
}

// snapshot is what the polls learned about a platform.
type snapshot struct {
	status   api.CursorStatus
	statusOK bool
	polledAt time.Time // the last status answer
	// deadLetters is the count at deadLettersAt, the last answer of the
	// dead-letter workflow, when the cursor had failedAt slices failed
	// (failedKnown: the status query answered in that pass).
	deadLetters    int
	deadLettersAt  time.Time
	failedAt       int64
	failedKnown    bool
	deadLetterPass int64 // the pass that last read the dead letters
	// deadLettersStale is set when the last read failed: read again.
	deadLettersStale bool
}

// StatusPoller keeps the latest status of each platform and exports it as
// a prometheus.Collector. Polling apart from scraping keeps a scrape fast
// and bounded even when Temporal is slow, and keeps the query load
// independent of how many scrapers there are.
//
// Its queries never exceed QueryRate per second: a pass over the platforms
// takes max(Interval, queries/QueryRate), so a large fleet's gauges refresh
// more slowly instead of loading the cluster, and the timestamp series say
// how fresh they are. The dead-letter workflow is not asked every pass: a slice
// reaches it only by failing, and the cursor counts every failed child
// (Counts.SlicesFailed) after the entry was recorded, so the count is read
// again when that number moved, and otherwise every DeadLetterRefresh (at
// most every deadLetterRefreshPasses passes) for what the cursor does not
// see: discards, reprocess successes and splits.
type StatusPoller struct {
	Source    StatusSource
	Platforms []string
	// List, when set, names the platforms at the start of every pass
	// instead of Platforms: the accounts registered now (added at runtime
	// included; removed ones drop out of the gauges). A failed list keeps
	// the previous pass's names.
	List func(ctx context.Context) (Listing, error)
	// Interval is the shortest time between two passes (default
	// DefaultPollInterval).
	Interval time.Duration
	// QueryRate is the most queries per second (default DefaultQueryRate).
	QueryRate float64
	// DeadLetterRefresh is how old a dead-letter count may grow when the
	// cursor saw no failure (default DefaultDeadLetterRefresh).
	DeadLetterRefresh time.Duration
	Logger            *slog.Logger
	// Now is the clock for the lag, the timestamps and the pacing (default
	// time.Now), and Sleep waits on it (default a timer): a test gives both
	// to run passes on a fake clock.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	limiterOnce sync.Once
	limiter     *rate.Limiter

	mu       sync.Mutex
	snaps    map[string]snapshot
	paused   int           // the last listing's Paused
	passes   int64         // passes started
	lastPass time.Duration // how long the last complete pass took
	queries  map[queryKey]int64
}

// Listing is what a StatusPoller's List found registered. Accounts paused
// in the registry are counted, not polled: a fleet keeps most of its
// accounts paused (B13: 80,000 of 100,000), and polling each of them every
// pass spent the query budget on cursors that do not move (a pass over
// 100,000 at 20 queries a second took 83 minutes, so the active accounts'
// lag was that old) and, on Temporal Cloud, an action per query.
type Listing struct {
	Names  []string // polled every pass
	Paused int      // paused in the registry: counted only
}

// queryKey labels ordersync_status_queries_total.
type queryKey struct{ query, result string }

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
	// Timestamps rather than ages, as Prometheus advises: a scrape shows
	// what the last pass learned, and time() - x is the age in any query.
	descStatusTime = prometheus.NewDesc(Namespace+"_cursor_status_timestamp_seconds",
		"When the cursor's status last answered (Unix time): the cursor series, lag included, are as of then.",
		[]string{"platform"}, nil)
	descDeadLettersTime = prometheus.NewDesc(Namespace+"_dead_letters_timestamp_seconds",
		"When the dead-letter count was last read (Unix time); new failures are read within a pass of the cursor counting them.",
		[]string{"platform"}, nil)
	descPass = prometheus.NewDesc(Namespace+"_status_pass_seconds",
		"How long the last complete pass over this process's platforms took, queries paced by ORDERSYNC_METRICS_QUERY_RATE; the status series refresh every max(this, 5s).",
		nil, nil)
	descRegistryPaused = prometheus.NewDesc(Namespace+"_registry_paused_platforms",
		"Accounts of this process's task queues paused in the registry: not polled, so they have no per-platform cursor series until resumed.",
		nil, nil)
	descQueries = prometheus.NewDesc(Namespace+"_status_queries_total",
		"Queries the status poller sent, by query (cursor_status, dead_letters) and result (ok, error).",
		[]string{"query", "result"}, nil)
)

// Describe implements prometheus.Collector.
func (p *StatusPoller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descInFlight, descQueued, descSlices, descLate, descDeadLetters, descPaused, descBreaker, descCaughtUp, descProgress, descRateLimit, descUp,
		descStatusTime, descDeadLettersTime, descPass, descRegistryPaused, descQueries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the latest snapshots.
func (p *StatusPoller) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastPass > 0 {
		ch <- prometheus.MustNewConstMetric(descPass, prometheus.GaugeValue, p.lastPass.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(descRegistryPaused, prometheus.GaugeValue, float64(p.paused))
	for k, n := range p.queries {
		ch <- prometheus.MustNewConstMetric(descQueries, prometheus.CounterValue, float64(n), k.query, k.result)
	}
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
		if !s.deadLettersAt.IsZero() {
			gauge(descDeadLettersTime, unixSeconds(s.deadLettersAt))
		}
		if s.status.Platform == "" {
			continue // never answered
		}
		gauge(descStatusTime, unixSeconds(s.polledAt))
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

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
