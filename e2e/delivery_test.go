package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

const deliveryPlatforms = noLossPlatforms + `
destinations:
  e2e-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 10
    timeout: 1s
    retries: 20
    retry_interval: 100ms
    breaker_failures: 0
    rate_limit: {rps: 50, burst: 10}
  e2e-bus:
    kind: nats
    url: "{{NATS}}"
    subject: orders
    batch_size: 40
    timeout: 2s
    retry_interval: 100ms
`

// flakyReceiver is a webhook endpoint that answers 503 to about one
// delivery in four and, on one in ten, processes the batch but answers only
// after the sender's timeout (so the batch comes again with the same
// webhook-id); it records every batch it processed, as it arrived.
type flakyReceiver struct {
	mu       sync.Mutex
	rnd      *rand.Rand
	arrivals []store.Change // every change of every confirmed batch, duplicates included
	batchIDs map[string]int
	faults   int
}

func (f *flakyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	roll := f.rnd.Float64()
	f.mu.Unlock()
	switch {
	case roll < 0.1:
		// Processed now, answered after the sender gave up (1s): a
		// redelivery follows. Recorded when processed, as the chaos hook
		// does: recording after the sleep let a faster redelivery, which
		// reads the order as stored then, be recorded first, so the order
		// seemed to go back to an older version (a flake of the check).
		f.count()
		f.record(body)
		time.Sleep(1500 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
		return
	case roll < 0.35:
		f.count()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	f.record(body)
	w.WriteHeader(http.StatusNoContent)
}

func (f *flakyReceiver) count() {
	f.mu.Lock()
	f.faults++
	f.mu.Unlock()
}

func (f *flakyReceiver) record(body []byte) {
	var b delivery.WebhookBatch
	if err := json.Unmarshal(body, &b); err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batchIDs[b.ID]++
	f.arrivals = append(f.arrivals, b.Changes...)
}

// TestDeliveryEndToEnd: orders flow from the simulator through the store to
// a webhook receiver (5xx, timeouts) and a JetStream stream, across a
// worker restart. Every accepted change arrives at least once, the changes
// of each order in order, and after de-duplication by seq nothing is
// missing or extra.
func TestDeliveryEndToEnd(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	natsURL := natstest.Start(t)
	rcv := &flakyReceiver{rnd: rand.New(rand.NewPCG(1, 2)), batchIDs: map[string]int{}}
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	setenv(t, "ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: 5 * time.Minute})
	require.NoError(t, err)

	cfg := sim.DefaultConfig()
	cfg.Seed = 11
	cfg.Shops = []sim.ShopConfig{{Name: "alpha", Token: "alpha-token"}, {Name: "beta", Token: "beta-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 150
	cfg.LiveRate = 3
	cfg.MaxUpdates = 3
	cfg.UpdateSpread = 10 * time.Second
	cfg.Late = 2 * time.Second
	yaml := strings.NewReplacer("{{HOOK}}", hook.URL, "{{NATS}}", natsURL).Replace(deliveryPlatforms)
	s := startSystem(t, cfg, yaml)
	// platform apply starts the cursors and the Delivery workflows.
	code, out, stderr := s.runCLI("platform", "apply")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "destination e2e-hook: delivery started")
	require.Contains(t, out, "destination e2e-bus: delivery started")

	s.waitWatermark("e2e-alpha", time.Now().Add(-15*time.Second), 3*time.Minute)
	// A worker restart while changes flow: in-flight deliveries are retried.
	s.workers.Stop()
	time.Sleep(time.Second)
	s.startWorkers()
	time.Sleep(5 * time.Second)
	quiet := s.sim.StopCreating()
	for _, p := range []string{"e2e-alpha", "e2e-beta"} {
		s.waitWatermark(p, quiet.Add(10*time.Second), 2*time.Minute)
	}

	head, err := s.store.Head(ctx)
	require.NoError(t, err)
	feed := allFeed(t, s.store)
	require.Len(t, feed, int(head.LastSeq), "nothing compacted: seqs 1..head")
	for _, d := range s.file.Destinations {
		waitDelivered(t, s, d.Name, head.LastSeq, 2*time.Minute)
	}

	// Webhook: every change at least once, in order per order, nothing extra.
	rcv.mu.Lock()
	arrivals := append([]store.Change(nil), rcv.arrivals...)
	faults, redelivered := rcv.faults, 0
	for _, n := range rcv.batchIDs {
		redelivered += n - 1
	}
	rcv.mu.Unlock()
	requireFeedDelivered(t, "webhook", feed, arrivals)
	require.Positive(t, faults, "the receiver did fail")
	require.Positive(t, redelivered, "some batches were processed twice")
	t.Logf("webhook: %d changes accepted, %d arrivals, %d faults, %d batches processed twice (same webhook-id)", len(feed), len(arrivals), faults, redelivered)

	// JetStream: the stream holds each change once (Nats-Msg-Id), in order.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	var msgs []store.Change
	for range info.State.Msgs {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		var c store.Change
		require.NoError(t, json.Unmarshal(m.Data(), &c))
		require.Equal(t, "orders."+c.Platform, m.Subject())
		msgs = append(msgs, c)
	}
	requireFeedDelivered(t, "jetstream", feed, msgs)
	require.Len(t, msgs, len(feed), "JetStream dropped every duplicate by Nats-Msg-Id")
	t.Logf("jetstream: %d changes, %d messages", len(feed), len(msgs))

	// The operator's view: everything delivered, and the commands answer.
	code, out, stderr = s.runCLI("deliveries", "status")
	require.Equal(t, 0, code, "deliveries status: %s%s", out, stderr)
	require.Regexp(t, `e2e-hook\s+delivering\s+\d+\s+\d+\s+\d+\s+0\s+0`, out)
	code, out, stderr = s.runCLI("deliveries", "pause", "e2e-hook", "--reason", "e2e")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "e2e-hook: paused: e2e")
	code, _, stderr = s.runCLI("deliveries", "retry", "e2e-hook", "--seq", "1")
	require.Equal(t, 2, code, "change 1 is not set aside")
	require.Contains(t, stderr, "change 1 is not set aside")
	// The update answers with the state after the resume, whether it
	// found the workflow in its long poll or asleep while paused.
	code, out, stderr = s.runCLI("deliveries", "resume", "e2e-hook")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `^e2e-hook: delivering, acked \d+, 0 set aside\n$`, out)
	code, out, stderr = s.runCLI("changes", "--since", fmt.Sprint(head.LastSeq-2), "-o", "jsonl")
	require.Equal(t, 0, code, stderr)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2)

	// Invariant 4: no order data in the Delivery workflows' histories.
	for _, d := range s.file.Destinations {
		requireNoOrderData(t, s, api.DeliveryWorkflowID(d.Name), feed)
	}
}

// requireNoOrderData reads every payload of every run of a workflow and
// checks that none holds an order id, a line or an order field.
func requireNoOrderData(t *testing.T, s *system, workflowID string, feed []store.Change) {
	t.Helper()
	var payloads [][]byte
	for _, run := range runIDs(t, s.client, workflowID) {
		it := s.client.GetWorkflowHistory(context.Background(), workflowID, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			collectPayloads(ev.ProtoReflect(), &payloads)
		}
	}
	require.NotEmpty(t, payloads)
	for _, p := range payloads {
		text := string(p)
		for _, field := range []string{`"order"`, `"order_id"`, `"lines"`, `"raw"`, "SKU-"} {
			require.NotContains(t, text, field, "%s: history payload %.200s", workflowID, text)
		}
		for _, c := range feed {
			require.NotContains(t, text, c.OrderID, "%s: history payload holds order id %s", workflowID, c.OrderID)
		}
	}
	t.Logf("%s: %d history payloads, no order data", workflowID, len(payloads))
}

// collectPayloads appends the data of every Payload message inside m.
func collectPayloads(m protoreflect.Message, out *[][]byte) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		*out = append(*out, p.GetData())
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				collectPayloads(v.List().Get(i).Message(), out)
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				collectPayloads(mv.Message(), out)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			collectPayloads(v.Message(), out)
		}
		return true
	})
}

