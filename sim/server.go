package sim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Simulator plays the shops of one platform. It is safe for concurrent use.
type Simulator struct {
	cfg    Config
	start  int64 // µs; the backlog ends here and live creation begins
	last   atomic.Int64
	shops  []*shop
	byName map[string]*shop
	// auth holds the OAuth side: apps, issued tokens, token faults (oauth.go).
	auth *authority
	// amazonLapse is when ExpireAccessTokens last lapsed the Amazon
	// surface's tokens (µs; 0 never), for stateless tokens it never recorded.
	amazonLapse atomic.Int64
	// webhooks holds the Shopify surface's subscriptions and deliveries (webhooks.go).
	webhooks *webhookHub
}

// shop is one account: its world plus the request-side state, all guarded by mu.
type shop struct {
	name     string
	token    []byte
	hash     uint64
	currency string

	mu        sync.Mutex
	world     *world
	bucket    bucket
	peak      peakRate
	faults    Faults
	faultRand rng
	points    pointBucket // the Shopify surface's query cost bucket
	bulk      []*bulkJob  // the Shopify surface's bulk operations, by id-1
	bulkCfg   BulkConfig
	stats     ShopStats // request counters; world counters are filled in by Stats
}

// New builds a simulator and its backlog. The clock is read once here: that
// instant is the start, with History orders before it and live orders after.
func New(cfg Config) (*Simulator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := cfg.Clock().UnixMicro()
	if !cfg.Start.IsZero() {
		if cfg.Start.After(cfg.Clock()) {
			return nil, fmt.Errorf("simulator start %s is in the future", cfg.Start.Format(time.RFC3339))
		}
		start = cfg.Start.UnixMicro()
	}
	s := &Simulator{cfg: cfg, start: start, byName: map[string]*shop{}, auth: newAuthority(cfg)}
	s.auth.staticToken = func(shop, token string) bool {
		sh, ok := s.byName[shop]
		return ok && len(sh.token) > 0 && subtle.ConstantTimeCompare([]byte(token), sh.token) == 1
	}
	s.last.Store(s.start)
	for _, sc := range cfg.Shops {
		h := hashString(sc.Name)
		cost := cfg.ShopifyCost
		if sc.ShopifyCost != nil {
			cost = *sc.ShopifyCost
		}
		wcfg := cfg
		if sc.LiveRate > 0 {
			wcfg.LiveRate = sc.LiveRate
		}
		if sc.HistoryOrders > 0 {
			wcfg.HistoryOrders = sc.HistoryOrders
		}
		sh := &shop{
			name:      sc.Name,
			token:     []byte(sc.Token),
			hash:      h,
			currency:  currencies[h%uint64(len(currencies))],
			world:     newWorld(wcfg, sc.Name, s.start),
			bucket:    bucket{rl: cfg.RateLimit},
			points:    pointBucket{limit: cost},
			bulkCfg:   cfg.ShopifyBulk,
			faults:    cfg.Faults,
			faultRand: newRNG(uint64(cfg.Seed), h^0xfa17),
		}
		s.shops = append(s.shops, sh)
		s.byName[sc.Name] = sh
	}
	if s.webhooks, err = newWebhookHub(s, cfg.Webhooks); err != nil {
		return nil, err
	}
	return s, nil
}

