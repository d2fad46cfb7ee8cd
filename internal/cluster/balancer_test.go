package cluster

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// nameServer answers every connection with its name, then holds it open.
func nameServer(t *testing.T, name string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name + "\n"))
			go func() { // hold until the peer closes, or the listener's test ends
				_, _ = bufio.NewReader(c).ReadString('\n')
				c.Close()
			}()
		}
	}()
	return ln
}

func dialName(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return c, line[:len(line)-1]
}

// TestBalancerSpreadsAndSkipsADeadFrontend: connections go round robin to
// every frontend; once one is gone, every new connection reaches the one
// left, and a connection through the dead one is closed (so a gRPC client
// dials again) rather than left hanging.
func TestBalancerSpreadsAndSkipsADeadFrontend(t *testing.T) {
	a, b := nameServer(t, "a"), nameServer(t, "b")
	defer b.Close()
	lb, err := StartBalancer("127.0.0.1:0", []string{a.Addr().String(), b.Addr().String()})
	require.NoError(t, err)
	defer lb.Close()

	seen := map[string]int{}
	var conns []net.Conn
	for range 4 {
		c, name := dialName(t, lb.Addr())
		conns = append(conns, c)
		seen[name]++
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2}, seen, "round robin over both frontends")

	// a dies: its listener closes and its connections with it.
	a.Close()
	for _, c := range conns {
		c.Close()
	}
	for range 4 {
		c, name := dialName(t, lb.Addr())
		require.Equal(t, "b", name, "a dead frontend gets no new connection")
		c.Close()
	}
}

// TestBalancerClosesAConnectionWhenItsFrontendDies: the client side of a
// forwarded connection ends when the frontend's side does.
func TestBalancerClosesAConnectionWhenItsFrontendDies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	lb, err := StartBalancer("127.0.0.1:0", []string{ln.Addr().String()})
	require.NoError(t, err)
	defer lb.Close()
	c, err := net.Dial("tcp", lb.Addr())
	require.NoError(t, err)
	defer c.Close()
	server := <-accepted
	server.Close() // the node is gone
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the client's connection must close, not hang: %v", err)
}
