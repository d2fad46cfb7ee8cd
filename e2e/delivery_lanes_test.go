package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

const laneDeliveryPlatforms = noLossPlatforms + `
destinations:
  e2e-lanes:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 10
    max_in_flight: 4
    timeout: 1s
    retries: 20
    retry_interval: 100ms
    breaker_failures: 0
    rate_limit: {rps: 200, burst: 20}
`

// laneWatch wraps a receiver and notes how many deliveries it had in hand
// at once and the lane of each.
type laneWatch struct {
	next http.Handler

	mu          sync.Mutex
	now, most   int
	lanes       map[int]int // lane (1-based; 0: a batch not in lanes) -> batches
	lanesOfEach map[int]int // the lanes field seen
}

func (l *laneWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b delivery.WebhookBatch
	_ = json.Unmarshal(body, &b)
	l.mu.Lock()
	l.now++
	l.most = max(l.most, l.now)
	l.lanes[b.Lane]++
	l.lanesOfEach[b.Lanes]++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.now--
		l.mu.Unlock()
	}()
	r.Body = io.NopCloser(bytes.NewReader(body))
	l.next.ServeHTTP(w, r)
}

// TestDeliveryInLanesEndToEnd: a webhook destination with max_in_flight 4
// against a receiver that fails a quarter of the deliveries and times out
// on a tenth, across a worker restart: the receiver gets several batches at once, and still every
// accepted change at least once, each order's changes in order, nothing
// missing or extra after de-duplication, no order data in history.
func TestDeliveryInLanesEndToEnd(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	rcv := &flakyReceiver{rnd: rand.New(rand.NewPCG(3, 4)), batchIDs: map[string]int{}}
	watch := &laneWatch{next: rcv, lanes: map[int]int{}, lanesOfEach: map[int]int{}}
	hook := httptest.NewServer(watch)
	t.Cleanup(hook.Close)
	setenv(t, "ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	cfg := sim.DefaultConfig()
	cfg.Seed = 12
	cfg.Shops = []sim.ShopConfig{{Name: "alpha", Token: "alpha-token"}, {Name: "beta", Token: "beta-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 200
	cfg.LiveRate = 3
	cfg.MaxUpdates = 3
	cfg.UpdateSpread = 10 * time.Second
	cfg.Late = 2 * time.Second
	s := startSystem(t, cfg, strings.ReplaceAll(laneDeliveryPlatforms, "{{HOOK}}", hook.URL))
	code, out, stderr := s.runCLI("platform", "apply")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "destination e2e-lanes: delivery started")

	// A worker restart while the backlog is delivered (lanes then run as
	// local activities, whose results a lost workflow task drops: they
	// are delivered again).
	time.Sleep(3 * time.Second)
	s.workers.Stop()
	time.Sleep(time.Second)
	s.startWorkers()
	s.waitWatermark("e2e-alpha", time.Now().Add(-15*time.Second), 3*time.Minute)
	quiet := s.sim.StopCreating()
	for _, p := range []string{"e2e-alpha", "e2e-beta"} {
		s.waitWatermark(p, quiet.Add(10*time.Second), 2*time.Minute)
	}
	ctx := context.Background()
	head, err := s.store.Head(ctx)
	require.NoError(t, err)
	feed := allFeed(t, s.store)
	st := waitDelivered(t, s, "e2e-lanes", head.LastSeq, 3*time.Minute)
	require.Nil(t, st.State.Pending, "nothing left in flight")
	require.Equal(t, 4, st.Settings.MaxInFlight)

	rcv.mu.Lock()
	arrivals := append([]store.Change(nil), rcv.arrivals...)
	faults, redelivered := rcv.faults, 0
	for _, n := range rcv.batchIDs {
		redelivered += n - 1
	}
	rcv.mu.Unlock()
	requireFeedDelivered(t, "webhook in lanes", feed, arrivals)
	require.Positive(t, faults, "the receiver did fail")

	watch.mu.Lock()
	most, lanes, lanesOfEach := watch.most, len(watch.lanes), watch.lanesOfEach
	watch.mu.Unlock()
	require.Greater(t, most, 1, "several batches were in flight at once")
	require.Equal(t, 4, lanes, "batches of all four lanes arrived (lanes 1-4)")
	require.Equal(t, 1, len(lanesOfEach), "every batch says it is one of 4 lanes: %v", lanesOfEach)
	require.Contains(t, lanesOfEach, 4)
	t.Logf("lanes: %d changes accepted, %d arrivals, %d faults, %d batches processed twice, at most %d batches at once, batches per lane %v",
		len(feed), len(arrivals), faults, redelivered, most, watch.lanes)

	requireNoOrderData(t, s, api.DeliveryWorkflowID("e2e-lanes"), feed)
	replayRuns(t, s, api.DeliveryWorkflowID("e2e-lanes"))
}
