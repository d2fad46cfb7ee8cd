package connectors

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBulkAddressGuard: the file client reaches public addresses only;
// the simulator's opt-in adds loopback at the endpoint's port, nothing
// else.
func TestBulkAddressGuard(t *testing.T) {
	strict := bulkAddressGuard{}
	sim := bulkAddressGuard{loopbackPort: "8780"}
	for _, tc := range []struct {
		ip, port  string
		strict    bool // reachable without the opt-in
		simulator bool // reachable with it
	}{
		{"8.8.8.8", "443", true, true},
		{"2606:4700::1111", "443", true, true},
		{"127.0.0.1", "8780", false, true},
		{"127.0.0.1", "27999", false, false},
		{"::1", "8780", false, true},
		{"::ffff:127.0.0.1", "27999", false, false},
		{"10.0.0.1", "443", false, false},
		{"172.16.5.4", "443", false, false},
		{"192.168.1.1", "443", false, false},
		{"169.254.169.254", "80", false, false},
		{"::ffff:169.254.169.254", "80", false, false},
		{"fe80::1", "443", false, false},
		{"fd00:ec2::254", "443", false, false},
		{"0.0.0.0", "443", false, false},
		{"::", "443", false, false},
		{"100.100.100.200", "80", false, false},
		{"64:ff9b::a9fe:a9fe", "80", false, false},
		{"224.0.0.1", "443", false, false},
		{"255.255.255.255", "443", false, false},
	} {
		ip := netip.MustParseAddr(tc.ip)
		require.Equal(t, tc.strict, strict.refuse(ip, tc.port) == "", "%s:%s without the opt-in", tc.ip, tc.port)
		require.Equal(t, tc.simulator, sim.refuse(ip, tc.port) == "", "%s:%s with the opt-in", tc.ip, tc.port)
	}
}
