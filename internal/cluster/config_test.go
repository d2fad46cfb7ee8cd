package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/dynamicconfig"
)

// TestBuildConfigTurnsFairnessOn: the production-shaped server honours the
// fairness keys, as a cluster serving ordersync should
// (deploy/README.md, "Fairness across accounts"), and otherwise keeps the
// server's defaults (4 partitions per task queue).
func TestBuildConfigTurnsFairnessOn(t *testing.T) {
	o := Options{Postgres: Postgres{Addr: "127.0.0.1:5432", User: "temporal", Database: "temporal", VisibilityDatabase: "temporal_visibility"}}
	dc, ok := buildConfig(&o).DynamicConfig.(dynamicconfig.StaticClient)
	require.True(t, ok)
	require.Equal(t, true, dc[dynamicconfig.MatchingEnableFairness.Key()])
	require.NotContains(t, dc, dynamicconfig.MatchingNumTaskqueueReadPartitions.Key())
}
