package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer is a TCP (layer 4) load balancer in front of several server
// nodes' frontends, as a production deployment puts one (a cloud load
// balancer, a Kubernetes Service) in front of its frontend pods. Clients
// dial one address and keep it: each connection goes to the next frontend
// that accepts one, round robin; when a node dies, the connections through
// it close, the gRPC clients (workers, the CLI, the Web UI) reconnect, and
// the new connections go to the nodes still alive. A frontend that refused
// a connection is skipped for a while (a passive health check), so a dead
// node costs one refused dial, not one per connection.
type Balancer struct {
	ln   net.Listener
	next atomic.Uint64

	mu       sync.Mutex
	backends []string
	conns    map[net.Conn]struct{}
	down     map[string]time.Time // frontend -> skipped until
	closed   bool
	wg       sync.WaitGroup
}

// Balancer timings: how long a dial to a frontend may take, and how long a
// frontend that refused one is skipped while another is up.
const (
	balancerDialTimeout = 2 * time.Second
	balancerSkipFor     = 5 * time.Second
)

// StartBalancer listens on listen (host:port; port 0 takes one from the
// kernel) and forwards every connection to one of frontends. With none
// yet (the nodes need the balancer's address before they start), a
// connection is closed at once until SetFrontends names some.
func StartBalancer(listen string, frontends []string) (*Balancer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	b := &Balancer{ln: ln, conns: map[net.Conn]struct{}{}, down: map[string]time.Time{}}
	b.SetFrontends(frontends)
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

// Addr is the address clients dial.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// SetFrontends replaces the addresses it forwards new connections to.
func (b *Balancer) SetFrontends(frontends []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append([]string(nil), frontends...)
}

// Frontends are the addresses it forwards to.
func (b *Balancer) Frontends() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.backends...)
}

// Close stops accepting and closes every forwarded connection.
func (b *Balancer) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	err := b.ln.Close()
	b.wg.Wait()
	return err
}

func (b *Balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			b.mu.Lock()
			closed := b.closed
			b.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: clients dial again, and
			// accepting may work in a moment.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !b.track(c) {
			c.Close()
			return
		}
		b.wg.Add(1)
		go b.forward(c)
	}
}

// track notes an open connection so Close can close it; false once closed.
func (b *Balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Balancer) untrack(c net.Conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// forward joins client to a frontend until either side closes.
func (b *Balancer) forward(client net.Conn) {
	defer b.wg.Done()
	defer b.untrack(client)
	defer client.Close()
	server, err := b.dial()
	if err != nil {
		return // the client sees its connection closed and dials again
	}
	if !b.track(server) {
		server.Close()
		return
	}
	defer b.untrack(server)
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done // one side ended: end both (gRPC does not half-close)
}

// dial connects to the next frontend round robin, skipping those that
// refused lately unless every one did.
func (b *Balancer) dial() (net.Conn, error) {
	backends := b.Frontends()
	n := len(backends)
	if n == 0 {
		return nil, errors.New("load balancer: no frontend to forward to yet")
	}
	start := int(b.next.Add(1) % uint64(n))
	var last error
	tried := make([]bool, n)
	for pass := 0; pass < 2; pass++ {
		for i := range n {
			j := (start + i) % n
			addr := backends[j]
			if tried[j] || (pass == 0 && b.skipped(addr)) {
				continue
			}
			tried[j] = true
			c, err := net.DialTimeout("tcp", addr, balancerDialTimeout)
			if err == nil {
				b.setDown(addr, time.Time{})
				return c, nil
			}
			last = err
			b.setDown(addr, time.Now().Add(balancerSkipFor))
		}
	}
	return nil, fmt.Errorf("load balancer: no frontend accepts a connection: %w", last)
}

func (b *Balancer) skipped(addr string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Now().Before(b.down[addr])
}

func (b *Balancer) setDown(addr string, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until.IsZero() {
		delete(b.down, addr)
	} else {
		b.down[addr] = until
	}
}
