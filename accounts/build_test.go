package accounts_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
)

// A platform built from settings decoded from JSON (numbers as
// json.Number, as the HTTP API decodes them) is the platform a platforms
// file with the same entry gives.
func TestBuildPlatformIsThePlatformsFile(t *testing.T) {
	settings, err := accounts.DecodeObject([]byte(`{"kind": "sim", "endpoint": "http://127.0.0.1:8780/shops/a",
		"credentials": {"env": "A"}, "interval": "10m", "rate_limit": {"rps": 0.5, "burst": 3}, "retries": 7,
		"windows": ["Mon-Fri 08:00-20:00"]}`))
	require.NoError(t, err)
	got, err := accounts.BuildPlatform("sim-a", settings)
	require.NoError(t, err)

	f, err := config.Parse([]byte(`platforms:
  sim-a:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/a
    credentials: {env: A}
    interval: 10m
    rate_limit: {rps: 0.5, burst: 3}
    retries: 7
    windows: ["Mon-Fri 08:00-20:00"]
`))
	require.NoError(t, err)
	require.True(t, accounts.SamePlatform(f.Platforms[0], got), "built %+v\nfile  %+v", got, f.Platforms[0])
	require.Equal(t, 0.5, got.RateLimit.RPS)
	require.Equal(t, 7, got.Retries)
	require.Equal(t, "orders-sim", got.TaskQueue)
	_, inSettings := settings["name"]
	require.False(t, inSettings, "the caller's map is left alone")
}

func TestBuildPlatformsWithDefaultsAndProblems(t *testing.T) {
	ps, err := accounts.BuildPlatforms(map[string]any{"kind": "sim", "interval": "15m"}, map[string]map[string]any{
		"sim-b": {"endpoint": "http://127.0.0.1:8780/shops/b", "credentials": map[string]any{"env": "B"}},
		"sim-a": {"endpoint": "http://127.0.0.1:8780/shops/a", "credentials": map[string]any{"env": "A"}, "interval": "5m"},
	})
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "sim-a", ps[0].Name, "sorted by name")
	require.Equal(t, "5m0s", ps[0].Interval.String())
	require.Equal(t, "15m0s", ps[1].Interval.String(), "the default block applies")

	_, err = accounts.BuildPlatforms(nil, map[string]map[string]any{
		"sim-a": {"kind": "sim", "interval": "soon", "bogus": json.Number("1")},
	})
	var ve *config.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	var fields []string
	for _, p := range ve.Problems {
		fields = append(fields, p.Platform+"/"+p.Field)
	}
	require.Contains(t, fields, "sim-a/interval")
	require.Contains(t, fields, "sim-a/bogus")
	for _, p := range ve.Problems {
		require.NotContains(t, p.Reason, "line", "a line of a document the caller never saw")
	}
}

func TestEditSettings(t *testing.T) {
	p, err := accounts.BuildPlatform("sim-a", map[string]any{"kind": "sim", "endpoint": "http://127.0.0.1:8780/shops/a",
		"credentials": map[string]any{"env": "A"}})
	require.NoError(t, err)
	require.NoError(t, accounts.EditSettings(&p, func(m map[string]any) error {
		m["interval"] = "3m"
		return nil
	}))
	require.Equal(t, "3m0s", p.Interval.String())

	before := p
	err = accounts.EditSettings(&p, func(m map[string]any) error {
		m["rate_limit"].(map[string]any)["rsp"] = 1
		return nil
	})
	var ve *config.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, "rate_limit.rsp", ve.Problems[0].Field)
	require.True(t, accounts.SamePlatform(before, p), "a refused edit leaves the platform alone")
}
