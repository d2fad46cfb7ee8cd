package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWebhookIntervalIsAMultipleOfInterval: webhook_interval is 0 (off) or
// a whole multiple of interval up to 24h, so hybrid pacing never moves the
// slice grid; a wrong value is one line naming the platform and the field,
// in the file and in a `config` message alike.
func TestWebhookIntervalIsAMultipleOfInterval(t *testing.T) {
	for setting, want := range map[string]string{
		"interval: 1m\n    overlap: 30s\n    webhook_interval: 90s": `platform "x": field "webhook_interval": must be a whole multiple of interval (1m0s) so slices stay on the grid, got 1m30s`,
		"interval: 15m\n    webhook_interval: 5m":                   `platform "x": field "webhook_interval": must be 0 (off) or at least interval (15m0s), got 5m0s`,
		"interval: 1m\n    overlap: 30s\n    webhook_interval: 25h": `platform "x": field "webhook_interval": must be at most 24h, got 25h0m0s`,
		"webhook_interval: -15m":                                    `platform "x": field "webhook_interval": must be at least 0s, got -15m0s`,
	} {
		t.Run(setting, func(t *testing.T) {
			_, err := Parse([]byte(onePlatform + "    " + setting + "\n"))
			require.Error(t, err)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line per mistake:\n%s", err)
			require.Contains(t, err.Error(), want)
		})
	}
	for _, ok := range []string{"interval: 1m\n    overlap: 30s\n    webhook_interval: 15m", "webhook_interval: 0s", "interval: 1m\n    overlap: 30s\n    webhook_interval: 1m"} {
		f, err := Parse([]byte(onePlatform + "    " + ok + "\n"))
		require.NoError(t, err, ok)
		require.Equal(t, f.Platforms[0].WebhookInterval, f.Platforms[0].Settings().WebhookInterval, "the setting travels to the workflows")
	}

	s := settingsTestPlatform().Settings()
	s.Interval, s.Overlap, s.WebhookInterval = Duration(time.Minute), 0, Duration(150*time.Second)
	err := ValidateSettings(s)
	require.ErrorContains(t, err, `field "webhook_interval": must be a whole multiple of interval`)
	s.WebhookInterval = Duration(15 * time.Minute)
	require.NoError(t, ValidateSettings(s))
	require.Equal(t, 15, s.WebhookSpan())
	require.Equal(t, 30*time.Minute, s.LiveFor())
}
