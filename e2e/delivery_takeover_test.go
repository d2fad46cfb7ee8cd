package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
)

const takeoverPlatforms = noLossPlatforms + `
destinations:
  e2e-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 10
    timeout: 2s
    retry_interval: 100ms
`

// seqReceiver records when each change's seq first arrived.
type seqReceiver struct {
	mu      sync.Mutex
	arrived map[int64]time.Time
}

func (r *seqReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var b delivery.WebhookBatch
	if err := json.Unmarshal(body, &b); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, c := range b.Changes {
		if _, ok := r.arrived[c.Seq]; !ok {
			r.arrived[c.Seq] = time.Now()
		}
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *seqReceiver) waitFor(t *testing.T, seq int64, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		at, ok := r.arrived[seq]
		r.mu.Unlock()
		if ok {
			return at
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("change %d did not arrive within %s", seq, timeout)
	return time.Time{}
}

// startTakeover starts two worker processes delivering to a webhook served
// by rcv, with the Delivery running; order stores a new order and returns
// the feed's sequence number of its change.
func startTakeover(t *testing.T, rcv http.Handler, platforms string) (s *system, order func(id string) int64) {
	t.Helper()
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	setenv(t, "ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	st := embeddedStack
	st.workerProcesses = 2
	cfg := sim.DefaultConfig()
	cfg.Shops = []sim.ShopConfig{{Name: "alpha", Token: "alpha-token"}, {Name: "beta", Token: "beta-token"}}
	s = startSystemOn(t, st, cfg, strings.ReplaceAll(platforms, "{{HOOK}}", hook.URL))
	ctx := context.Background()
	dest, ok := s.file.Destination("e2e-hook")
	require.True(t, ok)
	_, err := starter.EnsureDelivery(ctx, s.client, dest)
	require.NoError(t, err)
	return s, func(id string) int64 {
		at := time.Now().UTC().Truncate(time.Second)
		_, err := s.store.UpsertOrders(ctx, []connectors.Order{{Platform: "e2e-alpha", ID: id, Status: "paid", Currency: "EUR",
			Total: "1.00", CreatedAt: at, UpdatedAt: at}})
		require.NoError(t, err)
		head, err := s.store.Head(ctx)
		require.NoError(t, err)
		return head.LastSeq
	}
}

// deliveryActivityRunner waits for the Delivery's activity of this type to
// run on one of the worker processes and returns that process and how long
// the activity has been running.
func deliveryActivityRunner(t *testing.T, s *system, activityType string) (*workerProc, time.Duration) {
	t.Helper()
	return deliveryActivityRunnerSince(t, s, activityType, time.Time{})
}

// deliveryActivityRunnerSince is deliveryActivityRunner for an activity
// started at or after since: the send of a change stored then, not the
// previous send whose completion the server may not have recorded yet.
func deliveryActivityRunnerSince(t *testing.T, s *system, activityType string, since time.Time) (*workerProc, time.Duration) {
	t.Helper()
	var runner *workerProc
	var running time.Duration
	require.Eventually(t, func() bool {
		desc, err := s.client.DescribeWorkflowExecution(context.Background(), api.DeliveryWorkflowID("e2e-hook"), "")
		require.NoError(t, err)
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityType().GetName() != activityType || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED ||
				a.GetLastStartedTime().AsTime().Before(since) {
				continue
			}
			for _, w := range s.procs {
				if strings.HasPrefix(a.GetLastWorkerIdentity(), fmt.Sprintf("%d@", w.cmd.Process.Pid)) {
					runner, running = w, time.Since(a.GetLastStartedTime().AsTime())
				}
			}
		}
		return runner != nil
	}, time.Minute, 100*time.Millisecond, "no worker runs %s", activityType)
	return runner, running
}

// TestDeliveryPollTakenOverAfterAKill: a worker process killed (SIGKILL)
// while it runs the Delivery's long poll for new changes stalls delivery
// only for the poll's heartbeat timeout: the other worker polls again and
// a change stored after the kill arrives within seconds, not after the
// poll's start-to-close timeout (50s).
func TestDeliveryPollTakenOverAfterAKill(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	rcv := &seqReceiver{arrived: map[int64]time.Time{}}
	s, order := startTakeover(t, rcv, takeoverPlatforms)
	rcv.waitFor(t, order("before-kill"), time.Minute)

	// The next long poll has started on one of the two workers: kill it.
	victim, polling := deliveryActivityRunner(t, s, "NextBatch")
	victim.kill9()
	killed := time.Now()
	t.Logf("killed the worker polling for %s", polling.Round(time.Millisecond))

	seq := order("after-kill")
	took := rcv.waitFor(t, seq, 2*time.Minute).Sub(killed)
	t.Logf("change %d stored after the kill arrived %s after it", seq, took.Round(time.Millisecond))
	// Heartbeat timeout 5s, retry after 1s, then a workflow task that may
	// first wait out the dead worker's sticky queue (5s): about 11s here on
	// a loaded machine. Without the heartbeat the poll held delivery until
	// its start-to-close timeout, 50s after it started: over 30s.
	require.Less(t, took, 30*time.Second, "the long poll of the killed worker was taken over")
}

// stallingReceiver answers like seqReceiver, except that the first request
// carrying the stalled seq hangs until the sender goes away (its worker is
// killed) or a minute passes.
type stallingReceiver struct {
	seqReceiver
	mu      sync.Mutex
	stall   int64
	stalled bool
}

func (r *stallingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var b delivery.WebhookBatch
	if err := json.Unmarshal(body, &b); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	hang := false
	for _, c := range b.Changes {
		hang = hang || (r.stall != 0 && c.Seq == r.stall && !r.stalled)
	}
	r.stalled = r.stalled || hang
	r.mu.Unlock()
	if hang {
		select {
		case <-req.Context().Done():
		case <-time.After(time.Minute):
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	r.seqReceiver.ServeHTTP(w, req)
}

// isStalled reports whether the stalled send is hanging at the receiver.
func (r *stallingReceiver) isStalled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stalled
}

func (r *stallingReceiver) stallOn(seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stall = seq
}

// TestDeliverySendTakenOverAfterAKill: a worker process killed (SIGKILL)
// while its DeliverChanges waits for a slow destination stalls that batch
// only for the activity's heartbeat timeout: the other worker sends it
// again within seconds, not after the start-to-close timeout (the
// destination's 30s timeout plus 5s).
func TestDeliverySendTakenOverAfterAKill(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	rcv := &stallingReceiver{seqReceiver: seqReceiver{arrived: map[int64]time.Time{}}}
	s, order := startTakeover(t, rcv, strings.ReplaceAll(takeoverPlatforms, "timeout: 2s", "timeout: 30s"))
	ctx := context.Background()
	rcv.waitFor(t, order("before-kill"), time.Minute)

	// The next change's first send hangs at the receiver: kill the worker
	// that sends it.
	head, err := s.store.Head(ctx)
	require.NoError(t, err)
	rcv.stallOn(head.LastSeq + 1)
	stored := time.Now()
	seq := order("stalled")
	require.Equal(t, head.LastSeq+1, seq, "nothing else was stored meanwhile")
	require.Eventually(t, rcv.isStalled, time.Minute, 50*time.Millisecond, "the send of change %d reached the receiver", seq)
	victim, _ := deliveryActivityRunnerSince(t, s, "DeliverChanges", stored)
	victim.kill9()
	killed := time.Now()

	took := rcv.waitFor(t, seq, 2*time.Minute).Sub(killed)
	t.Logf("change %d, stalled at the receiver, arrived %s after its sender was killed", seq, took.Round(time.Millisecond))
	// Heartbeat timeout 10s, retry after 100ms on the other worker: about
	// 12s. Without the heartbeat the batch waited for its start-to-close
	// timeout, 35s after it started.
	require.Less(t, took, 25*time.Second, "the send of the killed worker was taken over")
}
