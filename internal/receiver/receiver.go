package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// MaxBody bounds one delivery's body: 1,000 changes with their lines fit
// well inside.
const MaxBody = 32 << 20

// UploadBudget bounds the bytes of the bodies read at once, so memory
// stays bounded however many clients upload (30 uploads of 32 MB at once
// took the receiver to 2.1 GB; unsigned ones are now refused before their
// body is read, and signed-looking ones share this budget). An upload
// books its Content-Length (MaxBody when it has none); one that finds no
// room within UploadWait is answered 503 with Retry-After, which a sender
// retries. Real batches are far smaller (100 changes: about 100 KB), so
// many are read at once.
const UploadBudget = 2 * MaxBody

// UploadWait is how long a signed POST waits for room in UploadBudget.
const UploadWait = 5 * time.Second

// Timeouts of the receiver's http.Server (NewServer): a client that sends
// its headers or body slowly holds a connection (and an upload slot) for
// at most this long.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// NewServer is the http.Server to serve a Receiver with: reading headers
// and the whole request are bounded in time, and headers in size.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: 64 << 10}
}

// Receiver is an http.Handler for a webhook destination's POSTs, and GET
// /stats answers its Stats as JSON. It remembers every change it counted
// (one map entry each), so it suits a demo or a test, not years of
// traffic.
type Receiver struct {
	name     string
	verifier *Verifier

	uploadMu   sync.Mutex
	uploading  int64         // bytes booked by bodies being read (UploadBudget)
	uploadWait time.Duration // UploadWait; tests shorten it

	mu       sync.Mutex
	batches  map[string]bool           // webhook-ids processed
	seen     map[string]map[int64]bool // destination -> seqs counted
	stats    Stats
	platform map[string]int64
}

// Stats is what a Receiver counted.
type Stats struct {
	// Changes counts distinct changes (destination and seq) received.
	Changes int64 `json:"changes"`
	// Platforms counts them per platform.
	Platforms map[string]int64 `json:"platforms"`
	// Batches counts the batches processed (JetStream: messages);
	// Redelivered the batches (or changes within one) that came again and
	// were dropped.
	Batches     int64 `json:"batches"`
	Redelivered int64 `json:"redelivered"`
	// Rejected counts requests refused: bad signature or body.
	Rejected int64 `json:"rejected"`
	// Canonical counts the changes that carried a canonical order (every
	// payload but raw); CanonicalInvalid those whose canonical order does
	// not validate against order/schema/order.v1.json (a mapper bug worth
	// a look: the summary line names it).
	Canonical        int64 `json:"canonical"`
	CanonicalInvalid int64 `json:"canonical_invalid"`
	// LastSeq is the highest seq received.
	LastSeq int64     `json:"last_seq"`
	LastAt  time.Time `json:"last_at,omitzero"`
}

// New returns a receiver named name (in its summary lines) that checks
// signatures with the whsec_ secret.
func New(name, secret string) (*Receiver, error) {
	v, err := NewVerifier(secret)
	if err != nil {
		return nil, err
	}
	r := newCounter(name)
	r.verifier = v
	return r, nil
}

