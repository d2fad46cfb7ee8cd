package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/internal/receiver"
	"github.com/ordersync/ordersync/store"
)

// The chaos run's destinations: every change the store accepts goes on to
// a webhook receiver in this process, which checks every signature,
// answers some deliveries with a 5xx and processes some without answering
// before the sender's timeout (so they come again), and to a JetStream
// stream on a real nats-server. The workers delivering to them are the
// ones the chaos kills, through the Temporal server restart. At the end
// each destination must hold every accepted change at least once, each
// order's changes first arriving in seq order, and after de-duplication by
// seq nothing missing and nothing extra; `ordersync verify --destination`
// must say the same.
const chaosDestinationsYAML = `
destinations:
  chaos-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_CHAOS_HOOK_SECRET}
    batch_size: 25
    timeout: 2s
    retries: 30
    retry_interval: 200ms
    breaker_failures: 0
    rate_limit: {rps: 50, burst: 10}
  chaos-bus:
    kind: nats
    url: "{{NATS}}"
    subject: chaos
    batch_size: 50
    timeout: 3s
    retries: 30
    retry_interval: 200ms
    breaker_failures: 0
    rate_limit: {rps: 50, burst: 10}
`

const (
	chaosHookSecret = "whsec_Y2hhb3Mtd2ViaG9vay1zaWduaW5nLWtleS0xMjM0NQ=="
	// chaosHookFail and chaosHookLate are the receiver's fault rates: a
	// 503, and a batch processed whose answer comes after the sender's
	// timeout (chaosHookLateBy).
	chaosHookFail   = 0.08
	chaosHookLate   = 0.05
	chaosHookLateBy = 2500 * time.Millisecond
	// chaosDeliveryBatchesPerRun makes the Delivery workflows continue as
	// new every few batches, so kills and the restart hit the hand-over.
	chaosDeliveryBatchesPerRun = 20
	chaosStream                = "CHAOS"
)

// chaosDestinations are the receiving ends of the chaos run.
type chaosDestinations struct {
	hook    *chaosHook
	hookURL string
	natsURL string
	env     []string
}

// startChaosDestinations starts the webhook receiver and nats-server (with
// the stream the nats destination publishes into).
func startChaosDestinations(t *testing.T, seed int64) *chaosDestinations {
	t.Helper()
	v, err := receiver.NewVerifier(chaosHookSecret)
	require.NoError(t, err)
	h := &chaosHook{verifier: v, rng: rand.New(rand.NewSource(seed + 1))}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	d := &chaosDestinations{hook: h, hookURL: srv.URL, natsURL: natstest.Start(t),
		env: []string{"ORDERSYNC_E2E_CHAOS_HOOK_SECRET=" + chaosHookSecret}}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(d.natsURL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	// The duplicate window outlasts the run, so every redelivery is dropped.
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: chaosStream, Subjects: []string{"chaos.>"}, Duplicates: time.Hour})
	require.NoError(t, err)
	return d
}

// expand adds the destinations block to the platforms file.
func (d *chaosDestinations) expand(yaml string) string {
	return yaml + strings.NewReplacer("{{HOOK}}", d.hookURL, "{{NATS}}", d.natsURL).Replace(chaosDestinationsYAML)
}

// chaosHook is the webhook receiver: it verifies each request's Standard
// Webhooks signature (a bad one is answered 401, a refusal the sender sets
// aside, so the test fails on it) and records every change of every batch
// it processed, duplicates included, as they arrived.
type chaosHook struct {
	verifier *receiver.Verifier

	mu       sync.Mutex
	rng      *rand.Rand
	requests int
	arrivals []store.Change
	served   chaosHookServed
}

type chaosHookServed struct {
	Processed int `json:"processed"`
	Err5xx    int `json:"err_5xx"`
	Late      int `json:"answered_after_timeout"`
	BadSig    int `json:"bad_signature"`
}

