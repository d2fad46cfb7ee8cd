package tserver

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// startAttempts bounds how often Start picks fresh ports after another
// process took a picked one before the server bound it.
const startAttempts = 5

// releaseWait is how long a later attempt waits for a port the caller
// chose to be released by the earlier attempt it stopped (see
// checkChosen).
const releaseWait = 5 * time.Second

// Start starts the server, then its Web UI; it returns once the frontend
// accepts connections. Ports set to Pick are picked free; when another
// process takes one before the server binds it, Start starts again on
// freshly picked ports (up to startAttempts times) instead of the server
// ending the process. A port the caller chose that is not free is a
// *PortInUseError naming it. Other errors are the server's own, for the
// caller to say which server it was.
func Start(o Options) (*Server, error) {
	pick := o.PickPort
	if pick == nil {
		pick = FreePort
	}
	var last error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		resolved, picked, err := resolve(o, pick)
		if err != nil {
			return nil, err
		}
		wait := time.Duration(0)
		if attempt > 1 {
			wait = releaseWait
		}
		if err := checkChosen(resolved, picked, wait); err != nil {
			return nil, err
		}
		s, err := startOnce(resolved, picked)
		if err == nil {
			return s, nil
		}
		var inUse *PortInUseError
		if !errors.As(err, &inUse) || !inUse.Picked || !inUse.InUse() {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("%d start-ups in a row found a port they had picked taken by the time the server bound it; the last: %w", startAttempts, last)
}

// startOnce makes one start-up on resolved ports.
func startOnce(o Options, picked map[string]bool) (*Server, error) {
	base, err := buildLogger(o.LogLevel, o.LogFile)
	if err != nil {
		return nil, err
	}
	st := &fatalState{}
	logger := &fatalLogger{Logger: base, st: st}
	failure := func(err error) error {
		if r := st.first(); r != nil {
			if e := inUse(o, picked, r.address, r.err); e != nil && strings.Contains(r.msg, "listener") {
				return e
			}
			if err == error(r) {
				return fmt.Errorf("the Temporal server gave up starting: %w", r)
			}
			return fmt.Errorf("%w (the server said: %s)", err, r)
		}
		return err
	}
	var srv startStopper
	if err := guarded(st, func() error {
		var err error
		srv, err = newTemporal(o, logger)
		return err
	}); err != nil {
		return nil, failure(err)
	}
	if err := guarded(st, srv.Start); err != nil {
		// What started before the failure cannot be reached to stop (the
		// server's Start does not undo it); Stop is what there is.
		go func() { _ = srv.Stop() }()
		return nil, failure(err)
	}
	if e := st.metricsNotServed(o, picked); e != nil {
		_ = srv.Stop()
		return nil, e
	}
	st.setRunning()
	s := &Server{opts: o, temporal: srv}
	if o.UIPort > 0 {
		if err := s.startUI(); err != nil {
			_ = srv.Stop()
			if e := inUse(o, picked, net.JoinHostPort(o.IP, strconv.Itoa(o.UIPort)), err.Error()); e != nil {
				return nil, e
			}
			return nil, err
		}
	}
	return s, nil
}

// startStopper is the part of temporal.Server a Server uses.
type startStopper interface {
	Start() error
	Stop() error
}

// Warn notes a metrics listener that could not bind: the server's metrics
// reporter only warns about it, in a goroutine of its own, and serves
// nothing.
func (l *fatalLogger) Warn(msg string, tags ...tag.Tag) {
	if msg == "error in prometheus reporter" {
		for _, t := range tags {
			if t.Key() == "error" {
				l.st.noteMetrics(fmt.Sprint(t.Value()))
			}
		}
	}
	l.Logger.Warn(msg, tags...)
}

func (st *fatalState) noteMetrics(err string) {
	if !strings.Contains(err, "listen") && !strings.Contains(err, "bind") {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.metricsErr == "" {
		st.metricsErr = err
	}
}

// metricsNotServed is the metrics port as an error when its listener
// could not bind during the start.
func (st *fatalState) metricsNotServed(o Options, picked map[string]bool) *PortInUseError {
	st.mu.Lock()
	err := st.metricsErr
	st.mu.Unlock()
	if err == "" {
		return nil
	}
	return &PortInUseError{What: "metrics", IP: o.IP, Port: o.Ports.Metrics, Picked: picked["metrics"], Err: err}
}

// startUI starts the server's Web UI, talking to its frontend.
func (s *Server) startUI() error {
	ui, err := StartUI(s.opts.IP, s.opts.UIPort, s.FrontendAddress(), s.opts.UINamespace)
	if err != nil {
		return err
	}
	s.ui = ui
	return nil
}

// UI is a Web UI served apart from any one server: in front of several
// nodes it talks to the address that reaches them all, so it outlives any
// one of them.
type UI struct {
	ui *uiserver.Server
}

// Stop stops serving the UI.
func (u *UI) Stop() { u.ui.Stop() }

// StartUI serves the Web UI on ip:port, talking to the Temporal frontend
// at frontend, opening namespace. It serves on a listener bound here: the
// UI server's own Start binds its port itself and, when it cannot, ends
// the process (echo's Logger.Fatal), so a taken UI port would end
// `ordersync dev` or a test binary with no word.
func StartUI(ip string, port int, frontend, namespace string) (*UI, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ui := uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: frontend,
		Host:                ip,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		DisableNewsFetch:    true, // the machine may have no internet; the UI must not wait on it
		CORS:                uiconfig.CORS{CookieInsecure: true},
		// No banner and no access-log line per request on our stdout: they
		// drowned the worker's log under `ordersync dev`.
		HideLogs: true,
	}))
	e, err := uiEcho(ui)
	if err != nil {
		ln.Close()
		return nil, err
	}
	e.Listener = ln // echo serves on a listener it is given rather than binding
	go func() { _ = e.Start(addr) }()
	return &UI{ui: ui}, nil
}

// uiEcho is the UI server's HTTP server (its unexported httpServer): the
// UI server offers no way to hand it a listener. TestUIServerHoldsAnEcho
// fails when an upgrade of the UI server moves it.
func uiEcho(ui *uiserver.Server) (*echo.Echo, error) {
	f := reflect.ValueOf(ui).Elem().FieldByName("httpServer")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*echo.Echo)(nil)) {
		return nil, errors.New("the Temporal UI server no longer holds an *echo.Echo in httpServer: update internal/tserver's startUI")
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*echo.Echo), nil
}

var _ log.Logger = (*fatalLogger)(nil)
