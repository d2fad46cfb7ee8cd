package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/metrics"
)

// fakeStatus answers from maps; a missing cursor is an error, a missing
// dead-letter workflow is NotFound (it starts with its first entry).
type fakeStatus struct {
	status map[string]api.CursorStatus
	dlq    map[string][]api.DeadLetterEntry
}

func (f fakeStatus) CursorStatus(_ context.Context, p string) (api.CursorStatus, error) {
	st, ok := f.status[p]
	if !ok {
		return st, errors.New("no such cursor")
	}
	return st, nil
}

func (f fakeStatus) DeadLetterCount(_ context.Context, p string) (int, error) {
	list, ok := f.dlq[p]
	if !ok {
		return 0, serviceerror.NewNotFound("workflow not found")
	}
	return len(list), nil
}

func TestRecorderCountsAndServes(t *testing.T) {
	rec := metrics.New()
	rec.Page("acme", 3, 1, 0)
	rec.Page("acme", 2, 0, 5)
	rec.FetchError("acme", metrics.ClassRateLimited)
	rec.FetchError("acme", metrics.ClassTransient)
	rec.Request("acme")
	rec.Request("acme")
	rec.NotStored("acme", 0, 0)
	rec.NotStored("acme", 2, 1)
	rec.NotStored("quiet", 0, 0)
	rec.Request("quiet")
	var nilRec *metrics.Recorder
	nilRec.Page("acme", 1, 1, 1) // nil-safe: activities without metrics
	nilRec.FetchError("acme", metrics.ClassStore)
	nilRec.NotStored("acme", 1, 1)
	nilRec.Request("acme")

	srv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	defer srv.Close()
	body := scrape(t, srv.URL())
	for _, line := range []string{
		`ordersync_pages_total{platform="acme"} 2`,
		`ordersync_orders_upserted_total{platform="acme",result="inserted"} 5`,
		`ordersync_orders_upserted_total{platform="acme",result="updated"} 1`,
		`ordersync_orders_upserted_total{platform="acme",result="unchanged"} 5`,
		`ordersync_api_errors_total{class="rate_limited",platform="acme"} 1`,
		`ordersync_api_errors_total{class="transient",platform="acme"} 1`,
		`ordersync_rate_limited_total{platform="acme"} 1`,
		`ordersync_requests_total{platform="acme"} 2`,
		`ordersync_orders_not_stored_total{platform="acme",reason="rejected"} 2`,
		`ordersync_orders_not_stored_total{platform="acme",reason="future_stamped"} 1`,
		`ordersync_orders_not_stored_total{platform="quiet",reason="future_stamped"} 0`,
		`ordersync_rate_limited_total{platform="quiet"} 0`,
		`go_goroutines `,
	} {
		require.Contains(t, body, line)
	}
}

