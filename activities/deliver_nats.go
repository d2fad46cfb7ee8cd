package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// natsSender publishes one JetStream message per change to
// "<subject>.<platform>", with Nats-Msg-Id "<destination>-<seq>" so the
// stream drops a redelivered change inside its duplicate window, and waits
// for every publish ack: a change counts as delivered once the stream has
// stored it.
type natsSender struct {
	d config.Destination

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream
}

func newNATSSender(d config.Destination) (sender, error) {
	return &natsSender{d: d}, nil
}

// connect opens the connection on first use (and after it was closed), so
// a NATS server that is down fails a delivery, which is retried, rather
// than the worker.
func (n *natsSender) connect() (jetstream.JetStream, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil && !n.nc.IsClosed() {
		return n.js, nil
	}
	opts := []nats.Option{nats.Name("ordersync delivery " + n.d.Name), nats.Timeout(n.d.Timeout.D()), nats.MaxReconnects(-1)}
	if n.d.Secret.Env != "" || n.d.Secret.File != "" {
		token, err := n.d.Secret.Resolve()
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, nil)
		}
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(n.d.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS for %s: %w", n.d.Name, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream for %s: %w", n.d.Name, err)
	}
	n.nc, n.js = nc, js
	return js, nil
}

// NATSSubject is the subject a destination publishes a platform's changes to.
func NATSSubject(prefix, platform string) string {
	// Platform names may hold '.', which NATS reads as a token separator.
	return prefix + "." + strings.ReplaceAll(platform, ".", "_")
}

// ChangeID is one change's idempotency key at a destination,
// "<destination>-<seq>": the Nats-Msg-Id of its JetStream message, the
// ordersync-id header of its Kafka record.
func ChangeID(destination string, seq int64) string { return fmt.Sprintf("%s-%d", destination, seq) }

func (n *natsSender) send(ctx context.Context, b batch) error {
	js, err := n.connect()
	if err != nil {
		return err
	}
	// Publish all, then wait for all acks: one round trip per batch, not
	// per change. The stream stores them in publish order.
	futures := make([]jetstream.PubAckFuture, 0, len(b.Changes))
	for _, c := range b.Changes {
		data, err := json.Marshal(c)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("encode change %d: %v", c.Seq, err), ErrPermanent, nil)
		}
		// No client-side retries: a retried publish lands after the
		// publishes that followed it, out of order, possibly after this
		// call returned; the activity's own retry sends the batch again.
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: NATSSubject(n.d.Subject, c.Platform), Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{ChangeID(b.Destination, c.Seq)}}},
			jetstream.WithRetryAttempts(0))
		if err != nil {
			return fmt.Errorf("publish change %d of batch %s: %w", c.Seq, b.ID, err)
		}
		futures = append(futures, f)
	}
	// Wait for every ack, even after a failure, so no publish of this
	// batch is still in flight when the next attempt starts.
	var first error
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if first == nil {
				first = natsError(b.Changes[i], err)
			}
		case <-ctx.Done():
			return fmt.Errorf("batch %s: no JetStream ack for change %d: %w", b.ID, b.Changes[i].Seq, ctx.Err())
		}
	}
	return first
}

// natsError: no stream captures the subject is a refusal only an operator
// can fix, like a webhook's 404, so it is one; other errors are retried.
func natsError(c store.Change, err error) error {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return temporal.NewNonRetryableApplicationError("no JetStream stream captures "+c.Platform+"'s subject", ErrDeliveryRefused, nil)
	}
	return fmt.Errorf("change %d: %w", c.Seq, err)
}

func (n *natsSender) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil {
		_ = n.nc.Drain()
		n.nc = nil
	}
}
