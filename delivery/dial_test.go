package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/natstest"
)

// A destination whose name resolves to a link-local (cloud metadata)
// address is refused at connect time, before anything is sent; config
// refuses such addresses only where they are written as addresses.
func TestDeliveryDialerRefusesLinkLocal(t *testing.T) {
	d := deliveryDialer(time.Second)
	for _, addr := range []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "[fe80::1]:4222"} {
		_, err := d.Dial("tcp", addr)
		require.ErrorContains(t, err, "link-local address", addr)
	}
	url := natstest.Start(t)
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "nats://"))
	require.NoError(t, err, "loopback is fine")
	c.Close()
}
