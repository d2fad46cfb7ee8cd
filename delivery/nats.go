package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/store"
)

// natsSender publishes one JetStream message per change to
// "<subject>.<platform>", with Nats-Msg-Id "<destination>-<seq>" so the
// stream drops a redelivered change inside its duplicate window, and waits
// for every publish ack: a change counts as delivered once the stream has
// stored it.
type natsSender struct {
	d     config.Destination
	token credentials.Source // nil: no token; asked at every (re)connect

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream
}

func newNATSSender(d config.Destination) (Sender, error) {
	n := &natsSender{d: d}
	if d.Secret.Env != "" || d.Secret.File != "" {
		n.token = credentials.Static(d.Secret)
	}
	return n, nil
}

// connect opens the connection on first use (and after it was closed), so
// a NATS server that is down fails a delivery, which is retried, rather
// than the worker.
func (n *natsSender) connect() (*nats.Conn, jetstream.JetStream, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil && !n.nc.IsClosed() {
		return n.nc, n.js, nil
	}
	// IgnoreDiscoveredServers: a server's INFO may advertise other
	// addresses (connect_urls); the token and the orders go only to the
	// URL the destination names, which config validated.
	opts := []nats.Option{nats.Name("ordersync delivery " + n.d.Name), nats.Timeout(n.d.Timeout.D()), nats.MaxReconnects(-1),
		nats.IgnoreDiscoveredServers(), nats.SetCustomDialer(deliveryDialer(n.d.Timeout.D()))}
	if n.token != nil {
		if _, err := n.token.Secret(context.Background()); err != nil {
			return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), errPermanent, nil)
		}
		// A handler, not a fixed token: the client asks it at every
		// reconnect, so a token rotated in its file (and on the server,
		// which then drops the connection) is used without a restart.
		// Unreadable meanwhile, it sends none and the server refuses;
		// the next reconnect asks again.
		src := n.token
		opts = append(opts, nats.TokenHandler(func() string {
			token, _ := src.Secret(context.Background())
			return token
		}))
	}
	nc, err := nats.Connect(n.d.URL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS for %s: %w", n.d.Name, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("JetStream for %s: %w", n.d.Name, err)
	}
	n.nc, n.js = nc, js
	return nc, js, nil
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

func (n *natsSender) Send(ctx context.Context, b Batch) error {
	nc, js, err := n.connect()
	if err != nil {
		return err
	}
	// Encode all and check each against the server's max_payload (from
	// its INFO) before publishing any: a change larger than that can never
	// be delivered, so it is a refusal (the workflow delivers the batch's
	// changes one by one and sets this one aside), not a failure retried
	// until the breaker opens.
	msgs := make([]*nats.Msg, 0, len(b.Changes))
	for _, c := range b.Changes {
		data, err := EncodeChange(b.Payload, c)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("encode change %d: %v", c.Seq, err), errPermanent, nil)
		}
		m := &nats.Msg{Subject: NATSSubject(n.d.Subject, c.Platform), Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{ChangeID(b.Destination, c.Seq)}}}
		if size, limit := natsMsgSize(m), nc.MaxPayload(); limit > 0 && size > limit {
			return tooLarge(c.Seq, size, limit, "the NATS server's max_payload")
		}
		msgs = append(msgs, m)
	}
	// Publish all, then wait for all acks: one round trip per batch, not
	// per change. The stream stores them in publish order.
	futures := make([]jetstream.PubAckFuture, 0, len(b.Changes))
	var first error
	for i, m := range msgs {
		// No client-side retries: a retried publish lands after the
		// publishes that followed it, out of order, possibly after this
		// call returned; the activity's own retry sends the batch again.
		f, err := js.PublishMsgAsync(m, jetstream.WithRetryAttempts(0))
		if err != nil {
			first = natsError(b.Changes[i], fmt.Errorf("publish change %d of batch %s: %w", b.Changes[i].Seq, b.ID, err))
			break
		}
		futures = append(futures, f)
	}
	// Wait for every ack, even after a failure, so no publish of this
	// batch is still in flight when the next attempt starts.
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
// can fix, like a webhook's 404, so it is one; a message larger than the
// server's max_payload or the stream's max_msg_size can never be stored,
// so it is one too; other errors are retried.
func natsError(c store.Change, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
		return temporal.NewNonRetryableApplicationError("no JetStream stream captures "+c.Platform+"'s subject", ErrRefused, nil)
	case errors.Is(err, nats.ErrMaxPayload):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("change %d is larger than the NATS server's max_payload; it can never be delivered", c.Seq), ErrRefused, nil)
	case errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("change %d is larger than the JetStream stream's max_msg_size; it can never be delivered", c.Seq), ErrRefused, nil)
	}
	return fmt.Errorf("change %d: %w", c.Seq, err)
}

// natsMsgSize is what the server counts against max_payload: the payload
// plus the encoded headers ("NATS/1.0\r\n", "Key: value\r\n" each, and a
// blank line).
func natsMsgSize(m *nats.Msg) int64 {
	n := len(m.Data)
	if len(m.Header) > 0 {
		n += len("NATS/1.0\r\n") + len("\r\n")
		for k, vs := range m.Header {
			for _, v := range vs {
				n += len(k) + len(": ") + len(v) + len("\r\n")
			}
		}
	}
	return int64(n)
}

// tooLarge is the refusal of a change a destination can never accept
// because of its size: a poison, set aside on its own (the workflow
// splits a batch first, so a batch only too large as a whole is
// delivered in smaller parts).
func tooLarge(seq, size, limit int64, what string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("change %d is %d bytes, more than %s (%d bytes); it can never be delivered", seq, size, what, limit), ErrRefused, nil)
}

func (n *natsSender) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil {
		_ = n.nc.Drain()
		n.nc = nil
	}
}