func allFeed(t *testing.T, st store.Store) []store.Change {
	t.Helper()
	var out []store.Change
	var after int64
	for {
		page, err := st.Changes(context.Background(), store.ChangeQuery{After: after, Limit: 1000})
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Seq
	}
}

func waitDelivered(t *testing.T, s *system, dest string, head int64, timeout time.Duration) api.DeliveryStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := s.client.QueryWorkflow(ctx, api.DeliveryWorkflowID(dest), "", api.QueryDeliveryStatus)
		cancel()
		require.NoError(t, err)
		var st api.DeliveryStatus
		require.NoError(t, v.Get(&st))
		if st.State.Acked >= head {
			require.Empty(t, st.State.Poison, "%s: nothing was refused", dest)
			t.Logf("%s: acked %d, counts %+v, runs %d", dest, st.State.Acked, st.State.Counts, st.State.Runs)
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: acked %d, not %d, within %s: %+v", dest, st.State.Acked, head, timeout, st)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// requireFeedDelivered checks arrivals against the feed: after de-dup by
// seq exactly the feed's seqs; each order's changes first arrive in seq
// order; and no order's content goes back to an older version at any
// arrival, duplicates included.
func requireFeedDelivered(t *testing.T, what string, feed, arrivals []store.Change) {
	t.Helper()
	want := map[int64]store.Change{}
	for _, c := range feed {
		want[c.Seq] = c
	}
	seen := map[int64]bool{}
	lastSeq := map[string]int64{}
	lastVersion := map[string]time.Time{}
	for _, c := range arrivals {
		key := c.Platform + "/" + c.OrderID
		f, ok := want[c.Seq]
		require.True(t, ok, "%s: change %d is not in the feed", what, c.Seq)
		require.Equal(t, f.Platform+"/"+f.OrderID, key, "%s: change %d is of another order", what, c.Seq)
		require.False(t, c.Order.UpdatedAt.Before(lastVersion[key]), "%s: %s went back to an older version at change %d", what, key, c.Seq)
		lastVersion[key] = c.Order.UpdatedAt
		if seen[c.Seq] {
			continue
		}
		seen[c.Seq] = true
		require.Greater(t, c.Seq, lastSeq[key], "%s: %s's changes out of order", what, key)
		lastSeq[key] = c.Seq
	}
	var missing []int64
	for seq := range want {
		if !seen[seq] {
			missing = append(missing, seq)
		}
	}
	require.Empty(t, missing, fmt.Sprintf("%s: accepted changes never delivered", what))
}
