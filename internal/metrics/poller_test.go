package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/metrics"
)

// fakeClock is the poller's time in these tests: Sleep moves it on at
// once, and cancels the run once it reaches end (when set).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	end    time.Time
	cancel context.CancelFunc
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	if !c.end.IsZero() && !c.now.Before(c.end) {
		c.cancel()
	}
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// countingSource answers from its fields and notes when (on the fake clock)
// each query came. A platform without a failed count has no cursor (its
// status query fails); one without a dead-letter count has no dead-letter
// workflow (NotFound), and one in dlBroken gets an error.
type countingSource struct {
	clock *fakeClock

	mu       sync.Mutex
	failed   map[string]int64
	dead     map[string]int
	dlBroken map[string]bool
	at       []time.Time // every query
	statusN  map[string]int
	deadN    map[string]int
}

func newCountingSource(clock *fakeClock) *countingSource {
	return &countingSource{clock: clock, failed: map[string]int64{}, dead: map[string]int{}, dlBroken: map[string]bool{},
		statusN: map[string]int{}, deadN: map[string]int{}}
}

func (s *countingSource) CursorStatus(_ context.Context, p string) (api.CursorStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, s.clock.Now())
	s.statusN[p]++
	failed, ok := s.failed[p]
	if !ok {
		return api.CursorStatus{}, errors.New("no such cursor")
	}
	now := s.clock.Now()
	return api.CursorStatus{Platform: p, Start: now.Add(-time.Hour), Watermark: now.Add(-time.Minute),
		Counts: api.Counts{SlicesFailed: failed}}, nil
}

func (s *countingSource) DeadLetterCount(_ context.Context, p string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, s.clock.Now())
	s.deadN[p]++
	if s.dlBroken[p] {
		return 0, errors.New("deadline exceeded")
	}
	n, ok := s.dead[p]
	if !ok {
		return 0, serviceerror.NewNotFound("workflow not found")
	}
	return n, nil
}

func (s *countingSource) set(f func(*countingSource)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *countingSource) deadCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.deadN {
		out[k] = v
	}
	return out
}

func platformNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%04d", i)
	}
	return names
}

// A fleet whose pass cannot fit in the interval is polled continuously,
// but never faster than the budget: queries 1/rate apart, and the budget
// used rather than wasted.
func TestStatusPollerKeepsWithinQueryBudget(t *testing.T) {
	const rate = 10.0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start, end: start.Add(time.Minute), cancel: cancel}
	src := newCountingSource(clock)
	names := platformNames(200)
	for _, n := range names {
		src.failed[n] = 0
	}
	p := &metrics.StatusPoller{Source: src, Platforms: names, Interval: time.Millisecond, QueryRate: rate,
		Now: clock.Now, Sleep: clock.Sleep}
	select {
	case <-p.Start(ctx):
	case <-time.After(30 * time.Second):
		t.Fatal("the poller did not stop when its context ended")
	}

	src.mu.Lock()
	at := append([]time.Time(nil), src.at...)
	src.mu.Unlock()
	require.True(t, sort.SliceIsSorted(at, func(i, j int) bool { return at[i].Before(at[j]) }))
	for i := 1; i < len(at); i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), time.Duration(float64(time.Second)/rate),
			"queries %d and %d came %s apart: faster than %v/s", i-1, i, at[i].Sub(at[i-1]), rate)
	}
	// 60 s at 10/s: the first pass reads 200 statuses and 200 dead-letter
	// counts (400 queries, 40 s), the second 200 statuses.
	require.InDelta(t, 60*rate, len(at), 2, "the budget should be used, not left idle")
	require.Equal(t, 2, src.statusN[names[0]])
	require.Equal(t, 1, src.deadN[names[0]])
}

// A small fleet's pass is short: the next starts Interval after the last
// started, not at once.
func TestStatusPollerStartsPassesEveryInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start, end: start.Add(30 * time.Second), cancel: cancel}
	src := newCountingSource(clock)
	names := platformNames(3)
	for _, n := range names {
		src.failed[n] = 0
	}
	p := &metrics.StatusPoller{Source: src, Platforms: names, Interval: 5 * time.Second, QueryRate: 1000,
		Now: clock.Now, Sleep: clock.Sleep}
	<-p.Start(ctx)
	for _, n := range names {
		require.Equal(t, 6, src.statusN[n], "passes at 0, 5, ..., 25 s")
	}
}

