package activities

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/store"
)

func TestSenderKindsMatchConfig(t *testing.T) {
	require.Equal(t, slices.Sorted(slices.Values(config.DestinationKinds)), delivery.Kinds())
}

// The delivery package's senders fail with the activities' own error
// types, which the Delivery workflow decides by.
func TestDeliveryErrorTypes(t *testing.T) {
	require.Equal(t, ErrPermanent, delivery.ErrorTypes.Permanent)
	require.Equal(t, ErrTransient, delivery.ErrorTypes.Transient)
	require.Equal(t, ErrDeliveryRefused, delivery.ErrRefused)
}

// feedStore is a SQLite store holding n orders of platform "shop" (and one
// of "other" after each), so seqs 1..2n alternate between the platforms.
func feedStore(t *testing.T, n int) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		for _, p := range []string{"shop", "other"} {
			_, err := st.UpsertOrders(context.Background(), []connectors.Order{{Platform: p, ID: fmt.Sprint(i), Status: "paid",
				Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at.Add(time.Duration(i) * time.Minute)}})
			require.NoError(t, err)
		}
	}
	return st
}

const testWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a webhook endpoint that verifies every delivery the way the
// Standard Webhooks specification tells a receiver to, and answers what
// the test says.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	status []int // answers in order; 200 once used up
	got    []delivery.WebhookBatch
	ids    []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testWebhookSecret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sec, err := strconv.ParseInt(ts, 10, 64)
	valid := false
	for _, s := range strings.Fields(sig) {
		valid = valid || hmac.Equal([]byte(s), []byte(want))
	}
	if !valid || err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		rc.t.Errorf("delivery %s: bad signature %q or timestamp %q", id, sig, ts)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	code := http.StatusOK
	if len(rc.status) > 0 {
		code, rc.status = rc.status[0], rc.status[1:]
	}
	if code < 300 {
		var b delivery.WebhookBatch
		require.NoError(rc.t, json.Unmarshal(body, &b))
		require.Equal(rc.t, id, b.ID, "webhook-id is the batch id")
		rc.got = append(rc.got, b)
		rc.ids = append(rc.ids, id)
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "7")
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{"error":"order 17 of Jane Doe is invalid"}`))
}

func webhookActivities(t *testing.T, st store.Store, url string) *Activities {
	t.Setenv("TEST_WEBHOOK_SECRET", testWebhookSecret)
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = "oms", "webhook", url, config.CredentialRef{Env: "TEST_WEBHOOK_SECRET"}
	d.Platforms = []string{"shop"}
	return &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"oms": d}}}
}

func TestWebhookDelivery(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		wantType string // "" when delivered
		retryIn  time.Duration
	}{
		{"2xx confirms", 204, "", 0},
		{"5xx is retried", 503, ErrTransient, 0},
		{"408 is retried", 408, ErrTransient, 0},
		{"429 is retried after Retry-After", 429, ErrTransient, 7 * time.Second},
		{"a redirect is not followed", 307, ErrTransient, 0},
		{"another 4xx is a refusal", 422, ErrDeliveryRefused, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := &receiver{t: t, status: []int{tc.status}}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			st := feedStore(t, 3)
			a := webhookActivities(t, st, srv.URL)
			ctx := context.Background()

			next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 0, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, []int64{1, 3, 5}, next.Seqs, "only the destination's platforms")
			res, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 0, To: 5}, Expect: 3})
			if tc.wantType == "" {
				require.NoError(t, err)
				require.Equal(t, 3, res.Delivered)
				require.Len(t, rc.got, 1)
				b := rc.got[0]
				require.Equal(t, "oms-1-5", b.ID, "deterministic from destination and range")
				require.Equal(t, []int64{1, 5}, []int64{b.FromSeq, b.ToSeq})
				require.Len(t, b.Changes, 3)
				require.Equal(t, "shop", b.Changes[2].Order.Platform)
				return
			}
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, tc.wantType, appErr.Type())
			require.Equal(t, tc.retryIn, appErr.NextRetryDelay())
			require.NotContains(t, err.Error(), "Jane", "the receiver's body never reaches history")
			require.Equal(t, tc.wantType == ErrDeliveryRefused, appErr.NonRetryable())
		})
	}
}

func TestWebhookRedeliveryKeepsItsID(t *testing.T) {
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := feedStore(t, 2)
	a := webhookActivities(t, st, srv.URL)
	for range 2 {
		_, err := a.DeliverChanges(context.Background(), api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 0, To: 3}, Expect: 2})
		require.NoError(t, err)
	}
	require.Equal(t, []string{"oms-1-3", "oms-1-3"}, rc.ids, "a receiver drops the second by its id")
}

func TestDeliveryActivityGuards(t *testing.T) {
	st := feedStore(t, 2)
	a := webhookActivities(t, st, "http://127.0.0.1:1")
	ctx := context.Background()
	_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "elsewhere", SeqRange: api.SeqRange{To: 3}, Expect: 2})
	require.ErrorContains(t, err, `destination elsewhere is neither registered nor in this worker's platforms file`)
	var unknown *temporal.ApplicationError
	require.True(t, errors.As(err, &unknown))
	require.False(t, unknown.NonRetryable(), "a worker without the destination must not end the Delivery workflow")
	_, err = a.NextBatch(ctx, api.NextBatchRequest{Destination: "elsewhere", Limit: 10})
	require.True(t, errors.As(err, &unknown))
	require.False(t, unknown.NonRetryable())
	_, err = a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{To: 3}, Expect: 3})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, ErrChangesGone, appErr.Type())

	acks, err := st.Acks(ctx)
	require.NoError(t, err)
	require.Empty(t, acks)
	_, err = a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 3, Limit: 10})
	require.NoError(t, err)
	acks, err = st.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"oms": 3}, acks, "listing after 3 acknowledges 3 in the store, for compaction")

	// A Delivery workflow started anew continues after the store's record.
	next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 0, Limit: 10, Resume: true})
	require.NoError(t, err)
	require.Equal(t, api.NextBatchResult{After: 3}, next, "shop's changes are 1 and 3")
}

