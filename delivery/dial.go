package delivery

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ec2MetadataV6 is the EC2 instance metadata service's IPv6 address.
var ec2MetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// deliveryDialer connects senders to their destinations. Config refuses
// link-local hosts by address (config/plaintext.go); this refuses them
// once a name is resolved too, so a destination whose name resolves to a
// cloud metadata address (169.254.169.254, fd00:ec2::254) never receives
// a token or orders.
func deliveryDialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: refuseLinkLocal}
}

// refuseLinkLocal is a net.Dialer Control: it runs for each resolved
// address before the connection is made.
func refuseLinkLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	ip = ip.Unmap()
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip == ec2MetadataV6 {
		return fmt.Errorf("refused to connect to %s: a link-local address (cloud metadata lives there)", ip)
	}
	return nil
}
