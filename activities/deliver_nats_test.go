package activities

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/store"
)

func TestNATSDelivery(t *testing.T) {
	url := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)

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
	err = deliver(0, 2, 2)
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
		require.Equal(t, ChangeID("bus", c.Seq), m.Headers().Get(jetstream.MsgIDHeader))
		seqs = append(seqs, c.Seq)
		subjects = append(subjects, m.Subject())
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, seqs, "in order, each once")
	require.Equal(t, []string{"orders.shop", "orders.other", "orders.shop", "orders.other", "orders.shop", "orders.other"}, subjects)
}