func TestStatusPollerExportsCursorAndDeadLetters(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	src := fakeStatus{
		status: map[string]api.CursorStatus{
			"acme": {
				Platform:  "acme",
				Start:     now.Add(-10 * time.Hour),
				Watermark: now.Add(-90 * time.Minute),
				CaughtUp:  true,
				Settings:  api.Settings{RateLimit: api.RateLimit{RPS: 2.5, Burst: 4}},
				InFlight:  []api.SliceView{{ID: "a"}, {ID: "b"}},
				Queued:    []api.SliceView{{ID: "c"}},
				Counts:    api.Counts{SlicesCompleted: 40, SlicesFailed: 2, SlicesSplit: 1, LateArrivals: 7},
				Paused:    true, BreakerOpen: true,
			},
		},
		dlq: map[string][]api.DeadLetterEntry{"acme": {{SliceID: "x"}, {SliceID: "y"}}},
	}
	rec := metrics.New()
	p := &metrics.StatusPoller{Source: src, Platforms: []string{"acme", "ghost"}, Now: func() time.Time { return now }}
	require.NoError(t, rec.Registry().Register(p))
	p.PollOnce(context.Background())

	want := `
# HELP ordersync_breaker_open 1 while the circuit breaker holds the cursor.
# TYPE ordersync_breaker_open gauge
ordersync_breaker_open{platform="acme"} 1
# HELP ordersync_backfill_progress_ratio How far the watermark has come from the backfill start to now, 0 to 1.
# TYPE ordersync_backfill_progress_ratio gauge
ordersync_backfill_progress_ratio{platform="acme"} 0.85
# HELP ordersync_caught_up 1 once the cursor's backfill reached the present (lag alerts apply from then on).
# TYPE ordersync_caught_up gauge
ordersync_caught_up{platform="acme"} 1
# HELP ordersync_cursor_status_up 1 if the last status query of the cursor succeeded; the other cursor series are from the last success.
# TYPE ordersync_cursor_status_up gauge
ordersync_cursor_status_up{platform="acme"} 1
ordersync_cursor_status_up{platform="ghost"} 0
# HELP ordersync_dead_letters Slices in the dead-letter workflow now.
# TYPE ordersync_dead_letters gauge
ordersync_dead_letters{platform="acme"} 2
ordersync_dead_letters{platform="ghost"} 0
# HELP ordersync_inflight_slices Slices running now (regular, reprocess and re-sweep).
# TYPE ordersync_inflight_slices gauge
ordersync_inflight_slices{platform="acme"} 2
# HELP ordersync_late_arrivals_total Order versions first stored by a re-sweep: shown by the platform later than the overlap allowed for.
# TYPE ordersync_late_arrivals_total counter
ordersync_late_arrivals_total{platform="acme"} 7
# HELP ordersync_rate_limit_rps The platform's rate_limit in requests per second, as the cursor runs with it now (across all workers).
# TYPE ordersync_rate_limit_rps gauge
ordersync_rate_limit_rps{platform="acme"} 2.5
# HELP ordersync_slices_total Slices finished, by outcome (completed, failed, split); the cursor's running total.
# TYPE ordersync_slices_total counter
ordersync_slices_total{outcome="completed",platform="acme"} 40
ordersync_slices_total{outcome="failed",platform="acme"} 2
ordersync_slices_total{outcome="split",platform="acme"} 1
# HELP ordersync_watermark_lag_seconds How far the watermark trails now: every order updated before now minus this is stored or dead-lettered.
# TYPE ordersync_watermark_lag_seconds gauge
ordersync_watermark_lag_seconds{platform="acme"} 5400
`
	require.NoError(t, testutil.GatherAndCompare(rec.Registry(), strings.NewReader(want),
		"ordersync_breaker_open", "ordersync_cursor_status_up", "ordersync_dead_letters", "ordersync_inflight_slices",
		"ordersync_late_arrivals_total", "ordersync_slices_total", "ordersync_watermark_lag_seconds",
		"ordersync_backfill_progress_ratio", "ordersync_caught_up", "ordersync_rate_limit_rps"))

	// A failed poll keeps the last good values and says so.
	delete(src.status, "acme")
	p.PollOnce(context.Background())
	require.Equal(t, 0.0, gaugeValue(t, rec, "ordersync_cursor_status_up", "acme"))
	require.Equal(t, 5400.0, gaugeValue(t, rec, "ordersync_watermark_lag_seconds", "acme"))
}

func TestTemporalHandlerSharesTheRegistry(t *testing.T) {
	rec := metrics.New()
	h, err := rec.TemporalHandler()
	require.NoError(t, err)
	h.WithTags(map[string]string{"task_queue": "orders-acme"}).Counter("temporal_request").Inc(3)
	h.Timer("temporal_activity_execution_latency").Record(250 * time.Millisecond)
	srv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	defer srv.Close()
	body := scrape(t, srv.URL())
	require.Contains(t, body, `temporal_request_total{task_queue="orders-acme"} 3`)
	require.Contains(t, body, `temporal_activity_execution_latency_seconds_count 1`)
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func gaugeValue(t *testing.T, rec *metrics.Recorder, name, platform string) float64 {
	t.Helper()
	families, err := rec.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "platform" && l.GetValue() == platform {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{platform=%q}", name, platform)
	return 0
}
