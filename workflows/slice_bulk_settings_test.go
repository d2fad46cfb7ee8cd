package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
)

// TestReadBulkSettingsAgreesWithConfig: the workflow's frozen reader of the
// bulk options decides as config's checked decoding does, for every form
// the check accepts (YAML's and a config signal's JSON types). If config's
// defaults change, this fails: the workflow's decision then needs a new
// version, not an edit of the frozen defaults.
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
		want, err := config.KindOptions[config.ShopifyOptions](p)
		require.NoError(t, err, "%v", opts)
		for _, w := range widths {
			got := readBulkSettings(p, w)
			require.Equal(t, want.UseBulk(w), got.use, "options %v, width %s", opts, w)
			require.Equal(t, want.BulkPollInterval.D(), got.poll, "options %v", opts)
		}
	}
	require.False(t, readBulkSettings(config.Platform{Kind: "sim"}, 30*24*time.Hour).use)
	// A value the reader cannot read pages the slice.
	require.False(t, readBulkSettings(config.Platform{Kind: "shopify", Options: map[string]any{"bulk_min_span": []int{1}}}, 30*24*time.Hour).use)
}
