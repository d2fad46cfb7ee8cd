package tserver

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortStaysOutOfTheEphemeralRange: every port a server is given
// lies below 32768, where neither the membership table's SMALLINT nor an
// outgoing connection's local port can collide with it, and is free.
func TestFreePortStaysOutOfTheEphemeralRange(t *testing.T) {
	for range 50 {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p < 20000 || p >= 32768 {
			t.Fatalf("port %d is outside 20000-32767", p)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d was not free: %v", p, err)
		}
		l.Close()
	}
}
