package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/alerttest"
	"github.com/ordersync/ordersync/internal/metrics"
)

// TestCredentialHealthWiring: with CredentialHealth set the process
// alerts through its Alerter and exports the credential series while it
// runs; Stop ends the poll and takes the series away. Without Metrics it
// still alerts.
func TestCredentialHealthWiring(t *testing.T) {
	health := func(context.Context) ([]credentials.Status, error) {
		return []credentials.Status{{Name: "shop-a", Kind: credentials.KindShopify, App: "app",
			LastError: "refresh token refused: invalid_grant", NeedsReauthorization: true}}, nil
	}
	for _, withMetrics := range []bool{true, false} {
		alerts := &alerttest.Recorder{}
		opts := Options{CredentialHealth: health, Alerter: alerts}
		if withMetrics {
			opts.Metrics = metrics.New()
		}
		ws := &Workers{}
		require.NoError(t, ws.startCredentialPoller(opts, slog.New(slog.DiscardHandler)))
		require.Eventually(t, func() bool { return len(alerts.Keys()) == 1 }, 10*time.Second, 10*time.Millisecond)
		if withMetrics {
			n, err := testutil.GatherAndCount(opts.Metrics.Registry(), "ordersync_credential_needs_reauthorization")
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}
		ws.Stop()
		require.Nil(t, ws.stopCredentials)
		if withMetrics {
			n, err := testutil.GatherAndCount(opts.Metrics.Registry(), "ordersync_credential_needs_reauthorization")
			require.NoError(t, err)
			require.Zero(t, n, "unregistered on Stop")
		}
		require.Equal(t, 1, len(alerts.Keys()))
	}
}
