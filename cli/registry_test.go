package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
)

func TestPlatformFromFlagsMergesLikeAFile(t *testing.T) {
	p, err := platformFromFlags("shop-a", "sim", "http://127.0.0.1:1/shops/a", config.CredentialRef{Env: "TOKEN"},
		[]string{"interval=10m", "rate_limit.rps=5", "windows=[\"MON-FRI 00:00-06:00 UTC\"]", "start=2026-01-01T00:00:00Z"})
	require.NoError(t, err)
	require.Equal(t, 10*time.Minute, p.Interval.D())
	require.Equal(t, 5.0, p.RateLimit.RPS)
	require.Equal(t, config.BuiltinDefaults().RateLimit.Burst, p.RateLimit.Burst, "nested fields merge one by one")
	require.Equal(t, []string{"MON-FRI 00:00-06:00 UTC"}, p.Windows)
	require.Equal(t, "2026-01-01T00:00:00Z", p.Start)
	require.Equal(t, "orders-sim", p.TaskQueue)

	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"unknown field", []string{"intervall=10m"}, "intervall"},
		{"bad value", []string{"interval=soon"}, "interval"},
		{"no equals sign", []string{"interval"}, "want key=value"},
		{"the name", []string{"name=other"}, "the name cannot be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := platformFromFlags("shop-a", "sim", "http://127.0.0.1:1/shops/a", config.CredentialRef{Env: "TOKEN"}, tc.sets)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = platformFromFlags("shop-a", "sim", "", config.CredentialRef{Env: "TOKEN"}, nil)
	require.ErrorContains(t, err, "endpoint", "a missing endpoint is named")
}

func TestEditPlatformSetsAndUnsets(t *testing.T) {
	p, err := platformFromFlags("shop-a", "sim", "http://127.0.0.1:1/shops/a", config.CredentialRef{Env: "TOKEN"}, []string{"lag_alert=1h"})
	require.NoError(t, err)
	require.NoError(t, editPlatform(&p, []string{"endpoint=http://127.0.0.1:2/shops/b", "rate_limit.burst=9"}, []string{"lag_alert"}))
	require.Equal(t, "http://127.0.0.1:2/shops/b", p.Endpoint)
	require.Equal(t, 9, p.RateLimit.Burst)
	require.Zero(t, p.LagAlert)
	require.ErrorContains(t, editPlatform(&p, []string{"rate_limit.bogus=1"}, nil), "rate_limit.bogus")
	require.ErrorContains(t, editPlatform(&p, nil, []string{"nothing.here"}), "no such setting")
}
