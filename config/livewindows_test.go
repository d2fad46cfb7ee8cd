package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLiveWindowsSetting: live_windows is inline (the default) or
// workflows; anything else is one line naming the platform and the
// field, a huge value reported by its size and never quoted, in the
// file and in a `config` message alike.
func TestLiveWindowsSetting(t *testing.T) {
	for setting, want := range map[string]string{
		"live_windows: child":                        `platform "x": field "live_windows": must be "inline" (the default) or "workflows", got "child"`,
		"live_windows: " + strings.Repeat("w", 5000): `platform "x": field "live_windows": is 5000 bytes long; the limit is 16`,
	} {
		t.Run(setting[:min(len(setting), 40)], func(t *testing.T) {
			_, err := Parse([]byte(onePlatform + "    " + setting + "\n"))
			require.Error(t, err)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line per mistake:\n%s", err)
			require.Contains(t, err.Error(), want)
			require.Less(t, len(err.Error()), 300)
		})
	}
	for _, ok := range []string{"live_windows: inline", "live_windows: workflows", "live_windows: \"\""} {
		f, err := Parse([]byte(onePlatform + "    " + ok + "\n"))
		require.NoError(t, err, ok)
		require.Equal(t, f.Platforms[0].LiveWindows, f.Platforms[0].Settings().LiveWindows, "the setting travels to the workflows")
	}

	s := settingsTestPlatform().Settings()
	require.True(t, s.InlineLiveWindows(), "inline by default")
	s.LiveWindows = "sometimes"
	require.ErrorContains(t, ValidateSettings(s), `field "live_windows": must be "inline" (the default) or "workflows", got "sometimes"`)
	s.LiveWindows = "workflows"
	require.NoError(t, ValidateSettings(s))
	require.False(t, s.InlineLiveWindows())
}