// The pass duration and each platform's timestamps say how fresh the gauges are:
// 100 platforms at 10 queries/s take 20 s (the first pass also reads every
// dead-letter count).
func TestStatusPollerExportsStaleness(t *testing.T) {
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	src := newCountingSource(clock)
	names := platformNames(100)
	for _, n := range names[:99] {
		src.failed[n] = 0
	}
	rec := metrics.New()
	p := &metrics.StatusPoller{Source: src, Platforms: names, QueryRate: 10, Now: clock.Now, Sleep: clock.Sleep}
	require.NoError(t, rec.Registry().Register(p))
	p.PollOnce(context.Background())

	// Queries 0.1 s apart: names[i]'s status at 0.2*i s, its dead letters 0.1 s later.
	unix := func(d time.Duration) float64 { return float64(start.Add(d).UnixNano()) / 1e9 }
	require.InDelta(t, 19.9, scalarValue(t, rec, "ordersync_status_pass_seconds"), 1e-6)
	require.InDelta(t, unix(0), gaugeValue(t, rec, "ordersync_cursor_status_timestamp_seconds", names[0]), 1e-3)
	require.InDelta(t, unix(100*time.Millisecond), gaugeValue(t, rec, "ordersync_dead_letters_timestamp_seconds", names[0]), 1e-3)
	require.InDelta(t, unix(19600*time.Millisecond), gaugeValue(t, rec, "ordersync_cursor_status_timestamp_seconds", names[98]), 1e-3)
	// A scrape shows what the last pass learned, whenever it comes.
	clock.advance(time.Minute)
	require.InDelta(t, unix(19600*time.Millisecond), gaugeValue(t, rec, "ordersync_cursor_status_timestamp_seconds", names[98]), 1e-3)
	require.False(t, hasSeries(t, rec, "ordersync_cursor_status_timestamp_seconds", names[99]), "a cursor that never answered has no timestamp")
	require.Equal(t, map[string]float64{"cursor_status/ok": 99, "cursor_status/error": 1, "dead_letters/ok": 100},
		queryCounts(t, rec))
}

// The dead-letter count is read when the cursor counted a new failure,
// when the last read failed, and otherwise only every DeadLetterRefresh
// (and every 4 passes at most).
func TestStatusPollerReadsDeadLettersWhenTheyCanHaveChanged(t *testing.T) {
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	src := newCountingSource(clock)
	// a has two dead letters, b none (no workflow), c no cursor, d a
	// dead-letter workflow that does not answer.
	src.failed["a"], src.dead["a"] = 2, 2
	src.failed["b"] = 0
	src.failed["d"], src.dead["d"], src.dlBroken["d"] = 1, 1, true
	rec := metrics.New()
	p := &metrics.StatusPoller{Source: src, Platforms: []string{"a", "b", "c", "d"}, QueryRate: 1000,
		DeadLetterRefresh: 5 * time.Minute, Now: clock.Now, Sleep: clock.Sleep}
	require.NoError(t, rec.Registry().Register(p))
	pass := func(after time.Duration) map[string]int {
		clock.advance(after)
		p.PollOnce(context.Background())
		return src.deadCalls()
	}

	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, pass(0), "pass 1 reads every count")
	require.Equal(t, 2.0, gaugeValue(t, rec, "ordersync_dead_letters", "a"))
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 2}, pass(5*time.Second),
		"pass 2: nothing failed; only the count that could not be read is read again")

	// A new failure: the cursor counts it, and its entry is read at once.
	src.set(func(s *countingSource) { s.failed["a"], s.dead["a"] = 3, 3 })
	require.Equal(t, map[string]int{"a": 2, "b": 1, "c": 1, "d": 3}, pass(5*time.Second))
	require.Equal(t, 3.0, gaugeValue(t, rec, "ordersync_dead_letters", "a"))

	// An operator discards a's entries: the cursor does not see it, so the
	// count shows it at the next refresh.
	src.set(func(s *countingSource) { s.dead["a"], s.dlBroken["d"] = 0, false })
	require.Equal(t, map[string]int{"a": 2, "b": 1, "c": 1, "d": 4}, pass(5*time.Second))
	require.Equal(t, 3.0, gaugeValue(t, rec, "ordersync_dead_letters", "a"))
	require.Equal(t, 1.0, gaugeValue(t, rec, "ordersync_dead_letters", "d"))
	// Pass 5, 6 minutes on: b and c were read 4 passes ago, a 2 and d 1.
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 2, "d": 4}, pass(6*time.Minute))
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 2, "d": 4}, pass(time.Second))
	// Pass 7: a's read 4 passes ago and more than 5 minutes: refreshed.
	require.Equal(t, map[string]int{"a": 3, "b": 2, "c": 2, "d": 4}, pass(time.Second))
	require.Equal(t, 0.0, gaugeValue(t, rec, "ordersync_dead_letters", "a"))

	// The cursor of c appears and has failed: its count is read although
	// the last read is recent (d's is due: 4 passes and 6 minutes).
	src.set(func(s *countingSource) { s.failed["c"], s.dead["c"] = 1, 1 })
	require.Equal(t, map[string]int{"a": 3, "b": 2, "c": 3, "d": 5}, pass(time.Second))
	require.Equal(t, 1.0, gaugeValue(t, rec, "ordersync_dead_letters", "c"))
}

