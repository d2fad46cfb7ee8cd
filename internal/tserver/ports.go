package tserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Pick, as a port in Options, lets Start pick a free port, and pick again
// when another process takes it before the server binds it. A port of 0
// means the same, except for the Web UI's (0: no UI).
const Pick = -1

// PortInUseError is a port the server could not listen on.
type PortInUseError struct {
	// What the port is for: "frontend gRPC", "Web UI", "metrics",
	// "history gRPC", "history membership", ...
	What string
	IP   string
	Port int
	// Picked says Start picked the port (Pick); otherwise the caller chose it.
	Picked bool
	// Err is the listener's error text.
	Err string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d on %s (%s) is not free: %s", e.Port, e.IP, e.What, e.Err)
}

// InUse says whether the port is taken (rather than, say, not ours to bind).
func (e *PortInUseError) InUse() bool {
	return strings.Contains(e.Err, "address already in use")
}

// PortPicker picks a free port on ip.
type PortPicker func(ip string) (int, error)

// namedPort is one port of Options, by what it is for.
type namedPort struct {
	what string
	p    *int
}

// ports lists o's ports; the UI's only when there is a UI.
func (o *Options) ports() []namedPort {
	ps := []namedPort{
		{"frontend gRPC", &o.FrontendPort},
		{"frontend membership", &o.Ports.FrontendMembership},
		{"history gRPC", &o.Ports.History},
		{"history membership", &o.Ports.HistoryMembership},
		{"matching gRPC", &o.Ports.Matching},
		{"matching membership", &o.Ports.MatchingMembership},
		{"worker gRPC", &o.Ports.Worker},
		{"worker membership", &o.Ports.WorkerMembership},
		{"metrics", &o.Ports.Metrics},
	}
	if o.UIPort != 0 {
		ps = append(ps, namedPort{"Web UI", &o.UIPort})
	}
	return ps
}

// resolve is o with every Pick replaced by a free port, no two alike, and
// which of the ports were picked.
func resolve(o Options, pick PortPicker) (Options, map[string]bool, error) {
	picked := map[string]bool{}
	taken := map[int]bool{}
	for _, np := range o.ports() {
		if *np.p > 0 {
			taken[*np.p] = true
		}
	}
	for _, np := range o.ports() {
		if *np.p != Pick && (*np.p != 0 || np.what == "Web UI") { // a service port of 0 is picked too
			continue
		}
		for tries := 0; ; tries++ {
			p, err := pick(o.IP)
			if err != nil {
				return o, nil, fmt.Errorf("pick a port for the %s: %w", np.what, err)
			}
			if !taken[p] {
				*np.p, taken[p], picked[np.what] = p, true, true
				break
			}
			if tries > 100 {
				return o, nil, fmt.Errorf("pick a port for the %s: the picker keeps answering ports already given", np.what)
			}
		}
	}
	for _, np := range o.ports() {
		if *np.p < 0 {
			return o, nil, fmt.Errorf("%s port %d: want a port, 0 or Pick", np.what, *np.p)
		}
	}
	return o, picked, nil
}

// inUse finds which of o's ports addr (host:port, as the server logs it)
// is, as an error; nil when it is none of them.
func inUse(o Options, picked map[string]bool, addr, errText string) *PortInUseError {
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil
	}
	for _, np := range o.ports() {
		if *np.p == port {
			return &PortInUseError{What: np.what, IP: o.IP, Port: port, Picked: picked[np.what], Err: errText}
		}
	}
	return nil
}

// checkChosen makes sure the ports the caller chose are free before the
// server binds them, so a taken one is reported as such, before anything
// starts. wait > 0 gives a port an earlier attempt of this Start bound
// that long to be released (a stopped server closes its listeners as it
// stops). An attempt abandoned inside the server's construction cannot be
// stopped (the server hands out nothing before NewServer returns) and may
// keep a chosen port for good: the error then says so.
func checkChosen(o Options, picked map[string]bool, wait time.Duration) error {
	for _, np := range o.ports() {
		if *np.p <= 0 || picked[np.what] {
			continue
		}
		addr := net.JoinHostPort(o.IP, strconv.Itoa(*np.p))
		deadline := time.Now().Add(wait)
		for {
			l, err := net.Listen("tcp", addr)
			if err == nil {
				l.Close()
				break
			}
			if !errors.Is(err, syscall.EADDRINUSE) || !time.Now().Before(deadline) {
				e := &PortInUseError{What: np.what, IP: o.IP, Port: *np.p, Err: err.Error()}
				if wait > 0 {
					e.Err += " (it was free when this start began: an earlier start-up attempt that had to be abandoned may hold it; start again)"
				}
				return e
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// FreePort picks a free port below 32768, outside the kernel's ephemeral
// range (32768 and up on Linux): the SQL membership table stores a
// service's port as a SMALLINT (a higher one makes the server die at start
// with "unable to initialize membership heartbeats"), and a port the
// kernel handed out as free can be taken by an outgoing connection's local
// port before the server binds it (a benchmark with thousands of
// connections saw ringpop die with "bind: address already in use").
// Another process may still take it before the server binds it: Start
// then picks again.
func FreePort(ip string) (int, error) {
	const lo, hi = 20000, 32767
	start := lo + rand.IntN(hi-lo)
	for i := range hi - lo {
		port := lo + (start-lo+i)%(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d on %s", lo, hi, ip)
}
