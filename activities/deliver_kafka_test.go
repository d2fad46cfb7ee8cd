package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/store"
)

func TestKafkaDelivery(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	require.NoError(t, err)
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st := feedStore(t, 3)
	// Newer versions of two orders: seqs 7 and 8.
	at := time.Date(2024, 5, 2, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"0", "1"} {
		_, err := st.UpsertOrders(ctx, []connectors.Order{{Platform: "shop", ID: id, Status: "shipped", Currency: "EUR", Total: "1.00",
			CreatedAt: at, UpdatedAt: at}})
		require.NoError(t, err)
	}
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.Brokers, d.Topic = "stream", "kafka", cluster.ListenAddrs(), "orders"
	a := &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"stream": d}}}
	defer a.Deliveries.Close()
	for _, r := range []api.SeqRange{{After: 0, To: 4}, {After: 0, To: 4}, {After: 4, To: 8}} { // the second is a redelivery
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "stream", SeqRange: r, Expect: int(r.To - r.After)})
		require.NoError(t, err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	perKey := map[string][]int64{}
	seen := map[string]bool{}
	total := 0
	for total < 12 {
		fetches := consumer.PollFetches(ctx)
		require.NoError(t, fetches.Err())
		fetches.EachRecord(func(r *kgo.Record) {
			total++
			var c store.Change
			require.NoError(t, json.Unmarshal(r.Value, &c))
			require.Equal(t, delivery.KafkaKey(c.Platform, c.OrderID), string(r.Key))
			require.Equal(t, delivery.KafkaIDHeader, r.Headers[0].Key)
			id := string(r.Headers[0].Value)
			require.Equal(t, delivery.ChangeID("stream", c.Seq), id)
			if !seen[id] { // the consumer's de-dup by ordersync-id
				seen[id] = true
				perKey[string(r.Key)] = append(perKey[string(r.Key)], c.Seq)
			}
		})
	}
	require.Equal(t, 12, total, "8 changes plus the 4 of the redelivered batch")
	require.Len(t, seen, 8, "after de-dup by ordersync-id, each change once")
	require.Equal(t, []int64{1, 7}, perKey["shop/0"], "an order's changes in order on its partition")
	for key, seqs := range perKey {
		require.IsIncreasing(t, seqs, "%s: in order within its partition", key)
	}
}

// A change larger than Kafka takes (MESSAGE_TOO_LARGE: here the producer's
// 1 MB batch limit, which mirrors the broker default max.message.bytes) is
// a refusal the workflow sets aside, not a transient failure; its
// neighbours go through.
func TestKafkaDeliveryRefusesAChangeTooLarge(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	require.NoError(t, err)
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st := feedStore(t, 1)                 // seqs 1, 2
	big := bigOrder(t, st, "big", 2<<20)  // seq 3
	small := bigOrder(t, st, "small", 64) // seq 4
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.Brokers, d.Topic = "stream", "kafka", cluster.ListenAddrs(), "orders"
	a := &Activities{Feed: st, Deliveries: &Deliveries{Destinations: map[string]config.Destination{"stream": d}}}
	defer a.Deliveries.Close()
	deliver := func(after, to int64) error {
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "stream", SeqRange: api.SeqRange{After: after, To: to}, Expect: int(to - after)})
		return err
	}
	for _, r := range []api.SeqRange{{After: 0, To: small}, {After: big - 1, To: big}} {
		err := deliver(r.After, r.To)
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%v", err)
		require.Equal(t, ErrDeliveryRefused, appErr.Type(), "%v", err)
		require.Contains(t, appErr.Message(), fmt.Sprintf("change %d is", big))
		require.Contains(t, appErr.Message(), "MESSAGE_TOO_LARGE")
	}
	require.NoError(t, deliver(0, big-1))
	require.NoError(t, deliver(big, small))
}
