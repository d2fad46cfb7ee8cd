package devserver

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/dynamicconfig"
)

// TestSingleNodeDynamicConfigTurnsFairnessOn: without it the fairness keys
// ordersync's tasks carry are ignored and a shared queue is first come,
// first served; an override (the fairness benchmark's) replaces a key.
func TestSingleNodeDynamicConfigTurnsFairnessOn(t *testing.T) {
	dc := singleNodeDynamicConfig(nil)
	require.Equal(t, true, dc[dynamicconfig.MatchingEnableFairness.Key()])
	require.Equal(t, 1, dc[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()])

	dc = singleNodeDynamicConfig(dynamicconfig.StaticClient{
		dynamicconfig.MatchingEnableFairness.Key():             false,
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key(): 4,
	})
	require.Equal(t, false, dc[dynamicconfig.MatchingEnableFairness.Key()])
	require.Equal(t, 4, dc[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()])
	require.Equal(t, true, dc[dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key()], "keys not overridden stay")
}