// TemporalStatus reads the dead-letter status query (a few counts), and
// the list from a dead-letter workflow too old to know that query.
func TestTemporalStatusCountsDeadLetters(t *testing.T) {
	entries := []api.DeadLetterEntry{{SliceID: "x"}, {SliceID: "y"}, {SliceID: "z"}}
	for _, tc := range []struct {
		name       string
		status     error // the status query's error; nil answers
		want       int
		wantErr    string
		wantQuerys []string
	}{
		{name: "status query", want: 3, wantQuerys: []string{api.QueryDeadLetterStatus}},
		{name: "old workflow: the list", status: serviceerror.NewQueryFailed("unknown queryType status. KnownQueryTypes=[list]"),
			want: 3, wantQuerys: []string{api.QueryDeadLetterStatus, api.QueryDeadLetterList}},
		{name: "not found", status: serviceerror.NewNotFound("workflow not found"), wantErr: "workflow not found",
			wantQuerys: []string{api.QueryDeadLetterStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &queryClient{answers: map[string]any{
				api.QueryDeadLetterStatus: api.DeadLetterStatus{Platform: "acme", Entries: len(entries)},
				api.QueryDeadLetterList:   entries,
			}, errs: map[string]error{api.QueryDeadLetterStatus: tc.status}}
			n, err := metrics.TemporalStatus{Client: c}.DeadLetterCount(context.Background(), "acme")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, n)
			}
			require.Equal(t, tc.wantQuerys, c.asked)
			for _, id := range c.ids {
				require.Equal(t, api.DeadLetterWorkflowID("acme"), id)
			}
		})
	}
}

// queryClient answers QueryWorkflow from maps; every other method of the
// interface is unused here (and would panic).
type queryClient struct {
	client.Client
	answers map[string]any
	errs    map[string]error
	asked   []string
	ids     []string
}

func (c *queryClient) QueryWorkflow(_ context.Context, id, _ string, query string, _ ...any) (converter.EncodedValue, error) {
	c.asked, c.ids = append(c.asked, query), append(c.ids, id)
	if err := c.errs[query]; err != nil {
		return nil, err
	}
	b, err := json.Marshal(c.answers[query])
	if err != nil {
		return nil, err
	}
	return jsonValue(b), nil
}

type jsonValue []byte

func (v jsonValue) HasValue() bool         { return len(v) > 0 }
func (v jsonValue) Get(valuePtr any) error { return json.Unmarshal(v, valuePtr) }

