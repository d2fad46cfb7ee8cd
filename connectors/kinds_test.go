package connectors_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// TestKindsAgree: a kind is one spec here (spec_<kind>.go), registered
// with config and with New at once (specs.go). Config must not accept a
// kind no connector serves, nor a connector serve a kind config refuses;
// and every kind, loaded as a platforms file would load it (its defaults
// applied, its options decoded and checked), must build its connector.
func TestKindsAgree(t *testing.T) {
	kinds := slices.Sorted(slices.Values(config.Kinds()))
	require.Equal(t, kinds, connectors.RegisteredKinds(),
		"the kinds config knows (config.Kinds(), from the specs registered in specs.go) and the kinds with a registered connector differ")

	fixtureOf := map[string]kindFixture{}
	for _, f := range kindFixtures {
		if _, ok := fixtureOf[f.kind]; !ok {
			fixtureOf[f.kind] = f
		}
	}
	platforms := map[string]any{}
	for _, kind := range kinds {
		f, ok := fixtureOf[kind]
		require.True(t, ok, "kind %s has no fixture in kindfixtures_test.go", kind)
		entry := map[string]any{"kind": kind, "endpoint": "https://" + kind + ".example.com",
			"credentials": secretFile(t, f.secret)}
		if f.options != nil {
			entry["options"] = f.options("https://auth.example.com/token")
		}
		platforms[kind] = entry
	}
	file, err := json.Marshal(map[string]any{"platforms": platforms}) // JSON is YAML
	require.NoError(t, err)
	loaded, err := config.Parse(file)
	require.NoError(t, err, "every kind's defaults and fixture options must load")
	for _, kind := range kinds {
		p, ok := loaded.Get(kind)
		require.True(t, ok)
		if d := config.KindDefaults(kind); d.MaxPageSize > 0 {
			require.LessOrEqual(t, p.PageSize, d.MaxPageSize, "kind %s", kind)
		}
		_, err := connectors.New(p)
		require.NoError(t, err, "kind %s", kind)
	}
}
