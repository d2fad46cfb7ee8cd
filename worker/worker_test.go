package worker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
)

// The environment's default query budget is the poller's own, so a worker
// started without the setting (tests, the bench) runs as one started with it.
func TestMetricsQueryRateDefaultsAgree(t *testing.T) {
	p, err := config.LoadProcess()
	require.NoError(t, err)
	require.Equal(t, metrics.DefaultQueryRate, p.MetricsQueryRate)
}

// TestConnectorsTrustTheWorkersOwnPlatforms: a worker's connectors trust
// the platforms it was started with, or, given its platforms file, what the
// file declares now.
func TestConnectorsTrustTheWorkersOwnPlatforms(t *testing.T) {
	given := config.Platform{Name: "a", Endpoint: "http://a"}
	declared, err := declaredPlatforms(Options{Platforms: []config.Platform{given}}, nil)
	require.NoError(t, err)
	p, ok := declared.Get("a")
	require.True(t, ok)
	require.Equal(t, given, p)
	_, ok = declared.Get("b")
	require.False(t, ok)

	path := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(path, []byte("platforms:\n  b:\n    kind: sim\n    endpoint: http://127.0.0.1/b\n    credentials: {env: B}\n"), 0o600))
	declared, err = declaredPlatforms(Options{Platforms: []config.Platform{given}, PlatformsFile: path}, nil)
	require.NoError(t, err)
	_, ok = declared.Get("b")
	require.True(t, ok, "the file, not the list it was selected from")
	require.IsType(t, &config.WatchedFile{}, declared)

	_, err = declaredPlatforms(Options{PlatformsFile: filepath.Join(t.TempDir(), "none.yaml")}, nil)
	require.ErrorContains(t, err, "watch platforms file")
}
