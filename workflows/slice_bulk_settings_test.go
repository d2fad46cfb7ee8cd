package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// TestReadBulkSettingsAgreesWithConfig: the bulk decision a slice takes
// from settings derived at the edge (config.Platform.Settings, v0.8 on)
// and from the options recorded before v0.8 (the workflow's frozen
// reader of LegacyOptions) agree with config's checked decoding, for
// every form the check accepts (YAML's and a config signal's JSON types).
// If config's defaults change, this fails: the workflow's decision then
// needs a new version, not an edit of the frozen defaults.
func TestReadBulkSettingsAgreesWithConfig(t *testing.T) {
	widths := []time.Duration{time.Hour, 23 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}
	for _, opts := range []map[string]any{
		nil,
		{},
		{"api": "graphql"},
		{"api": "rest"},
		{"api": "rest", "bulk_backfill": false},
		{"bulk_backfill": false},
		{"bulk_backfill": true},
		{"bulk_min_span": "2h"},
		{"bulk_min_span": "48h", "bulk_poll_interval": "3s"},
		{"bulk_min_span": float64(2 * time.Hour)}, // JSON nanoseconds
		{"bulk_poll_interval": "1m", "api_version": "2025-07"},
	} {
		p := config.Platform{Name: "s", Kind: "shopify", Options: opts}
		want, err := config.KindOptions[connectors.ShopifyOptions](p)
		require.NoError(t, err, "%v", opts)
		derived := p.Settings()
		require.NotNil(t, derived.Bulk)
		require.Nil(t, derived.LegacyOptions, "settings never carry the options")
		legacy := api.Settings{Name: "s", Kind: "shopify", LegacyOptions: opts}
		converted := withoutLegacyOptions(legacy)
		require.Nil(t, converted.LegacyOptions)
		for _, w := range widths {
			for _, s := range []api.Settings{derived, legacy, converted} {
				got := readBulkSettings(s, w)
				require.Equal(t, want.UseBulk(w), got.use, "options %v, width %s, bulk %+v", opts, w, s.Bulk)
				if got.use {
					require.Equal(t, want.BulkPollInterval.D(), got.poll, "options %v", opts)
				}
			}
		}
	}
	require.False(t, readBulkSettings(config.Platform{Name: "s", Kind: "sim"}.Settings(), 30*24*time.Hour).use)
	require.False(t, readBulkSettings(api.Settings{Kind: "sim"}, 30*24*time.Hour).use)
	// A value the reader cannot read pages the slice.
	require.False(t, readBulkSettings(api.Settings{Kind: "shopify", LegacyOptions: map[string]any{"bulk_min_span": []int{1}}}, 30*24*time.Hour).use)
}
