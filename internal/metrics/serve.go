package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server serves /metrics for one process.
type Server struct {
	srv  *http.Server
	addr string
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves the
// registry at /metrics and the workers' readiness at /readyz. It fails at once when the address is taken, so a
// second worker on one host is told to pick another ORDERSYNC_METRICS_ADDRESS
// instead of running without metrics.
func (r *Recorder) Serve(addr string, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s (set ORDERSYNC_METRICS_ADDRESS, empty disables): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.Handler())
	// /readyz: 200 once every task queue of this process is polled (see
	// Readiness); orchestrators gate rollouts on it.
	mux.Handle("/readyz", r.readiness)
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr().String(),
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("metrics server stopped", "error", err)
		}
	}()
	return s, nil
}

// Addr is the address really listened on.
func (s *Server) Addr() string { return s.addr }

// URL is the metrics endpoint's URL.
func (s *Server) URL() string { return "http://" + s.addr + "/metrics" }

// Close stops serving; a scrape in progress gets a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