func newCounter(name string) *Receiver {
	return &Receiver{name: name, batches: map[string]bool{}, seen: map[string]map[int64]bool{}, platform: map[string]int64{},
		uploadWait: UploadWait}
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/stats") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.Stats())
		return
	}
	if req.Method != http.MethodPost || r.verifier == nil {
		w.Header().Set("Allow", "POST")
		http.Error(w, "POST a batch of changes (or GET /stats)", http.StatusMethodNotAllowed)
		return
	}
	// Everything that can be judged without the body is judged first, so
	// an unsigned, stale or oversized upload is refused before a byte of
	// its body is read.
	if err := r.verifier.CheckHeaders(req.Header); err != nil {
		r.reject()
		w.Header().Set("Connection", "close") // do not read the body to reuse the connection
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if req.ContentLength > MaxBody {
		r.reject()
		w.Header().Set("Connection", "close")
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	size := int64(MaxBody)
	if req.ContentLength >= 0 {
		size = req.ContentLength
	}
	if !r.bookUpload(req, size) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		http.Error(w, "too many uploads at once; retry", http.StatusServiceUnavailable)
		return
	}
	defer r.releaseUpload(size)
	var body []byte
	var err error
	if req.ContentLength >= 0 {
		// Exactly the announced size (at most MaxBody, checked above; the
		// server reads no further than Content-Length): one allocation,
		// no doubling while growing.
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(req.Body, body)
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
	}
	if err != nil {
		r.reject()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if err := r.verifier.Verify(req.Header, body); err != nil {
		r.reject()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var b delivery.WebhookBatch
	if err := json.Unmarshal(body, &b); err != nil || b.ID != req.Header.Get("webhook-id") {
		r.reject()
		http.Error(w, "not an orders.changes batch, or its id is not the webhook-id", http.StatusBadRequest)
		return
	}
	r.record(b)
	w.WriteHeader(http.StatusNoContent)
}

// bookUpload books size bytes of UploadBudget, waiting up to uploadWait
// for room; false when none came free (or the client went away). A body
// of at most MaxBody always fits an empty budget.
func (r *Receiver) bookUpload(req *http.Request, size int64) bool {
	deadline := time.Now().Add(r.uploadWait)
	for {
		r.uploadMu.Lock()
		if r.uploading+size <= UploadBudget {
			r.uploading += size
			r.uploadMu.Unlock()
			return true
		}
		r.uploadMu.Unlock()
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-req.Context().Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *Receiver) releaseUpload(size int64) {
	r.uploadMu.Lock()
	r.uploading -= size
	r.uploadMu.Unlock()
}

func (r *Receiver) reject() {
	r.mu.Lock()
	r.stats.Rejected++
	r.mu.Unlock()
}

// record counts a batch's changes once each: a redelivered batch (same
// id) is dropped whole; a change seen in another batch (the sender
// re-batched after a settings change) is dropped by its seq.
func (r *Receiver) record(b delivery.WebhookBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batches[b.ID] {
		r.stats.Redelivered++
		return
	}
	r.batches[b.ID] = true
	r.stats.Batches++
	r.countLocked(b.Destination, b.Changes)
}

// countLocked counts changes not seen before from destination.
func (r *Receiver) countLocked(destination string, changes []store.Change) {
	seen := r.seen[destination]
	if seen == nil {
		seen = map[int64]bool{}
		r.seen[destination] = seen
	}
	for _, c := range changes {
		if seen[c.Seq] {
			r.stats.Redelivered++
			continue
		}
		seen[c.Seq] = true
		r.stats.Changes++
		if c.Order.Canonical != nil {
			r.stats.Canonical++
			if doc, err := json.Marshal(c.Order.Canonical); err != nil || order.ValidateCanonicalJSON(doc) != nil {
				r.stats.CanonicalInvalid++
			}
		}
		r.platform[c.Platform]++
		r.stats.LastSeq = max(r.stats.LastSeq, c.Seq)
	}
	r.stats.LastAt = time.Now()
}

// Stats returns a copy of the counts.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Platforms = maps.Clone(r.platform)
	return s
}

// Summary is one line: "demo-receiver: 1,234 changes received (sim-acme
// 600, sim-globex 634), last seq 1240".
func (r *Receiver) Summary() string {
	s := r.Stats()
	names := slices.Sorted(maps.Keys(s.Platforms))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + thousands(s.Platforms[n])
	}
	line := fmt.Sprintf("%s: %s changes received", r.name, thousands(s.Changes))
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	line += fmt.Sprintf(", last seq %d", s.LastSeq)
	if s.Redelivered > 0 {
		line += fmt.Sprintf(", %s redeliveries dropped", thousands(s.Redelivered))
	}
	if s.CanonicalInvalid > 0 {
		line += fmt.Sprintf(", %s canonical orders invalid under the schema", thousands(s.CanonicalInvalid))
	}
	if s.Rejected > 0 {
		line += fmt.Sprintf(", %s requests rejected (bad signature or body)", thousands(s.Rejected))
	}
	return line
}

// Report writes Summary to w every interval while the counts change, until
// ctx ends.
func (r *Receiver) Report(ctx context.Context, w io.Writer, every time.Duration) {
	var last Stats
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := r.Stats()
		if s.Changes != last.Changes || s.Redelivered != last.Redelivered || s.Rejected != last.Rejected {
			fmt.Fprintln(w, r.Summary())
			last = s
		}
	}
}

// thousands formats n with commas: 1234567 -> "1,234,567".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
