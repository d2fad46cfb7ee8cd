package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/orderops"
)

// MaxBody bounds a request body (an apply's: config.MaxFileSize). One
// platform's settings are at most accounts.MaxSettingsSize once built.
const MaxBody = 1 << 20

// maxDepth bounds the nesting of a JSON body: settings are at most three
// levels deep (options may nest a little more); a deeply nested body is an
// attack on the decoder, not a platform.
const maxDepth = 16

// writeTimeout bounds a write once started, whether or not the caller
// still waits (an apply of thousands of platforms starts a cursor each).
const writeTimeout = 10 * time.Minute

// Options configure a Handler.
type Options struct {
	// Token is the bearer token every request but /healthz must carry.
	Token string
	// Logger receives one line per failed request (default: discard).
	Logger *slog.Logger
	// Orders serves the order operations under /v1/orders (orders.go);
	// nil answers them 501.
	Orders *orderops.Service
}

// Handler serves the HTTP API over an accounts.Service; its Registry
// answers the reads.
type Handler struct {
	svc   *accounts.Service
	token [sha256.Size]byte
	log   *slog.Logger
	mux   *http.ServeMux
	ops   *orderops.Service
}

// route is one endpoint: docs/openapi.yaml lists exactly these.
type route struct {
	method, path string
	public       bool     // no token needed
	params       []string // the query parameters it takes; others are refused
	serve        func(w http.ResponseWriter, r *http.Request, q map[string]string) error
}

// New builds the handler. It refuses an empty or short token: an API
// without one would let anyone on the network onboard accounts.
func New(svc *accounts.Service, opts Options) (*Handler, error) {
	if len(opts.Token) < config.MinAPITokenLength {
		return nil, fmt.Errorf("httpapi: the bearer token must be at least %d characters", config.MinAPITokenLength)
	}
	if svc == nil || svc.Registry == nil || svc.Engine == nil {
		return nil, fmt.Errorf("httpapi: a service with a registry and an engine is required")
	}
	h := &Handler{svc: svc, token: sha256.Sum256([]byte(opts.Token)), log: opts.Logger, mux: http.NewServeMux(), ops: opts.Orders}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, rt := range h.routes() {
		h.mux.Handle(rt.method+" "+rt.path, h.wrap(rt))
	}
	return h, nil
}

func (h *Handler) routes() []route {
	return append([]route{
		{method: http.MethodGet, path: "/healthz", public: true, serve: h.health},
		{method: http.MethodGet, path: "/v1/platforms", params: []string{"state", "kind", "task_queue", "after", "limit"}, serve: h.list},
		{method: http.MethodPost, path: "/v1/platforms", params: []string{"reuse_removed", "paused"}, serve: h.add},
		{method: http.MethodPost, path: "/v1/platforms:apply", params: []string{"prune", "dry_run", "reuse_removed", "discard_dead_letters"}, serve: h.apply},
		{method: http.MethodGet, path: "/v1/platforms/{name}", serve: h.get},
		{method: http.MethodPatch, path: "/v1/platforms/{name}", params: []string{"revision"}, serve: h.edit},
		{method: http.MethodDelete, path: "/v1/platforms/{name}", params: []string{"discard_dead_letters"}, serve: h.remove},
		{method: http.MethodPost, path: "/v1/platforms/{name}/pause", serve: h.pause},
		{method: http.MethodPost, path: "/v1/platforms/{name}/resume", serve: h.resume},
	}, h.orderRoutes()...)
}

// ServeHTTP checks the token before routing, so an unauthenticated
// caller learns nothing, not even which paths exist.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path != "/healthz" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ordersync"`)
		h.write(w, r, &apiError{Status: http.StatusUnauthorized,
			Message: "missing or wrong bearer token: send Authorization: Bearer <token> (the token serve was started with)"})
		return
	}
	handler, pattern := h.mux.Handler(r)
	if pattern == "" {
		// Not a route, or not this method: the mux knows which (404 or
		// 405 with Allow); answer in JSON like every other error.
		rec := &statusRecorder{header: http.Header{}}
		handler.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		status := rec.status
		if status == 0 {
			status = http.StatusNotFound
		}
		h.write(w, r, &apiError{Status: status, Message: fmt.Sprintf("%s %s: %s", r.Method, clean(r.URL.Path, 200), strings.ToLower(http.StatusText(status)))})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// authorized compares the bearer token in constant time; hashing both
// sides first hides the token's length too.
func (h *Handler) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}

func (h *Handler) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			// A write is the registry first, then Temporal: a caller that
			// hangs up in between must not leave a registered platform
			// whose cursor never started. Writes finish on their own
			// clock, bounded.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		q, err := query(r, rt.params...)
		if err == nil {
			err = rt.serve(w, r, q)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if r.Method != http.MethodGet {
			// An audit line per change: what was asked, of which platform.
			h.log.Info("accounts changed", "method", r.Method, "path", clean(r.URL.Path, textclip.ValueMax),
				"query", clean(r.URL.RawQuery, textclip.ValueMax), "remote", r.RemoteAddr)
		}
	})
}

func (h *Handler) health(w http.ResponseWriter, _ *http.Request, _ map[string]string) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// statusRecorder keeps what the mux's own 404/405 handler answers.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.status = code }

// decodeBody reads a bounded body holding one JSON object (nothing after
// it), numbers kept exact, nesting bounded. An empty body is an empty
// object when allowEmpty.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool) (map[string]any, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("the body is larger than %d bytes", tooLarge.Limit)}
	case err != nil:
		return nil, &apiError{Status: http.StatusBadRequest, Message: "read the body: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if allowEmpty {
			return map[string]any{}, nil
		}
		return nil, badRequest("", "the body is empty; want a JSON object")
	}
	if d := depth(b); d > maxDepth {
		return nil, badRequest("", fmt.Sprintf("the body nests %d levels deep; the limit is %d", d, maxDepth))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		reason := "the body must be one JSON object"
		if err != nil {
			reason += ": " + err.Error()
		}
		return nil, badRequest("", reason)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("", "the body holds more than one JSON value")
	}
	return m, nil
}

// depth is the deepest nesting of JSON arrays and objects in b, strings
// skipped, so a bomb is refused before it is decoded.
func depth(b []byte) int {
	deepest, d, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if d++; d > deepest {
				deepest = d
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// query returns r's query, refusing parameters an endpoint does not know
// (a typo such as ?prun=true must not be ignored) and repeated ones.
func query(r *http.Request, allowed ...string) (map[string]string, error) {
	q := r.URL.Query()
	out := make(map[string]string, len(q))
	for k, vs := range q {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		switch {
		case !known:
			return nil, badRequest(k, fmt.Sprintf("unknown query parameter; this endpoint takes %s", orNone(allowed)))
		case len(vs) > 1:
			return nil, badRequest(k, "given more than once")
		}
		out[k] = vs[0]
	}
	return out, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// writeJSON writes v indented, without HTML escaping (<token> reads as
// itself; control characters are still escaped by encoding/json).
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
	return nil
}