func (h *chaosHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the sender gave up (a killed worker): it sends again
	}
	if err := h.verifier.Verify(r.Header, body); err != nil {
		h.mu.Lock()
		h.served.BadSig++
		h.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var b delivery.WebhookBatch
	if err := json.Unmarshal(body, &b); err != nil || b.ID != r.Header.Get("webhook-id") {
		h.mu.Lock()
		h.served.BadSig++
		h.mu.Unlock()
		http.Error(w, "not a batch of changes", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	// The first batch is answered 503 and the second late, whatever the
	// seed draws later, so a short run sees both.
	h.requests++
	roll := h.rng.Float64()
	switch h.requests {
	case 1:
		roll = 0
	case 2:
		roll = chaosHookFail
	}
	if roll < chaosHookFail {
		h.served.Err5xx++
		h.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	// Processed now; a late answer is lost on the sender's side.
	h.arrivals = append(h.arrivals, b.Changes...)
	h.served.Processed++
	late := roll < chaosHookFail+chaosHookLate
	if late {
		h.served.Late++
	}
	h.mu.Unlock()
	if late {
		time.Sleep(chaosHookLateBy)
	}
	w.WriteHeader(http.StatusNoContent)
}

// chaosDestinationReport is what one destination got.
type chaosDestinationReport struct {
	Destination string `json:"destination"`
	Kind        string `json:"kind"`
	// Accepted counts the store's changes (the feed, nothing compacted).
	Accepted int `json:"accepted"`
	deliveryCheck
	Acked      int64              `json:"acked"`
	Counts     api.DeliveryCounts `json:"counts"`
	Poison     int                `json:"poison"`
	Runs       int                `json:"delivery_runs"`
	VerifyExit int                `json:"verify_exit_code"`
	// VerifyAccepted and VerifyDelivered are `ordersync verify
	// --destination`'s totals.
	VerifyAccepted  int64            `json:"verify_accepted"`
	VerifyDelivered int64            `json:"verify_delivered"`
	VerifyOverdue   int64            `json:"verify_overdue"`
	Hook            *chaosHookServed `json:"webhook_served,omitempty"`
}

// deliveryCheck compares what a destination got with the feed.
type deliveryCheck struct {
	Arrivals int `json:"arrivals"`
	Distinct int `json:"distinct"`
	// Missing: accepted, never arrived. Extra: arrived, not accepted (or
	// of another order than the feed says). OutOfOrder: an order's change
	// that first arrived after a later one of the same order. WentBack: an
	// arrival carrying an older version of its order than one before it.
	Missing    int      `json:"missing"`
	Extra      int      `json:"extra"`
	OutOfOrder int      `json:"out_of_order"`
	WentBack   int      `json:"went_back"`
	Problems   []string `json:"problems,omitempty"`
}

func (c *deliveryCheck) problem(format string, args ...any) {
	if len(c.Problems) < 10 {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// checkDelivered is requireFeedDelivered's rule, counted rather than
// asserted, so the chaos report shows every number before the test fails.
func checkDelivered(feed, arrivals []store.Change) deliveryCheck {
	c := deliveryCheck{Arrivals: len(arrivals)}
	want := make(map[int64]store.Change, len(feed))
	for _, f := range feed {
		want[f.Seq] = f
	}
	seen := map[int64]bool{}
	lastSeq := map[string]int64{}
	lastVersion := map[string]time.Time{}
	for _, a := range arrivals {
		key := a.Platform + "/" + a.OrderID
		f, ok := want[a.Seq]
		if !ok || f.Platform != a.Platform || f.OrderID != a.OrderID {
			c.Extra++
			c.problem("change %d (%s) is not in the feed as such", a.Seq, key)
			continue
		}
		if a.Order.UpdatedAt.Before(lastVersion[key]) {
			c.WentBack++
			c.problem("%s went back to an older version at change %d", key, a.Seq)
		}
		lastVersion[key] = a.Order.UpdatedAt
		if seen[a.Seq] {
			continue
		}
		seen[a.Seq] = true
		if a.Seq < lastSeq[key] {
			c.OutOfOrder++
			c.problem("%s: change %d first arrived after change %d", key, a.Seq, lastSeq[key])
		}
		lastSeq[key] = max(lastSeq[key], a.Seq)
	}
	c.Distinct = len(seen)
	for _, f := range feed {
		if !seen[f.Seq] {
			c.Missing++
			c.problem("change %d (%s/%s) never arrived", f.Seq, f.Platform, f.OrderID)
		}
	}
	return c
}

// startDeliveries starts each destination's Delivery workflow, as
// `deliveries start` does, with a small run cap.
func (r *chaosRun) startDeliveries() {
	r.t.Helper()
	for _, d := range r.file.Destinations {
		_, err := r.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID: api.DeliveryWorkflowID(d.Name), TaskQueue: d.TaskQueue,
		}, api.DeliveryWorkflowType, api.DeliveryInput{Destination: d.Settings(), MaxBatchesPerRun: chaosDeliveryBatchesPerRun})
		require.NoError(r.t, err)
	}
}

// verifyDeliveries waits until every destination acknowledged the feed's
// head, then compares what each got with the feed and runs `ordersync
// verify --destination`. The simulator changes nothing any more and every
// cursor caught up, so the head is final.
func (r *chaosRun) verifyDeliveries(timeout time.Duration) {
	r.t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, r.storeDSN())
	require.NoError(r.t, err)
	defer st.Close()
	head, err := st.Head(ctx)
	require.NoError(r.t, err)
	feed := allFeed(r.t, st)
	require.Len(r.t, feed, int(head.LastSeq), "nothing compacted: seqs 1..head")
	for _, d := range r.file.Destinations {
		status := r.waitAcked(d.Name, head.LastSeq, timeout)
		var arrivals []store.Change
		dr := &chaosDestinationReport{Destination: d.Name, Kind: d.Kind, Accepted: len(feed), Acked: status.State.Acked,
			Counts: status.State.Counts, Poison: len(status.State.Poison), Runs: status.State.Runs}
		switch d.Kind {
		case "webhook":
			r.dest.hook.mu.Lock()
			arrivals = append(arrivals, r.dest.hook.arrivals...)
			served := r.dest.hook.served
			r.dest.hook.mu.Unlock()
			dr.Hook = &served
		case "nats":
			arrivals = r.streamChanges(d.Subject)
		}
		dr.deliveryCheck = checkDelivered(feed, arrivals)

		code, out, errOut := runOrdersync(r.t, r.env, "verify", "--destination", d.Name, "--settle", "0s", "-o", "json")
		var v struct {
			Total struct {
				Accepted  int64 `json:"accepted"`
				Delivered int64 `json:"delivered"`
				Overdue   int64 `json:"overdue"`
			} `json:"total"`
		}
		require.NoError(r.t, json.Unmarshal([]byte(out), &v), "verify --destination output: %s %s", out, errOut)
		dr.VerifyExit, dr.VerifyAccepted, dr.VerifyDelivered, dr.VerifyOverdue = code, v.Total.Accepted, v.Total.Delivered, v.Total.Overdue
		r.logf("%s (%s): %d accepted, %d arrivals, %d distinct, %d missing, %d extra, %d out of order; verify --destination exit %d (%d accepted, %d delivered)",
			d.Name, d.Kind, dr.Accepted, dr.Arrivals, dr.Distinct, dr.Missing, dr.Extra, dr.OutOfOrder, code, dr.VerifyAccepted, dr.VerifyDelivered)
		if code != 0 {
			r.logf("verify --destination output: %s %s", out, errOut)
		}
		r.report.Destinations = append(r.report.Destinations, dr)
	}
}

// waitAcked waits until the destination's Delivery workflow acknowledged
// head, tolerating queries that fail while a worker starts.
func (r *chaosRun) waitAcked(dest string, head int64, timeout time.Duration) api.DeliveryStatus {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var st api.DeliveryStatus
		v, err := r.client.QueryWorkflow(ctx, api.DeliveryWorkflowID(dest), "", api.QueryDeliveryStatus)
		if err == nil {
			err = v.Get(&st)
		}
		cancel()
		if err == nil && st.State.Acked >= head {
			r.logf("%s acknowledged the feed's head %d (%d batches, %d failed, %d runs)", dest, head, st.State.Counts.Batches, st.State.Counts.Failures, st.State.Runs)
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: acknowledged %d, not the head %d, within %s; status %+v, error %v", dest, st.State.Acked, head, timeout, st, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// streamChanges reads the whole stream, as a JetStream consumer would.
func (r *chaosRun) streamChanges(subject string) []store.Change {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(r.dest.natsURL)
	require.NoError(r.t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(r.t, err)
	stream, err := js.Stream(ctx, chaosStream)
	require.NoError(r.t, err)
	info, err := stream.Info(ctx)
	require.NoError(r.t, err)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(r.t, err)
	var out []store.Change
	for range info.State.Msgs {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(r.t, err)
		var c store.Change
		require.NoError(r.t, json.Unmarshal(m.Data(), &c))
		require.Equal(r.t, delivery.NATSSubject(subject, c.Platform), m.Subject())
		out = append(out, c)
	}
	return out
}

// requireDelivered asserts on the destinations' reports.
func (r *chaosRun) requireDelivered() {
	r.t.Helper()
	require.Len(r.t, r.report.Destinations, len(r.file.Destinations))
	for _, d := range r.report.Destinations {
		require.Positive(r.t, d.Accepted, "%s: the store accepted nothing", d.Destination)
		require.Zero(r.t, d.Missing, "%s: accepted changes never delivered: %v", d.Destination, d.Problems)
		require.Zero(r.t, d.Extra, "%s: changes delivered that the store did not accept: %v", d.Destination, d.Problems)
		require.Zero(r.t, d.OutOfOrder, "%s: an order's changes out of order: %v", d.Destination, d.Problems)
		require.Zero(r.t, d.WentBack, "%s: an order went back to an older version: %v", d.Destination, d.Problems)
		require.Zero(r.t, d.Poison, "%s: nothing is refused, so nothing is set aside", d.Destination)
		require.Zero(r.t, d.VerifyExit, "%s: ordersync verify --destination failed", d.Destination)
		require.Equal(r.t, int64(d.Accepted), d.VerifyAccepted, "%s: verify --destination counts every accepted change", d.Destination)
		require.Equal(r.t, int64(d.Accepted), d.VerifyDelivered, "%s: verify --destination finds every change delivered", d.Destination)
		if d.Hook != nil {
			require.Zero(r.t, d.Hook.BadSig, "%s: every delivery carries a valid signature", d.Destination)
			require.Positive(r.t, d.Hook.Err5xx, "%s: the receiver served no 5xx: the chaos did not happen", d.Destination)
			require.Positive(r.t, d.Hook.Late, "%s: the receiver answered nothing late", d.Destination)
			require.Greater(r.t, d.Arrivals, d.Distinct, "%s: nothing was redelivered", d.Destination)
		}
	}
}

// TestCheckDelivered: the chaos run's delivery check catches each way a
// destination can be wrong (it runs in milliseconds, without the chaos).
func TestCheckDelivered(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC) }
	ch := func(seq int64, id string, version int) store.Change {
		c := store.Change{Seq: seq, Platform: "p", OrderID: id}
		c.Order.UpdatedAt = at(version)
		return c
	}
	feed := []store.Change{ch(1, "a", 1), ch(2, "b", 1), ch(3, "a", 2), ch(4, "b", 2)}
	cases := []struct {
		name     string
		arrivals []store.Change
		want     deliveryCheck
	}{
		{"all, with a redelivery", []store.Change{ch(1, "a", 2), ch(2, "b", 1), ch(1, "a", 2), ch(3, "a", 2), ch(4, "b", 2)},
			deliveryCheck{Arrivals: 5, Distinct: 4}},
		{"one missing", []store.Change{ch(1, "a", 1), ch(2, "b", 1), ch(4, "b", 2)},
			deliveryCheck{Arrivals: 3, Distinct: 3, Missing: 1}},
		{"one extra", []store.Change{ch(1, "a", 1), ch(2, "b", 1), ch(3, "a", 2), ch(4, "b", 2), ch(5, "c", 1), ch(2, "c", 1)},
			deliveryCheck{Arrivals: 6, Distinct: 4, Extra: 2}},
		{"an order's changes out of order", []store.Change{ch(3, "a", 2), ch(1, "a", 2), ch(2, "b", 1), ch(4, "b", 2)},
			deliveryCheck{Arrivals: 4, Distinct: 4, OutOfOrder: 1}},
		{"an order goes back", []store.Change{ch(1, "a", 1), ch(2, "b", 1), ch(3, "a", 2), ch(1, "a", 1), ch(4, "b", 2)},
			deliveryCheck{Arrivals: 5, Distinct: 4, WentBack: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkDelivered(feed, c.arrivals)
			got.Problems = nil
			require.Equal(t, c.want, got)
		})
	}
}
