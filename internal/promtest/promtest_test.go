package promtest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/promtest"
)

func TestSelectors(t *testing.T) {
	tests := []struct {
		expr string
		want []promtest.Selector
	}{
		{expr: `up`, want: []promtest.Selector{{Metric: "up", Text: "up"}}},
		{
			expr: `max by (platform) (ordersync_watermark_lag_seconds) > 3600
			  and on (platform) max by (platform) (ordersync_caught_up) == 1`,
			want: []promtest.Selector{
				{Metric: "ordersync_watermark_lag_seconds", Text: "ordersync_watermark_lag_seconds"},
				{Metric: "ordersync_caught_up", Text: "ordersync_caught_up"},
			},
		},
		{
			expr: `histogram_quantile(0.95, sum by (task_queue, le) (rate(temporal_x_bucket{job="ordersync", q=~"a|b}"}[5m])))`,
			want: []promtest.Selector{{Metric: "temporal_x_bucket", Text: `temporal_x_bucket{job="ordersync", q=~"a|b}"}`}},
		},
		{
			expr: `sum(rate(a_total[1m] offset 5m)) without (instance) / ignoring (x) group_left (y) b * 1e3 or vector(0)`,
			want: []promtest.Selector{{Metric: "a_total", Text: "a_total"}, {Metric: "b", Text: "b"}},
		},
		{expr: `absent(up{job="ordersync"} == 1)`, want: []promtest.Selector{{Metric: "up", Text: `up{job="ordersync"}`}}},
		{expr: `label_replace(x, "dst", "$1", "src", "(.*)")`, want: []promtest.Selector{{Metric: "x", Text: "x"}}},
		{expr: `count({__name__=~"ordersync_.*"})`, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			require.Equal(t, tc.want, promtest.Selectors(tc.expr))
		})
	}
}

func TestRulesReadsEveryGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yml")
	require.NoError(t, os.WriteFile(path, []byte(`groups:
  - name: a
    rules:
      - alert: First
        expr: up == 0
        for: 5m
  - name: b
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: Second
        expr: rate(x_total[5m]) > 0
`), 0o644))
	require.Equal(t, []promtest.Rule{
		{Alert: "First", Expr: "up == 0"},
		{Expr: "sum by (job) (up)"},
		{Alert: "Second", Expr: "rate(x_total[5m]) > 0"},
	}, promtest.Rules(t, path))
}