// now reads the clock in µs, never going back: a clock that steps backwards
// must not un-happen orders that were already served.
func (s *Simulator) now() int64 {
	t := s.cfg.Clock().UnixMicro()
	for {
		last := s.last.Load()
		if t <= last {
			return last
		}
		if s.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

// Now is the simulator's current time (its clock, never going back).
func (s *Simulator) Now() time.Time { return time.UnixMicro(s.now()).UTC() }

// Started is the instant New read the clock: the backlog lies before it.
func (s *Simulator) Started() time.Time { return time.UnixMicro(s.start).UTC() }

// Config returns the configuration New was given, defaults filled in
// (SetFaults and SetRateLimit changes are not reflected).
func (s *Simulator) Config() Config { return s.cfg }

// Handler serves the platform API and the admin API.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /shops/{shop}/orders", s.handleList)
	mux.HandleFunc("GET /shops/{shop}/orders/{id}", s.handleGet)
	mux.HandleFunc("POST /shops/{shop}/amazon/auth/o2/token", s.handleAmazonToken)
	mux.HandleFunc("GET /shops/{shop}/amazon/apps/authorize/consent", s.handleAmazonConsent)
	mux.HandleFunc("GET /shops/{shop}/admin/oauth/authorize", s.handleShopifyAuthorize)
	mux.HandleFunc("POST /shops/{shop}/admin/oauth/access_token", s.handleShopifyToken)
	mux.HandleFunc("GET /shops/{shop}/admin/oauth/access_scopes.json", s.handleShopifyScopes)
	mux.HandleFunc("GET /shops/{shop}/admin/api/{version}/shop.json", s.handleShopifyShop)
	mux.HandleFunc("GET /shops/{shop}/amazon/orders/2026-01-01/orders", s.handleAmazonOrders)
	mux.HandleFunc("GET /shops/{shop}/amazon/orders/2026-01-01/orders/{orderId}", s.handleAmazonOrder)
	mux.HandleFunc("POST /shops/{shop}/admin/api/{version}/graphql.json", s.handleShopifyGraphQL)
	mux.HandleFunc("GET /bulk-results/{shop}/{file}", s.handleBulkResult)
	mux.HandleFunc("GET /admin/shops/{shop}/truth", s.handleTruth)
	mux.HandleFunc("GET /admin/stats", s.handleStats)
	s.adminOAuthRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// StopCreating ends live order creation and drops every update after now,
// so the world settles and a test can let ordersync catch up and compare.
// It returns the time from which nothing changes any more (now + Late: the
// last versions may still become visible until then).
func (s *Simulator) StopCreating() time.Time {
	now := s.now()
	quiet := now
	for _, sh := range s.shops {
		sh.mu.Lock()
		quiet = max(quiet, sh.world.stop(now))
		sh.mu.Unlock()
	}
	return time.UnixMicro(quiet).UTC()
}

// SetFaults changes the fault rates of every shop.
func (s *Simulator) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	if f.HangFor == 0 {
		f.HangFor = 30 * time.Second
	}
	for _, sh := range s.shops {
		sh.mu.Lock()
		sh.faults = f
		sh.mu.Unlock()
	}
	return nil
}

// SetRateLimit changes every shop's rate limit; RPS 0 lifts it.
func (s *Simulator) SetRateLimit(rl RateLimit) error {
	if err := rl.validate(); err != nil {
		return err
	}
	for _, sh := range s.shops {
		sh.mu.Lock()
		sh.bucket.set(rl)
		sh.mu.Unlock()
	}
	return nil
}

// bearerMatches checks the Authorization header in constant time.
func bearerMatches(r *http.Request, token []byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && len(token) > 0 && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), token) == 1
}

type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed"}`)
	}
	writeBody(w, status, b)
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// Server is a simulator listening on a TCP address.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:8780.
	URL string
	srv *http.Server
}

// Start serves the simulator on addr (e.g. "127.0.0.1:0" for a free port)
// until Close or Shutdown.
func (s *Simulator) Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen on %s: %w", addr, err)
	}
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("sim: listen address: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1" // ":8780" listens everywhere; clients should dial loopback
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return &Server{URL: "http://" + net.JoinHostPort(host, port), srv: srv}, nil
}

// ShopURL is the endpoint of one shop, as a platform's `endpoint` setting.
func (sv *Server) ShopURL(shop string) string { return sv.URL + "/shops/" + shop }

// Close stops the server at once, dropping hung requests.
func (sv *Server) Close() error { return sv.srv.Close() }

// Shutdown stops the server gracefully, waiting for requests in flight.
func (sv *Server) Shutdown(ctx context.Context) error { return sv.srv.Shutdown(ctx) }
