package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const twoPlatforms = `
default:
  interval: 10m
  overlap: 1m
  rate_limit: {rps: 5, burst: 10}
  options: {api_version: "2024-01"}
platforms:
  shop-b:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/b
    credentials: {env: SHOP_B_TOKEN}
    rate_limit: {rps: 1}
    options: {extra: yes}
  shop-a:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {file: /run/secrets/a}
    interval: 5m
    windows: ["MON-FRI 00:00-06:00 Europe/Berlin"]
    task_queue: shared
`

func TestParseMergesDefaultsFieldByField(t *testing.T) {
	f, err := Parse([]byte(twoPlatforms))
	require.NoError(t, err)
	require.Equal(t, []string{"shop-a", "shop-b"}, f.Names())

	a, _ := f.Get("shop-a")
	require.Equal(t, 5*time.Minute, a.Interval.D(), "platform overrides default")
	require.Equal(t, time.Minute, a.Overlap.D(), "default block overrides builtin")
	require.Equal(t, 30*time.Second, a.Timeout.D(), "builtin default kept")
	require.Equal(t, "shared", a.TaskQueue)
	require.Equal(t, RateLimit{RPS: 5, Burst: 10}, a.RateLimit)

	b, _ := f.Get("shop-b")
	require.Equal(t, RateLimit{RPS: 1, Burst: 10}, b.RateLimit, "nested fields merge one by one")
	require.Equal(t, "orders-sim", b.TaskQueue, "default task queue: one per kind")
	require.Equal(t, map[string]any{"api_version": "2024-01", "extra": "yes"}, b.Options)
	require.Equal(t, map[string]any{"api_version": "2024-01"}, a.Options, "options of one platform do not leak into another")
}

func TestParseReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings, one per expected problem line
	}{
		{
			name: "many mistakes at once",
			yaml: `
default:
  retries: -1
platforms:
  acme:
    kind: magento
    endpoint: ftp://x
    credentials: {env: T}
    interval: 5m
    overlap: 10m
    windows: ["MON-XYZ 00:00-06:00"]
    colour: blue
  beta:
    kind: sim
    endpoint: http://localhost/shops/b
    page_size: lots
`,
			want: []string{
				`platform "acme": field "colour": unknown field (line 12)`,
				`platform "acme": field "kind": unknown kind "magento"`,
				`platform "acme": field "endpoint": "ftp://x" is not an http(s) URL`,
				`platform "acme": field "overlap": must be shorter than interval (5m0s), got 10m0s`,
				`platform "acme": field "retries": must not be negative, got -1`,
				`platform "acme": field "windows": "MON-XYZ 00:00-06:00": unknown day "XYZ"`,
				`platform "beta": field "page_size": cannot unmarshal !!str`,
				`platform "beta": field "credentials": is required`,
				`platform "beta": field "retries": must not be negative, got -1`,
			},
		},
		{name: "unknown top-level key", yaml: "platfroms: {}\n", want: []string{`field "platfroms": unknown top-level key`, `no platforms configured`}},
		{name: "empty file", yaml: "# nothing yet\n", want: []string{"the file is empty; it needs a platforms mapping"}},
		{name: "not yaml", yaml: "platforms: [\n", want: []string{"not valid YAML"}},
		{name: "bad duration", yaml: "platforms:\n  x:\n    kind: sim\n    endpoint: https://h\n    credentials: {env: T}\n    settle: soon\n", want: []string{`platform "x": field "settle": "soon" is not a duration`}},
		{name: "bad start", yaml: "platforms:\n  x:\n    kind: sim\n    endpoint: https://h\n    credentials: {env: T}\n    start: yesterday\n", want: []string{`platform "x": field "start": "yesterday" is neither RFC3339`}},
		{name: "secret instead of env name", yaml: "platforms:\n  x:\n    kind: sim\n    endpoint: https://h\n    credentials: {env: 'shpat_abc-123'}\n", want: []string{`field "credentials.env": "shpat_abc-123" is not an environment variable name`}},
		{name: "backfill span under interval", yaml: "platforms:\n  x:\n    kind: sim\n    endpoint: https://h\n    credentials: {env: T}\n    interval: 1h\n    backfill_max_span: 30m\n", want: []string{`platform "x": field "backfill_max_span": must be 0 (off) or at least interval (1h0m0s), got 30m0s`}},
		{name: "bad window", yaml: "platforms:\n  x:\n    kind: sim\n    endpoint: https://h\n    credentials: {env: T}\n    windows: ['MON 25:00-06:00', 'TUE 01:00-02:00 Mars/Base']\n", want: []string{`time "25:00"`, `unknown time zone "Mars/Base"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.yaml))
			require.Nil(t, f, "nothing is returned when anything is wrong")
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), "one line per problem:\n%s", err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestResolveStart(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	got, err := Platform{Start: "-48h"}.ResolveStart(now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-48*time.Hour), got)
	got, err = Platform{Start: "2026-01-01T00:00:00+01:00"}.ResolveStart(now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), got)
	_, err = Platform{Start: "48h"}.ResolveStart(now)
	require.ErrorContains(t, err, "in the future")
}

func TestCredentialResolve(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_SECRET", " s3cret\n")
	v, err := CredentialRef{Env: "ORDERSYNC_TEST_SECRET"}.Resolve()
	require.NoError(t, err)
	require.Equal(t, "s3cret", v)
	_, err = CredentialRef{Env: "ORDERSYNC_TEST_MISSING"}.Resolve()
	require.ErrorContains(t, err, "ORDERSYNC_TEST_MISSING is not set")
}

func TestLoadProcessDefaultsAndErrors(t *testing.T) {
	p, err := LoadProcess()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7233", p.TemporalAddress)
	require.Equal(t, "sqlite://.ordersync/orders.db", p.StoreDSN)

	t.Setenv("ORDERSYNC_LOG_LEVEL", "loud")
	t.Setenv("ORDERSYNC_TEMPORAL_TLS_CERT", "/c.pem")
	_, err = LoadProcess()
	require.ErrorContains(t, err, `ORDERSYNC_LOG_LEVEL: "loud"`)
	require.ErrorContains(t, err, "TLS_CERT and ORDERSYNC_TEMPORAL_TLS_KEY must be set together")
}

func TestLoadProcessMetricsQueryRate(t *testing.T) {
	p, err := LoadProcess()
	require.NoError(t, err)
	require.Equal(t, 20.0, p.MetricsQueryRate)
	t.Setenv("ORDERSYNC_METRICS_QUERY_RATE", "2.5")
	p, err = LoadProcess()
	require.NoError(t, err)
	require.Equal(t, 2.5, p.MetricsQueryRate)
	for _, bad := range []string{"0", "-1", "NaN", "+Inf"} {
		t.Setenv("ORDERSYNC_METRICS_QUERY_RATE", bad)
		_, err = LoadProcess()
		require.ErrorContains(t, err, "ORDERSYNC_METRICS_QUERY_RATE: ", bad)
		require.ErrorContains(t, err, "not a number of queries per second above 0", bad)
	}
	t.Setenv("ORDERSYNC_METRICS_QUERY_RATE", "fast")
	_, err = LoadProcess()
	require.ErrorContains(t, err, "METRICS_QUERY_RATE")
}