func scalarValue(t *testing.T, rec *metrics.Recorder, name string) float64 {
	t.Helper()
	families, err := rec.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

func hasSeries(t *testing.T, rec *metrics.Recorder, name, platform string) bool {
	t.Helper()
	families, err := rec.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == name && l.GetName() == "platform" && l.GetValue() == platform {
					return true
				}
			}
		}
	}
	return false
}

// queryCounts is ordersync_status_queries_total by "query/result".
func queryCounts(t *testing.T, rec *metrics.Recorder) map[string]float64 {
	t.Helper()
	families, err := rec.Registry().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "ordersync_status_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["query"]+"/"+labels["result"]] = m.GetCounter().GetValue()
		}
	}
	return out
}

// With List the poller follows the registry: an account added at runtime
// gets gauges at the next pass, a removed one loses them, and a failed
// list keeps the last names.
func TestStatusPollerFollowsTheListedPlatforms(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	src := newCountingSource(clock)
	for _, n := range []string{"a", "b", "c"} {
		src.failed[n] = 0
	}
	listed := []string{"a", "b"}
	var listErr error
	rec := metrics.New()
	p := &metrics.StatusPoller{Source: src, QueryRate: 1000, Now: clock.Now, Sleep: clock.Sleep,
		List: func(context.Context) (metrics.Listing, error) { return metrics.Listing{Names: listed}, listErr }}
	require.NoError(t, rec.Registry().Register(p))
	series := func(name string) bool { return hasSeries(t, rec, "ordersync_cursor_status_timestamp_seconds", name) }

	p.PollOnce(context.Background())
	require.True(t, series("a"))
	require.True(t, series("b"))
	require.False(t, series("c"), "not registered yet")

	listed = []string{"b", "c"}
	p.PollOnce(context.Background())
	require.False(t, series("a"), "removed: its gauges go")
	require.True(t, series("c"), "added at runtime: its gauges come without a restart")

	listErr = errors.New("store down")
	listed = nil
	p.PollOnce(context.Background())
	require.True(t, series("b"))
	require.True(t, series("c"), "a failed list keeps the last names")
}

// Accounts paused in the registry are counted, never queried: a fleet's
// 80,000 paused accounts would otherwise take the whole query budget (and
// an action each on Temporal Cloud) every pass. Paused, an account's
// series go; resumed, they come back at the next pass.
func TestStatusPollerCountsRegistryPausedAccountsWithoutQueries(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	src := newCountingSource(clock)
	listing := metrics.Listing{Names: []string{"busy"}, Paused: 2}
	for _, n := range []string{"busy", "quiet-1", "quiet-2"} {
		src.failed[n] = 0
	}
	rec := metrics.New()
	p := &metrics.StatusPoller{Source: src, QueryRate: 1000, Now: clock.Now, Sleep: clock.Sleep,
		List: func(context.Context) (metrics.Listing, error) { return listing, nil }}
	require.NoError(t, rec.Registry().Register(p))

	for range 3 {
		p.PollOnce(context.Background())
	}
	require.Equal(t, 3, src.statusN["busy"])
	require.Zero(t, src.statusN["quiet-1"]+src.statusN["quiet-2"], "paused accounts are not queried")
	require.Zero(t, src.deadN["quiet-1"]+src.deadN["quiet-2"])
	require.NoError(t, testutil.GatherAndCompare(rec.Registry(), strings.NewReader(`
# HELP ordersync_registry_paused_platforms Accounts of this process's task queues paused in the registry: not polled, so they have no per-platform cursor series until resumed.
# TYPE ordersync_registry_paused_platforms gauge
ordersync_registry_paused_platforms 2
`), "ordersync_registry_paused_platforms"))

	listing = metrics.Listing{Names: []string{"busy", "quiet-1"}, Paused: 1}
	p.PollOnce(context.Background())
	require.Equal(t, 1, src.statusN["quiet-1"], "resumed: polled again")
	require.True(t, hasSeries(t, rec, "ordersync_cursor_status_timestamp_seconds", "quiet-1"))
	listing = metrics.Listing{Names: []string{"quiet-1"}, Paused: 2}
	p.PollOnce(context.Background())
	require.False(t, hasSeries(t, rec, "ordersync_cursor_status_timestamp_seconds", "busy"), "paused: its series go")
}
