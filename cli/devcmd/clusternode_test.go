package devcmd

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/cluster"
)

// TestServerNodePortsNeverCollide: with the default --port and up to
// maxServerNodes nodes, no two ports of the balancer's block and the
// nodes' blocks are alike, and every membership port fits the membership
// table's SMALLINT; --port 0 leaves every node port to be picked.
func TestServerNodePortsNeverCollide(t *testing.T) {
	const frontend = 7233
	seen := map[int]string{}
	add := func(what string, port int) {
		t.Helper()
		prev, dup := seen[port]
		require.False(t, dup, "port %d is both %s and %s", port, prev, what)
		seen[port] = what
	}
	add("load balancer", frontend)
	for _, p := range nodeListenPorts(frontend, maxServerNodes) {
		_, portText, err := net.SplitHostPort(p.addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(portText)
		require.NoError(t, err)
		add(p.what, port)
	}
	require.Len(t, seen, 1+9*maxServerNodes)
	for n := 1; n <= maxServerNodes; n++ {
		p := cluster.StandardPorts(nodePort(frontend, n))
		for _, m := range []int{p.FrontendMembership, p.HistoryMembership, p.MatchingMembership, p.WorkerMembership} {
			require.Less(t, m, 32768, "node %d: a membership port above SMALLINT", n)
		}
	}
	require.Empty(t, nodeListenPorts(0, 2), "--port 0: every node port is picked, none checked up front")
	require.Equal(t, -1, nodePort(0, 1))
}
