package tserver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildConfigOfANodeAmongSeveral: a node of several keeps the
// balancer's address as the cluster's in the cluster metadata (every node
// writes the same, so no start overwrites another's) and lets its system
// workers find a frontend through membership, not through its own
// frontend or the balancer; a server alone is configured as before.
func TestBuildConfigOfANodeAmongSeveral(t *testing.T) {
	alone := Options{IP: "127.0.0.1", FrontendPort: 7233}
	cfg := buildConfig(alone)
	require.Equal(t, "127.0.0.1:7233", cfg.ClusterMetadata.ClusterInformation[ClusterName].RPCAddress)
	require.Equal(t, "127.0.0.1:7233", cfg.PublicClient.HostPort)

	node := Options{IP: "127.0.0.1", FrontendPort: 7243, ClusterAddress: "127.0.0.1:7233"}
	cfg = buildConfig(node)
	require.Equal(t, "127.0.0.1:7233", cfg.ClusterMetadata.ClusterInformation[ClusterName].RPCAddress)
	require.Empty(t, cfg.PublicClient.HostPort, "the system workers reach a frontend through membership")
	require.Equal(t, "127.0.0.1", cfg.Global.Membership.BroadcastAddress)
	require.Equal(t, 7243, cfg.Services["frontend"].RPC.GRPCPort)
}
