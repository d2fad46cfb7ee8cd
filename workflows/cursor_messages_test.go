package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

// TestMessageTableIsTheAPI: every cursor message api names has one row in
// the table (its signal and its update are registered from it), and no
// row names something api does not.
func TestMessageTableIsTheAPI(t *testing.T) {
	var names []string
	for _, m := range cursorMessages {
		names = append(names, m.name)
		require.NotNil(t, m.apply, m.name)
		if m.verdict != nil {
			require.NotNil(t, m.check, "%s: an update judges what a signal's verdict records", m.name)
		}
	}
	require.Equal(t, []string{api.SignalPause, api.SignalResume, api.SignalReprocess, api.SignalConfig}, names,
		"signals are taken in this order when several wait; v0.1 took them so")
}
