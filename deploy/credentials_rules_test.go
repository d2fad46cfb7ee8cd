package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/promtest"
)

// TestCredentialRulesOnRealSeries runs Debian's Prometheus against the
// series a worker's CredentialPoller exports (fed four stored credentials'
// metadata: refused, failing, expiring within the week, healthy) with the
// rules of prometheus/rules.yml, their `for` waits dropped: each
// credential alert fires for the credential that earns it and for no
// other, and every selector of those rules matches series (so a renamed
// metric or label fails here). e2e/prometheus_test.go checks the other
// rules against a worker doing real work, which has no stored credentials.
func TestCredentialRulesOnRealSeries(t *testing.T) {
	promBin := promtest.Binary(t, "prometheus")
	ctx := context.Background()
	now := time.Now()
	health := []credentials.Status{
		{Name: "shop-refused", Kind: credentials.KindShopify, App: "app", LastRefreshAt: now.Add(-2 * time.Hour),
			AccessExpiresAt: now.Add(-time.Hour), RefreshExpiresAt: now.Add(80 * 24 * time.Hour),
			LastError: "refresh token refused: invalid_grant", NeedsReauthorization: true},
		{Name: "shop-failing", Kind: credentials.KindShopify, App: "app", LastRefreshAt: now.Add(-50 * time.Minute),
			AccessExpiresAt: now.Add(10 * time.Minute), RefreshExpiresAt: now.Add(89 * 24 * time.Hour), LastError: "HTTP 503"},
		{Name: "shop-idle", Kind: credentials.KindShopify, App: "app", LastRefreshAt: now.Add(-86 * 24 * time.Hour),
			AccessExpiresAt: now.Add(-86 * 24 * time.Hour), RefreshExpiresAt: now.Add(4 * 24 * time.Hour)},
		{Name: "amazon-eu", Kind: credentials.KindLWA, App: "lwa", LastRefreshAt: now.Add(-time.Minute),
			AccessExpiresAt: now.Add(59 * time.Minute)},
		{Name: "app", Kind: credentials.KindApp},
	}
	rec := metrics.New()
	poller := &metrics.CredentialPoller{Health: func(context.Context) ([]credentials.Status, error) { return health, nil },
		Alerter: discardAlerts{}}
	require.NoError(t, rec.Registry().Register(poller))
	poller.PollOnce(ctx)
	srv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	b, err := os.ReadFile("prometheus/rules.yml")
	require.NoError(t, err)
	rules := regexp.MustCompile(`(?m)^\s+for: \S+\n`).ReplaceAllString(string(b), "")
	rulesPath := filepath.Join(t.TempDir(), "rules.yml")
	require.NoError(t, os.WriteFile(rulesPath, []byte(rules), 0o644))
	prom := promtest.Start(t, promBin, fmt.Sprintf(`
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: ordersync
    static_configs: [{targets: [%q]}]
`, rulesPath, srv.Addr()))

	want := map[string]bool{
		"OrdersyncCredentialNeedsReauthorization/shop-refused": true,
		"OrdersyncCredentialRefreshFailing/shop-failing":       true,
		"OrdersyncCredentialRefreshTokenExpiring/shop-idle":    true,
	}
	var firing map[string]bool
	deadline := time.Now().Add(60 * time.Second)
	for {
		alerts, err := prom.Alerts(ctx)
		require.NoError(t, err)
		firing = map[string]bool{}
		for _, a := range alerts {
			if a.State == "firing" && strings.HasPrefix(a.Labels["alertname"], "OrdersyncCredential") {
				firing[a.Labels["alertname"]+"/"+a.Labels["credential"]] = true
			}
		}
		if len(firing) >= len(want) {
			break
		}
		require.True(t, time.Now().Before(deadline), "credential alerts firing: %v, want %v", firing, want)
		time.Sleep(250 * time.Millisecond)
	}
	require.Equal(t, want, firing, "each credential alert for its credential alone")

	names, err := prom.MetricNames(ctx)
	require.NoError(t, err)
	n := 0
	for _, e := range credentialRuleExprs(t) {
		n++
		_, err := prom.Query(ctx, e)
		require.NoError(t, err)
		for _, s := range promtest.Selectors(e) {
			require.True(t, names[s.Metric], "metric %s (in %s) does not exist: renamed?", s.Metric, e)
			got, err := prom.Query(ctx, "count("+s.Text+")")
			require.NoError(t, err)
			require.NotEmpty(t, got, "selector %s matches no series", s.Text)
		}
	}
	require.Equal(t, 3, n)
}

// credentialRuleExprs are the expressions of the OrdersyncCredential* rules.
func credentialRuleExprs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range promtest.Rules(t, "prometheus/rules.yml") {
		if strings.HasPrefix(r.Alert, "OrdersyncCredential") {
			out = append(out, r.Expr)
		}
	}
	return out
}

type discardAlerts struct{}

func (discardAlerts) Alert(context.Context, api.Alert) error { return nil }
