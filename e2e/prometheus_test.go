package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/promtest"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

const (
	rulesFile     = "../deploy/prometheus/rules.yml"
	dashboardFile = "../deploy/grafana/dashboards/ordersync.json"
)

// A platform that works (and meets 429s now and then) and one whose token is
// wrong: its slices fail with a 401, are dead-lettered, and after two in a
// row the breaker opens.
const promPlatforms = `
default:
  kind: sim
  start: -30m
  interval: 5m
  overlap: 30s
  settle: 1s
  timeout: 5s
  retries: 5
  retry_interval: 200ms
  max_retry_interval: 1s
  concurrency: 2
  rate_limit: {rps: 100, burst: 10}
  page_size: 10
platforms:
  p-good:
    endpoint: "{{SIM}}/shops/good"
    credentials: {env: ORDERSYNC_E2E_P_GOOD_TOKEN}
  p-bad:
    endpoint: "{{SIM}}/shops/good"
    credentials: {env: ORDERSYNC_E2E_P_BAD_TOKEN}
    breaker_failures: 2
`

// testRules is rules.yml made quick to fire: no `for` waits, and the
// thresholds below. Each replacement must match exactly once, so editing a
// rule without this table fails loudly instead of testing nothing.
func testRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	rules := regexp.MustCompile(`(?m)^\s+for: \S+\n`).ReplaceAllString(string(b), "")
	for _, r := range []struct{ old, new, why string }{
		{"ordersync_watermark_lag_seconds) > 3600", "ordersync_watermark_lag_seconds) > 1", "a caught-up cursor lags at least settle (1s)"},
		{`poller_type=~"workflow_task|activity_task"}[5m]) > 0`, `poller_type=~"workflow_task|activity_task"}[5s]) > 0`, "no pollers for 5s"},
	} {
		require.Equal(t, 1, strings.Count(rules, r.old), "rules.yml changed: %q (%s) is not there once", r.old, r.why)
		rules = strings.Replace(rules, r.old, r.new, 1)
	}
	return rules
}

// TestPrometheusRulesAndDashboard runs Debian's Prometheus against a worker
// doing real work (embedded Temporal server, simulator, SQLite store):
//   - the lag, breaker and dead-letter alerts of deploy/prometheus/rules.yml
//     (with short thresholds) fire for the platform that earns them and not
//     for the other;
//   - every rule expression and every query of the Grafana dashboard
//     evaluates, every metric they name exists, and every selector in them
//     matches series (so a renamed metric or label fails here); the
//     dashboard's queries all return data;
//   - /readyz answers 200 once the worker polls and 503 once it stopped,
//     and then the no-poller alert fires for its task queues.
func TestPrometheusRulesAndDashboard(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	began := time.Now()
	promBin := promtest.Binary(t, "prometheus")
	ctx := context.Background()

	srv := startServer(t, "")
	t.Cleanup(func() { _ = srv.Stop() })
	rec := metrics.New()
	opts := client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(), Logger: quietLogger{}}
	require.NoError(t, rec.InstrumentClient(&opts))
	c, err := client.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	metricsSrv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = metricsSrv.Close() })

	cfg := sim.DefaultConfig()
	cfg.Seed = 7
	cfg.Shops = []sim.ShopConfig{{Name: "good", Token: "good-token"}}
	cfg.AdminToken = adminToken
	cfg.History, cfg.HistoryOrders = 30*time.Minute, 150
	cfg.LiveRate, cfg.Late = 0, 0
	cfg.RateLimit = sim.RateLimit{RPS: 20, Burst: 2} // some 429s, so their series exist
	s, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })
	setenv(t, "ORDERSYNC_E2E_P_GOOD_TOKEN", "good-token")
	setenv(t, "ORDERSYNC_E2E_P_BAD_TOKEN", "wrong-token")
	file, err := config.Parse([]byte(strings.ReplaceAll(promPlatforms, "{{SIM}}", simSrv.URL)))
	require.NoError(t, err)
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	// Prometheus first, so it sees the dead letters grow from zero.
	rulesPath := filepath.Join(t.TempDir(), "rules.yml")
	require.NoError(t, os.WriteFile(rulesPath, []byte(testRules(t)), 0o644))
	prom := promtest.Start(t, promBin, fmt.Sprintf(`
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: ordersync # as deploy/prometheus/prometheus.yml names it
    static_configs: [{targets: [%q]}]
`, rulesPath, metricsSrv.Addr()))
	t.Logf("prometheus ready after %s", time.Since(began).Round(time.Millisecond))

	ws, err := worker.Start(worker.Options{Client: c, Store: st, Platforms: file.Platforms,
		StopTimeout: 5 * time.Second, Metrics: rec, MetricsPollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			ws.Stop()
		}
	})
	readyz := "http://" + metricsSrv.Addr() + "/readyz"
	waitFor(t, 30*time.Second, "/readyz to answer 200", func() (bool, string) {
		code, body := get(t, readyz)
		return code == http.StatusOK, body
	})
	// Growth is measured from what Prometheus saw: let it scrape the empty
	// dead-letter workflows before the cursors start failing slices.
	waitFor(t, 30*time.Second, "Prometheus to scrape zero dead letters", func() (bool, string) {
		got, err := prom.Query(ctx, `ordersync_dead_letters{platform="p-bad"} == 0`)
		return err == nil && len(got) == 1, fmt.Sprint(err)
	})
	_, err = starter.EnsureCursors(ctx, c, file.Platforms, time.Now())
	require.NoError(t, err)

	// The alerts built to fire.
	want := []string{
		"OrdersyncLagHigh/p-good",
		"OrdersyncBreakerOpen/p-bad",
		"OrdersyncDeadLettersGrowing/p-bad",
	}
	var firing map[string]bool
	waitFor(t, 90*time.Second, "the lag, breaker and dead-letter alerts to fire", func() (bool, string) {
		firing = firingAlerts(t, prom)
		for _, w := range want {
			if !firing[w] {
				return false, fmt.Sprintf("firing %v; %s", keys(firing), seriesNow(t, prom,
					"ordersync_watermark_lag_seconds", "ordersync_caught_up", "ordersync_breaker_open",
					"ordersync_dead_letters", "min_over_time(ordersync_dead_letters[30m])"))
			}
		}
		return true, ""
	})
	t.Logf("alerts firing after %s: %v", time.Since(began).Round(time.Millisecond), keys(firing))
	for _, never := range []string{"OrdersyncBreakerOpen/p-good", "OrdersyncDeadLettersGrowing/p-good", "OrdersyncCursorNotAnswering/p-good"} {
		require.False(t, firing[never], never)
	}

	// Every expression of the rules and the dashboard, against what the
	// worker exports after real work.
	names, err := prom.MetricNames(ctx)
	require.NoError(t, err)
	for _, e := range ruleExprs(t) {
		t.Run("rule "+e.name, func(t *testing.T) {
			_, err := prom.Query(ctx, e.expr)
			require.NoError(t, err)
			if strings.HasPrefix(e.name, "OrdersyncCredential") {
				// This worker has no stored credentials; their series and
				// rules are checked in deploy/credentials_rules_test.go.
				return
			}
			checkSelectors(ctx, t, prom, names, e.expr)
		})
	}
	for _, e := range dashboardExprs(t) {
		t.Run("panel "+e.name, func(t *testing.T) {
			got, err := prom.Query(ctx, e.expr)
			require.NoError(t, err)
			require.NotEmpty(t, got, "no data for %s", e.expr)
			checkSelectors(ctx, t, prom, names, e.expr)
		})
	}

	// Stopped workers: not ready, and their task queues lose their pollers.
	ws.Stop()
	stopped = true
	code, body := get(t, readyz)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	waitFor(t, time.Minute, "the no-poller alert to fire", func() (bool, string) {
		firing = firingAlerts(t, prom)
		for _, q := range []string{"orders-sim"} { // both platforms share their kind's queue
			for _, kind := range []string{"workflow_task", "activity_task"} {
				if !firing["OrdersyncTaskQueueNotPolled/"+q+"/"+kind] {
					return false, fmt.Sprint(keys(firing))
				}
			}
		}
		return true, ""
	})
	t.Logf("done after %s", time.Since(began).Round(time.Millisecond))
}

