package devcmd

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/internal/tserver"
)

// A port another process holds used to end `ordersync dev` with exit 1 and
// no word (the Temporal server's fatal log went to .ordersync/temporal.log):
// `temporal server start-dev` holds 7233 and 8233, the very defaults. Every
// port the command listens on is checked before anything starts, and a
// server that still finds one taken names it; either way the message says
// which flag or variable moves it.

// listenPort is one address the command listens on, with what moves it.
type listenPort struct {
	what string // "Temporal frontend (gRPC)", ...
	addr string // host:port
	// change is the flag or variable that moves it.
	change string
}

// listenPorts are the fixed addresses of f: the server's frontend and Web
// UI and, unless serverOnly, the simulator and the demo receiver, and the
// metrics endpoint when metrics is set. Ports 0 and empty addresses (off)
// are left out.
func listenPorts(app *cli.App, f stackFlags, serverOnly, metrics bool) []listenPort {
	ip := tserver.DefaultIP
	ps := []listenPort{{"Temporal frontend (gRPC)", net.JoinHostPort(ip, strconv.Itoa(f.frontendPort)), "--port"}}
	if f.uiPort > 0 {
		ps = append(ps, listenPort{"Temporal Web UI", net.JoinHostPort(ip, strconv.Itoa(f.uiPort)), "--ui-port (0: no Web UI)"})
	}
	if serverOnly {
		return ps
	}
	if f.simListen != "" {
		ps = append(ps, listenPort{"simulator", f.simListen, "--sim-listen"})
	}
	if f.rcvListen != "" {
		ps = append(ps, listenPort{"demo webhook receiver", f.rcvListen, `--receiver-listen ("": no receiver)`})
	}
	if a := app.Process.MetricsAddress; metrics && a != "" {
		ps = append(ps, listenPort{"metrics", a, `ORDERSYNC_METRICS_ADDRESS (127.0.0.1:0 picks a free port, "" turns metrics off)`})
	}
	return ps
}

// checkPorts fails with a message naming the first of ps another process
// holds, and what moves it.
func checkPorts(ps []listenPort) error {
	for _, p := range ps {
		if _, port, err := net.SplitHostPort(p.addr); err != nil || port == "0" {
			continue // not an address to check; the listener says what is wrong with it
		}
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return portTaken(p, err.Error())
		}
		l.Close()
	}
	return nil
}

// portTaken is the message for a port p that could not be listened on.
func portTaken(p listenPort, cause string) error {
	hint := ""
	if _, port, _ := net.SplitHostPort(p.addr); port == "7233" || port == "8233" {
		hint = " (`temporal server start-dev` listens on 7233 and 8233: is one running?)"
	}
	return fmt.Errorf("cannot listen on %s for the %s: %s%s; choose another with %s", p.addr, p.what, cause, hint, p.change)
}

// serverPortError turns a server's *tserver.PortInUseError into the
// message naming what moves the port; other errors pass unchanged.
// internalChange says what moves the services' internal ports.
func serverPortError(err error, ps []listenPort, internalChange string) error {
	var inUse *tserver.PortInUseError
	if !errors.As(err, &inUse) {
		return err
	}
	addr := net.JoinHostPort(inUse.IP, strconv.Itoa(inUse.Port))
	for _, p := range ps {
		if p.addr == addr {
			return portTaken(p, inUse.Err)
		}
	}
	return portTaken(listenPort{what: "Temporal " + inUse.What, addr: addr, change: internalChange}, inUse.Err)
}
