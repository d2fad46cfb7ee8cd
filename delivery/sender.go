// Package delivery sends changes of the feed to destinations: a sender per
// destination kind (a signed webhook, NATS JetStream, Kafka), the wire
// format a receiver decodes (WebhookBatch, EncodeChange's payloads, the
// idempotency keys ChangeID and KafkaKey) and the dialer every sender
// connects through. What to send and when (batches, lanes, retries,
// acknowledgements) is the Delivery workflow's and its activities'.
package delivery

import (
	"context"
	"fmt"
	"slices"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// Application error types a sender returns (temporal.ApplicationError
// types, so the Delivery workflow and its activities tell them apart).
const (
	// ErrRefused: the destination refused the batch in a way that retrying
	// cannot fix (a 4xx other than 408 and 429, a change too large). The
	// workflow delivers the batch's changes one by one and sets aside
	// those it refuses alone.
	ErrRefused = "DeliveryRefused"
	// errPermanent and errTransient are activities.ErrPermanent and
	// activities.ErrTransient (TestDeliveryErrorTypes keeps them equal).
	errPermanent = "PermanentError"
	errTransient = "TransientError"
)

// ErrorTypes are the types of errPermanent and errTransient, for the
// activities' test that they are its own.
var ErrorTypes = struct{ Permanent, Transient string }{errPermanent, errTransient}

// Sender delivers one batch of changes to a destination. Send returns nil
// once the destination confirmed every change, an error of type ErrRefused
// for a refusal retrying cannot fix, a non-retryable error for a
// destination that cannot be used as configured, and any other error for
// a failure worth retrying.
type Sender interface {
	Send(ctx context.Context, b Batch) error
	// Close releases the sender's connections (NATS, Kafka).
	Close()
}

// Batch is what a sender sends: the changes of (After, To] with an id a
// receiver can drop a redelivery by.
type Batch struct {
	ID          string
	Destination string
	api.SeqRange
	// Lane and Lanes place a lane's batch in its range (Lanes > 1).
	Lane, Lanes int
	Changes     []store.Change
	// Payload is the destination's payload setting, which each sender
	// encodes every change in (EncodeChange).
	Payload string
}

// kinds builds a sender per destination kind; config.DestinationKinds
// must name the same kinds (TestKindsMatchConfig).
var kinds = map[string]func(config.Destination) (Sender, error){
	"webhook": newWebhookSender,
	"nats":    newNATSSender,
	"kafka":   newKafkaSender,
}

// Kinds are the destination kinds a sender exists for, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// New builds the sender of d's kind.
func New(d config.Destination) (Sender, error) {
	build, ok := kinds[d.Kind]
	if !ok {
		return nil, fmt.Errorf("destination %s: unknown kind %q", d.Name, d.Kind)
	}
	s, err := build(d)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	return s, nil
}

// Same says whether a sender built for a still serves b: what it connects
// to and signs with is unchanged.
func Same(a, b config.Destination) bool {
	return a.Kind == b.Kind && a.URL == b.URL && a.Secret == b.Secret && a.Subject == b.Subject && a.Timeout == b.Timeout &&
		slices.Equal(a.Brokers, b.Brokers) && a.Topic == b.Topic
}
