package workflows_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/store"
)

// A change larger than the NATS server's max_payload, through the real
// Delivery workflow, the real delivery activities, a SQLite feed and a
// real nats-server (issue 24, item 5): it is set aside at once, the
// changes around it are delivered, and `skip` works on it. Before, the
// batch failed as transient until the breaker opened, and skip answered
// "not set aside".
func TestDeliverySetsAsideAChangeTooLargeForNATS(t *testing.T) {
	url := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	require.NoError(t, err)

	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	defer st.Close()
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	for i, size := range []int{10, 10, int(nc.MaxPayload()), 10, 10} { // seq 3 is too large
		raw := `{"note":"` + strings.Repeat("x", size) + `"}`
		_, err := st.UpsertOrders(ctx, []connectors.Order{{Platform: "shop", ID: string(rune('a' + i)), Status: "paid",
			Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at, Raw: json.RawMessage(raw)}})
		require.NoError(t, err)
	}

	entry := testDestinationEntry()
	entry.Kind, entry.URL, entry.Subject, entry.Secret = "nats", url, "orders", config.CredentialRef{}
	d := entry.Settings()
	live := &activities.Activities{Feed: st, Deliveries: &activities.Deliveries{Destinations: map[string]config.Destination{d.Name: entry}}}
	defer live.Deliveries.Close()

	env := newEnv(t)
	env.SetTestTimeout(time.Minute)
	// The real activities; an empty feed answers after a (mocked) long poll.
	env.OnActivity(acts.NextBatch, mock.Anything, mock.Anything).After(time.Second).Return(
		func(ctx context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
			req.Wait = 0
			return live.NextBatch(ctx, req)
		}).Maybe()
	env.OnActivity(acts.DeliverChanges, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
			return live.DeliverChanges(ctx, req)
		}).Maybe()
	mockAlerts(env, 0)
	var setAside, skipped api.DeliveryStatus
	var skip *updateOutcome
	env.RegisterDelayedCallback(func() {
		setAside = deliveryStatus(t, env)
		skip = sendUpdate(env, api.SignalDeliverySkip, json.RawMessage(`{"seq":3}`))
	}, 30*time.Second)
	stopAt(env, time.Minute, func() { skipped = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: d})
	requireStopped(t, env)

	require.Equal(t, []int64{3}, poisonSeqs(setAside), "set aside at once")
	require.Contains(t, setAside.State.Poison[0].Reason, "max_payload")
	require.Equal(t, int64(5), setAside.State.Acked, "the changes around it were delivered")
	require.False(t, setAside.State.BreakerOpen)
	require.Nil(t, skip.rejected, "skip works on it")
	require.Empty(t, poisonSeqs(skipped))
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(4), info.State.Msgs)
}
