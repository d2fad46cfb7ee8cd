package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync/store"
)

// DefaultDuplicates is the duplicate window of a stream the receiver
// creates: JetStream drops a redelivered change (same Nats-Msg-Id) within
// it. The JetStream default, made explicit.
const DefaultDuplicates = 2 * time.Minute

// JetStream is where a JetStream receiver reads: the stream, created
// capturing Subject.> when it does not exist (a nats destination with
// subject S publishes platform P's changes to S.P).
type JetStream struct {
	URL     string
	Stream  string
	Subject string
}

// NewJetStream returns a receiver that counts a stream's changes; run it
// with Consume.
func NewJetStream(name string) *Receiver { return newCounter(name) }

// EnsureStream connects and creates the stream unless it exists.
func (j JetStream) EnsureStream(ctx context.Context) (*nats.Conn, jetstream.Stream, error) {
	nc, err := nats.Connect(j.URL, nats.Name("ordersync receiver"))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", j.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	s, err := js.Stream(ctx, j.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: j.Stream, Subjects: []string{j.Subject + ".>"}, Duplicates: DefaultDuplicates})
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("stream %s: %w", j.Stream, err)
	}
	return nc, s, nil
}

// Consume counts every change in the stream, from its first message, as a
// consumer of a nats destination would (each message one change, its
// Nats-Msg-Id "<destination>-<seq>"), until ctx ends.
func (r *Receiver) Consume(ctx context.Context, j JetStream) error {
	nc, s, err := j.EnsureStream(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return fmt.Errorf("consumer on %s: %w", j.Stream, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var c store.Change
		if err := json.Unmarshal(m.Data(), &c); err != nil || c.Seq <= 0 {
			r.reject()
			return
		}
		id := m.Headers().Get(jetstream.MsgIDHeader)
		dest := strings.TrimSuffix(id, fmt.Sprintf("-%d", c.Seq))
		r.mu.Lock()
		r.stats.Batches++
		r.countLocked(dest, []store.Change{c})
		r.mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("consume %s: %w", j.Stream, err)
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}
