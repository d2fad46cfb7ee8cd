package worker

import (
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