// firingAlerts names the firing alerts alertname/platform, or
// alertname/task_queue/poller_type for the poller alert.
func firingAlerts(t *testing.T, prom *promtest.Server) map[string]bool {
	t.Helper()
	alerts, err := prom.Alerts(context.Background())
	require.NoError(t, err)
	out := map[string]bool{}
	for _, a := range alerts {
		if a.State != "firing" {
			continue
		}
		key := a.Labels["alertname"] + "/" + a.Labels["platform"]
		if q := a.Labels["task_queue"]; q != "" {
			key = a.Labels["alertname"] + "/" + q + "/" + a.Labels["poller_type"]
		}
		out[key] = true
	}
	return out
}

type namedExpr struct{ name, expr string }

func ruleExprs(t *testing.T) []namedExpr {
	t.Helper()
	var out []namedExpr
	for _, r := range promtest.Rules(t, rulesFile) {
		out = append(out, namedExpr{r.Alert, r.Expr})
	}
	require.NotEmpty(t, out)
	return out
}

// dashboardExprs are the dashboard's queries with its variables set as
// Grafana would: every platform, and a rate window of several scrapes.
func dashboardExprs(t *testing.T) []namedExpr {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &d))
	vars := strings.NewReplacer(`$platform`, `.*`, `$__rate_interval`, `10s`)
	var out []namedExpr
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, namedExpr{p.Title + " " + tg.RefID, vars.Replace(tg.Expr)})
		}
	}
	require.NotEmpty(t, out)
	return out
}

// checkSelectors: every metric expr names exists, and every selector in it
// (with its label matchers) matches series.
func checkSelectors(ctx context.Context, t *testing.T, prom *promtest.Server, names map[string]bool, expr string) {
	t.Helper()
	sels := promtest.Selectors(expr)
	require.NotEmpty(t, sels, "no metric in %s", expr)
	for _, s := range sels {
		require.True(t, names[s.Metric], "metric %s (in %s) does not exist: renamed?", s.Metric, expr)
		got, err := prom.Query(ctx, "count("+s.Text+")")
		require.NoError(t, err)
		require.NotEmpty(t, got, "selector %s matches no series", s.Text)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last: %s", timeout, what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// seriesNow shows what Prometheus holds now for each expression, for a
// failure message.
func seriesNow(t *testing.T, prom *promtest.Server, exprs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range exprs {
		got, err := prom.Query(context.Background(), e)
		fmt.Fprintf(&b, "\n  %s:", e)
		if err != nil {
			fmt.Fprintf(&b, " %v", err)
		}
		for _, s := range got {
			fmt.Fprintf(&b, " %s=%v", s.Metric["platform"], s.Value[1])
		}
	}
	return b.String()
}
