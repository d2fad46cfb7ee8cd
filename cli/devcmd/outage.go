package devcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// The demo's failing account: the simulator's shop DemoOutageShop answers
// 503 to every request for one hour of its history (30 to 29 hours before
// the simulator's start) during the first DemoOutageFor of the process.
// Its slices in that hour fail all their retries and are dead-lettered, so
// `ordersync dlq list` and the deadletter/sim-umbrella queries have
// something to show in `make run`; once the outage is over, the
// dead-letter workflow's automatic retry (5 minutes, then 30, after the
// slice failed) fetches them and the entries go.
const (
	DemoOutageShop = "umbrella"
	DemoOutageFor  = 10 * time.Minute
)

// outage answers 503 to a shop's list requests that overlap [from, to)
// until the outage ends, and passes everything else on.
type outage struct {
	shop     string
	from, to time.Time
	until    time.Time
	now      func() time.Time
	next     http.Handler
}

func (o outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/shops/"+o.shop+"/orders" && o.now().Before(o.until) {
		q := r.URL.Query()
		from, err1 := time.Parse(time.RFC3339Nano, q.Get("updated_from"))
		to, err2 := time.Parse(time.RFC3339Nano, q.Get("updated_to"))
		if err1 == nil && err2 == nil && from.Before(o.to) && o.from.Before(to) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(
				"demo outage: orders updated %s..%s cannot be read until %s (ordersync dev plays it)",
				o.from.Format(time.RFC3339), o.to.Format(time.RFC3339), o.until.Format(time.RFC3339))})
			return
		}
	}
	o.next.ServeHTTP(w, r)
}

// demoServer is the simulator behind the demo outage.
type demoServer struct {
	URL string
	srv *http.Server
}

func (d *demoServer) Close() error { return d.srv.Close() }

// serveDemo serves h on listen, as sim.Server.Start does.
func serveDemo(listen string, h http.Handler) (*demoServer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return &demoServer{URL: "http://" + net.JoinHostPort(host, port), srv: srv}, nil
}
