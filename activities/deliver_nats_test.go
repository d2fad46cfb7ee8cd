package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/store"
)

func TestNATSDelivery(t *testing.T) {
	url, _, js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st := feedStore(t, 3)
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Subject = "bus", "nats", url, "orders"
	a := &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"bus": d}}}
	defer a.Deliveries.Close()
	deliver := func(after, to int64, n int) error {
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "bus", SeqRange: api.SeqRange{After: after, To: to}, Expect: n})
		return err
	}

	// No stream captures the subjects yet: a refusal only an operator can fix.
	err := deliver(0, 2, 2)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrDeliveryRefused, appErr.Type())

	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	require.NoError(t, deliver(0, 4, 4))
	require.NoError(t, deliver(0, 4, 4), "a redelivery")
	require.NoError(t, deliver(4, 6, 2))

	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(6), info.State.Msgs, "Nats-Msg-Id de-duplicated the redelivered batch")

	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	var seqs []int64
	var subjects []string
	for range 6 {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		var c store.Change
		require.NoError(t, json.Unmarshal(m.Data(), &c))
		require.Equal(t, delivery.ChangeID("bus", c.Seq), m.Headers().Get(jetstream.MsgIDHeader))
		seqs = append(seqs, c.Seq)
		subjects = append(subjects, m.Subject())
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, seqs, "in order, each once")
	require.Equal(t, []string{"orders.shop", "orders.other", "orders.shop", "orders.other", "orders.shop", "orders.other"}, subjects)
}

// bigOrder appends to st an order of platform "shop" whose raw JSON is
// size bytes, and returns its seq.
func bigOrder(t *testing.T, st store.Store, id string, size int) int64 {
	t.Helper()
	raw := []byte(`{"note":"` + strings.Repeat("x", size-11) + `"}`)
	at := time.Date(2024, 5, 3, 9, 0, 0, 0, time.UTC)
	_, err := st.UpsertOrders(context.Background(), []connectors.Order{{Platform: "shop", ID: id, Status: "paid",
		Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at, Raw: raw}})
	require.NoError(t, err)
	changes, err := st.Changes(context.Background(), store.ChangeQuery{After: 0, Limit: 1000, KeysOnly: true})
	require.NoError(t, err)
	return changes[len(changes)-1].Seq
}

// A change larger than the server's max_payload (1 MB by default) can
// never be published: it is refused (the workflow then delivers the batch
// one by one and sets it aside), not retried as transient until the
// breaker opens; nothing of the batch is published before the check.
func TestNATSDeliveryRefusesAChangeLargerThanMaxPayload(t *testing.T) {
	url, nc, js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: time.Minute})
	require.NoError(t, err)

	st := feedStore(t, 1)                               // seqs 1, 2
	big := bigOrder(t, st, "big", int(nc.MaxPayload())) // seq 3: payload alone is max_payload, with the change's fields more
	small := bigOrder(t, st, "small", 100)              // seq 4
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Subject = "bus", "nats", url, "orders"
	a := &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"bus": d}}}
	defer a.Deliveries.Close()
	deliver := func(after, to int64, n int) error {
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "bus", SeqRange: api.SeqRange{After: after, To: to}, Expect: n})
		return err
	}

	for _, r := range []api.SeqRange{{After: 0, To: small}, {After: big - 1, To: big}} {
		err = deliver(r.After, r.To, int(r.To-r.After))
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%v", err)
		require.Equal(t, ErrDeliveryRefused, appErr.Type(), "%v", err)
		require.True(t, appErr.NonRetryable())
		require.Contains(t, appErr.Message(), fmt.Sprintf("change %d is", big))
		require.Contains(t, appErr.Message(), "max_payload")
	}
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "nothing of a refused batch was published")

	// Its neighbours, delivered alone, go through.
	require.NoError(t, deliver(0, big-1, int(big-1)))
	require.NoError(t, deliver(big, small, 1))
	info, err = stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), info.State.Msgs)
}

// A stream's max_msg_size below the server's max_payload: the stream's
// refusal is a refusal too, not a transient failure.
func TestNATSDeliveryRefusesAChangeLargerThanTheStreamAllows(t *testing.T) {
	url, _, js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, MaxMsgSize: 4096})
	require.NoError(t, err)

	st := feedStore(t, 1)
	big := bigOrder(t, st, "big", 8192)
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Subject = "bus", "nats", url, "orders"
	a := &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"bus": d}}}
	defer a.Deliveries.Close()
	_, err = a.DeliverChanges(ctx, api.DeliverRequest{Destination: "bus", SeqRange: api.SeqRange{After: big - 1, To: big}, Expect: 1})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrDeliveryRefused, appErr.Type(), "%v", err)
	require.Contains(t, appErr.Message(), "max_msg_size")
}

// startJetStream starts a nats-server with JetStream and connects to it;
// the connection closes when the test ends.
func startJetStream(t *testing.T) (string, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	url := natstest.Start(t)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return url, nc, js
}
