package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/config"
)

// KafkaIDHeader carries a change's idempotency key, "<destination>-<seq>",
// so a consumer can drop a redelivered change.
const KafkaIDHeader = "ordersync-id"

// kafkaSender produces one record per change to the destination's topic,
// keyed by platform/order id (each order's changes land on one partition,
// in order), and waits until every record is acknowledged by all in-sync
// replicas. franz-go's idempotent producer keeps its own retries from
// duplicating records; a redelivered batch is dropped by the consumer
// through the ordersync-id header.
type kafkaSender struct {
	d      config.Destination
	client *kgo.Client
}

func newKafkaSender(d config.Destination) (Sender, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.Brokers...), kgo.DefaultProduceTopic(d.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.Dialer(deliveryDialer(d.Timeout.D()).DialContext))
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &kafkaSender{d: d, client: cl}, nil
}

// KafkaKey is the record key of a change: its order.
func KafkaKey(platform, orderID string) string { return platform + "/" + orderID }

func (k *kafkaSender) Send(ctx context.Context, b Batch) error {
	records := make([]*kgo.Record, 0, len(b.Changes))
	for _, c := range b.Changes {
		value, err := EncodeChange(b.Payload, c)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("encode change %d: %v", c.Seq, err), errPermanent, nil)
		}
		records = append(records, &kgo.Record{Key: []byte(KafkaKey(c.Platform, c.OrderID)), Value: value,
			Headers: []kgo.RecordHeader{{Key: KafkaIDHeader, Value: []byte(ChangeID(b.Destination, c.Seq))}}})
	}
	results := k.client.ProduceSync(ctx, records...)
	seqOf := make(map[*kgo.Record]int64, len(records))
	for i, r := range records {
		seqOf[r] = b.Changes[i].Seq
	}
	for _, r := range results { // in the order they completed
		// A record larger than the producer's batch limit or the topic's
		// max.message.bytes (MESSAGE_TOO_LARGE, from the client or the
		// broker) can never be stored: a refusal, so the workflow delivers
		// the batch's changes one by one and sets this one aside.
		if errors.Is(r.Err, kerr.MessageTooLarge) {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"change %d is %d bytes, more than Kafka accepts for topic %s (MESSAGE_TOO_LARGE: the producer's or the topic's max.message.bytes); it can never be delivered",
				seqOf[r.Record], len(r.Record.Value), k.d.Topic), ErrRefused, nil)
		}
	}
	if err := results.FirstErr(); err != nil {
		if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.InvalidTopicException) {
			return temporal.NewNonRetryableApplicationError("kafka refused topic "+k.d.Topic+": "+err.Error(), ErrRefused, nil)
		}
		return fmt.Errorf("produce batch %s: %w", b.ID, err)
	}
	return nil
}

func (k *kafkaSender) Close() { k.client.Close() }