func TestNextBatchLongPolls(t *testing.T) {
	st := feedStore(t, 1)
	a := webhookActivities(t, st, "http://127.0.0.1:1")
	ctx := context.Background()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = st.UpsertOrders(ctx, []connectors.Order{{Platform: "shop", ID: "late", Status: "paid", Currency: "EUR", Total: "1",
			CreatedAt: time.Now(), UpdatedAt: time.Now()}})
	}()
	next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 1, Limit: 10, Wait: 5 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []int64{3}, next.Seqs)
}

// A long poll on an idle feed heartbeats throughout, so the server notices
// a worker killed mid-poll within the heartbeat timeout and another worker
// takes the poll over. The test environment enforces the heartbeat timeout
// as the server does: a poll that waits 3s without heartbeats fails.
func TestNextBatchHeartbeatsWhileItWaits(t *testing.T) {
	st := feedStore(t, 1)
	a := webhookActivities(t, st, "http://127.0.0.1:1")
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	poll := func(ctx workflow.Context) (api.NextBatchResult, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
		var next api.NextBatchResult
		err := workflow.ExecuteActivity(ctx, a.NextBatch, api.NextBatchRequest{Destination: "oms", After: 1, Limit: 10, Wait: 3 * time.Second}).Get(ctx, &next)
		return next, err
	}
	env.RegisterWorkflow(poll)
	env.ExecuteWorkflow(poll)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the poll outlived its heartbeat timeout by heartbeating")
	var next api.NextBatchResult
	require.NoError(t, env.GetWorkflowResult(&next))
	require.Empty(t, next.Seqs, "nothing new: the poll ran its full wait")
	require.GreaterOrEqual(t, beats.Load(), int32(3), "a heartbeat about every 0.8s of the 3s poll")
}

// A batch whose destination takes longer than the heartbeat timeout to
// answer heartbeats throughout the send, so the server notices a worker
// killed mid-batch within that timeout, and a slow but live send is not
// taken for a dead worker. The test environment enforces the heartbeat
// timeout as the server does: a send of 3s without heartbeats fails.
func TestDeliverChangesHeartbeatsWhileItSends(t *testing.T) {
	st := feedStore(t, 2)
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(3 * time.Second) // a slow receiver
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	a := webhookActivities(t, st, srv.URL)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(info *activity.Info, _ converter.EncodedValues) {
		if info.ActivityType.Name == "DeliverChanges" {
			beats.Add(1)
		}
	})
	deliver := func(ctx workflow.Context) (api.DeliverResult, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
		var res api.DeliverResult
		// seqs 1..4 alternate shop/other; the destination takes "shop": 1 and 3.
		err := workflow.ExecuteActivity(ctx, a.DeliverChanges, api.DeliverRequest{Destination: "oms",
			SeqRange: api.SeqRange{After: 0, To: 3}, Expect: 2}).Get(ctx, &res)
		return res, err
	}
	env.RegisterWorkflow(deliver)
	env.ExecuteWorkflow(deliver)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the send outlived its heartbeat timeout by heartbeating")
	var res api.DeliverResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Delivered)
	require.Equal(t, int32(1), posts.Load(), "one attempt")
	require.GreaterOrEqual(t, beats.Load(), int32(3), "a heartbeat about every 0.8s of the 3s send")
}

// A set-aside change is not acknowledged in the store: compaction keeps it
// for a retry, and a Delivery started anew lists it again.
func TestNextBatchKeepsTheStoreAckBelowSetAsideChanges(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		setAside  int64
		wantAck   int64
		wantFirst int64 // first change left after compaction
	}{
		{"nothing set aside", 0, 5, 6},
		{"change 3 set aside", 3, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := feedStore(t, 3) // seqs 1..6
			a := webhookActivities(t, st, "http://127.0.0.1:1")
			_, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 5, Limit: 10, OldestSetAside: tc.setAside})
			require.NoError(t, err)
			acks, err := st.Acks(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.wantAck, acks["oms"])
			_, err = st.CompactChanges(ctx, store.Compaction{Before: time.Now().Add(time.Hour), Consumers: []string{"oms"}})
			require.NoError(t, err)
			left, err := st.Changes(ctx, store.ChangeQuery{After: 0, Limit: 1})
			require.NoError(t, err)
			require.Equal(t, tc.wantFirst, left[0].Seq)
			next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 0, Limit: 10, Resume: true})
			require.NoError(t, err)
			require.Equal(t, tc.wantAck, next.After, "a Delivery started anew resumes after the store's record")
		})
	}
}
