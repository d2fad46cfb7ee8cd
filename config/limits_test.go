package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// onePlatform is a valid file with one platform, x, and room for one more
// line of settings.
const onePlatform = "platforms:\n  x:\n    kind: sim\n    endpoint: https://h/shops/x\n    credentials: {env: T}\n"

func TestSettingsOutsideTheirRange(t *testing.T) {
	tests := []struct {
		setting string // one YAML line under the platform
		want    string // the one problem line
	}{
		{"interval: 1ns\n    overlap: 0s", `platform "x": field "interval": must be at least 1s, got 1ns`},
		{"interval: 10ms\n    overlap: 0s", `field "interval": must be at least 1s, got 10ms`},
		{"interval: 200h\n    backfill_max_span: 0s", `field "interval": must be at most 168h, got 200h0m0s`},
		{"settle: 25h", `field "settle": must be at most 24h, got 25h0m0s`},
		{"timeout: 50ms", `field "timeout": must be at least 100ms, got 50ms`},
		{"timeout: 11m", `field "timeout": must be at most 10m, got 11m0s`},
		{"retries: 1000000000", `field "retries": must be at most 100, got 1e+09`},
		{"retry_interval: 1ms", `field "retry_interval": must be at least 100ms, got 1ms`},
		{"retry_interval: 2h\n    max_retry_interval: 3h", `field "retry_interval": must be at most 1h, got 2h0m0s`},
		{"retry_backoff: 11", `field "retry_backoff": must be at most 10, got 11`},
		{"max_retry_interval: 25h", `field "max_retry_interval": must be at most 24h, got 25h0m0s`},
		{"concurrency: 100000", `field "concurrency": must be at most 64, got 100000`},
		{"rate_limit: {rps: 1e308}", `field "rate_limit.rps": must be at most 1000, got 1e+308`},
		{"rate_limit: {rps: .nan}", `field "rate_limit.rps": must be at most 1000, got NaN`},
		{"rate_limit: {burst: 1001}", `field "rate_limit.burst": must be at most 1000, got 1001`},
		{"page_size: 1001", `field "page_size": must be at most 1000, got 1001`},
		{"max_pages: 10001", `field "max_pages": must be at most 10000, got 10001`},
		{"backfill_max_span: 2161h", `field "backfill_max_span": must be at most 2160h, got 2161h0m0s`},
		{"resweep_delay: 169h", `field "resweep_delay": must be at most 168h, got 169h0m0s`},
		{"breaker_failures: 1001", `field "breaker_failures": must be at most 1000, got 1001`},
		{"lag_alert: 721h", `field "lag_alert": must be at most 720h, got 721h0m0s`},
		// A value the form check refuses is reported once, by it.
		{"interval: 0s", `field "interval": must be positive, got 0s`},
		{"retries: -1", `field "retries": must not be negative, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			_, err := Parse([]byte(onePlatform + "    " + tt.setting + "\n"))
			require.Error(t, err)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line per mistake:\n%s", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSettingsAtTheirBoundsAreValid(t *testing.T) {
	for _, settings := range []string{
		"interval: 1s\n    overlap: 0s\n    settle: 0s\n    timeout: 100ms\n    retries: 0\n    retry_interval: 100ms\n    retry_backoff: 1\n    max_retry_interval: 100ms\n" +
			"    concurrency: 1\n    rate_limit: {rps: 0.001, burst: 1}\n    page_size: 1\n    max_pages: 1\n    backfill_max_span: 0s\n    resweep_delay: 0s\n    breaker_failures: 0\n    lag_alert: 0s\n",
		"interval: 168h\n    settle: 24h\n    timeout: 10m\n    retries: 100\n    retry_interval: 1h\n    retry_backoff: 10\n    max_retry_interval: 24h\n" +
			"    concurrency: 64\n    rate_limit: {rps: 1000, burst: 1000}\n    page_size: 1000\n    max_pages: 10000\n    backfill_max_span: 2160h\n    resweep_delay: 168h\n    breaker_failures: 1000\n    lag_alert: 720h\n",
	} {
		_, err := Parse([]byte(onePlatform + "    " + settings))
		require.NoError(t, err)
	}
}

func TestTheExampleFilesStayValid(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := LoadFile(f)
		require.NoError(t, err, f)
	}
}

func TestSizeLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name    string
		setting string
		want    string
	}{
		{"a 3 MB endpoint", "endpoint: https://h/" + long(3<<20), fmt.Sprintf(`platform "x": field "endpoint": is %d bytes long; the limit is 2048`, len("https://h/")+3<<20)},
		{"a long env name", "credentials: {env: " + long(300) + "}", `field "credentials.env": is 300 bytes long; the limit is 256`},
		{"a long file path", "credentials: {env: '', file: /" + long(5000) + "}", `field "credentials.file": is 5001 bytes long; the limit is 4096`},
		{"a long task queue", "task_queue: " + long(201), `field "task_queue": is 201 bytes long; the limit is 200`},
		{"a long start", "start: " + long(65), `field "start": is 65 bytes long; the limit is 64`},
		{"a long window", "windows: ['MON 00:00-06:00', '" + long(101) + "']", `field "windows": window 2 is 101 bytes long; the limit is 100`},
		{"many windows", "windows: [" + strings.TrimSuffix(strings.Repeat("'MON 00:00-06:00',", 33), ",") + "]", `field "windows": has 33 windows; the limit is 32`},
		{"large options", "options: {blob: " + long(70000) + "}", fmt.Sprintf(`field "options": are %d bytes as JSON; the limit is 65536`, len(`{"blob":""}`)+70000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(onePlatform + "    " + tt.setting + "\n"))
			require.Error(t, err)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line, not the value: %.300s", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	content := onePlatform + "# " + strings.Repeat("x", MaxFileSize) + "\n"
	require.NoError(t, os.WriteFile(big, []byte(content), 0o600))
	_, err := LoadFile(big)
	require.EqualError(t, err, fmt.Sprintf("%s: the file is %d bytes; the limit is 4194304 bytes (4 MiB)", big, len(content)))

	var b strings.Builder
	b.WriteString("default: {kind: sim, endpoint: 'http://h', credentials: {env: T}}\nplatforms:\n")
	for i := range MaxPlatforms + 1 {
		fmt.Fprintf(&b, "  p%d: {}\n", i)
	}
	many := filepath.Join(dir, "many.yaml")
	require.NoError(t, os.WriteFile(many, []byte(b.String()), 0o600))
	_, err = LoadFile(many)
	require.EqualError(t, err, many+`: field "platforms": 10001 platforms; the limit is 10000 per file (split them over several files, each with its own workers)`)
}
