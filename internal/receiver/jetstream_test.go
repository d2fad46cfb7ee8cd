package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/store"
)

// TestConsumeJetStream: the receiver creates the stream a nats destination
// publishes into and counts each change once, per platform.
func TestConsumeJetStream(t *testing.T) {
	url := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := NewJetStream("demo-bus")
	j := JetStream{URL: url, Stream: "ORDERS", Subject: "orders"}
	nc, _, err := j.EnsureStream(ctx)
	require.NoError(t, err)
	nc.Close()
	consumed := make(chan error, 1)
	cctx, stop := context.WithCancel(ctx)
	go func() { consumed <- r.Consume(cctx, j) }()

	nc, err = nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	publish := func(seq int64, platform string) {
		data, err := json.Marshal(store.Change{Seq: seq, Platform: platform, OrderID: fmt.Sprint(seq)})
		require.NoError(t, err)
		_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "orders." + platform, Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("bus-%d", seq)}}})
		require.NoError(t, err)
	}
	publish(1, "sim-acme")
	publish(2, "sim-globex")
	publish(2, "sim-globex") // a redelivery: the stream drops it by Nats-Msg-Id
	publish(3, "sim-acme")
	require.Eventually(t, func() bool { return r.Stats().Changes == 3 }, 10*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, <-consumed)
	require.Equal(t, map[string]int64{"sim-acme": 2, "sim-globex": 1}, r.Stats().Platforms)
	require.Equal(t, "demo-bus: 3 changes received (sim-acme 2, sim-globex 1), last seq 3", r.Summary())

	// A second consumer of the same stream reads it from the start.
	r2 := NewJetStream("again")
	cctx, stop = context.WithCancel(ctx)
	go func() { consumed <- r2.Consume(cctx, j) }()
	require.Eventually(t, func() bool { return r2.Stats().Changes == 3 }, 10*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, <-consumed)
}
