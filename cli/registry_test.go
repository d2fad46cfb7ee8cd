package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
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
	_, err = platformFromFlags("shop-a", "sim", "http://127.0.0.1:1/shops/a", config.CredentialRef{Env: "TOKEN", Stored: "shop-a"}, nil)
	require.ErrorContains(t, err, "set one of env, file or stored", "two credential flags are refused, not one picked")
	p, err = platformFromFlags("shop-a", "sim", "http://127.0.0.1:1/shops/a", config.CredentialRef{Stored: "shop-a"}, nil)
	require.NoError(t, err)
	require.Equal(t, config.CredentialRef{Stored: "shop-a"}, p.Credentials)
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

// Commands that act on one account by name (pause, resume, status, slices,
// dlq) find an account added at runtime in the registry, not only in the
// platforms file; a removed or unknown name is refused naming both places.
func TestSelectKnownLooksInTheRegistry(t *testing.T) {
	ctx := context.Background()
	app := &App{Process: config.Process{StoreDSN: "sqlite://" + filepath.Join(t.TempDir(), "state.db")}}
	reg, done, err := app.openRegistry(ctx)
	require.NoError(t, err)
	defer done()
	put := func(name string, state accounts.State) {
		p, err := platformFromFlags(name, "sim", "http://127.0.0.1:1/shops/"+name, config.CredentialRef{Env: "TOKEN"}, nil)
		require.NoError(t, err)
		e, err := accounts.PlatformEntry(p, state)
		require.NoError(t, err)
		_, err = reg.Put(ctx, e, 0)
		require.NoError(t, err)
	}
	put("added-at-runtime", accounts.Active)
	put("gone", accounts.Removed)
	f, err := config.Parse([]byte("platforms:\n  filed:\n    kind: sim\n    endpoint: http://127.0.0.1:1/shops/f\n    credentials: {env: T}\n"))
	require.NoError(t, err)

	ps, err := app.selectKnown(ctx, f, []string{"filed", "added-at-runtime"})
	require.NoError(t, err)
	require.Equal(t, "filed", ps[0].Name)
	require.Equal(t, "added-at-runtime", ps[1].Name)
	require.Equal(t, "http://127.0.0.1:1/shops/added-at-runtime", ps[1].Endpoint)
	ps, err = app.selectKnown(ctx, nil, []string{"added-at-runtime"})
	require.NoError(t, err, "no platforms file at all")
	require.Len(t, ps, 1)

	for _, name := range []string{"gone", "never-was"} {
		_, err = app.selectKnown(ctx, f, []string{name})
		require.ErrorContains(t, err, `unknown platform "`+name+`": not in the platforms file (configured: filed) nor registered`)
	}
}
