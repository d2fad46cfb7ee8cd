package activities

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// payloadStore holds three orders of platform "shop" (seqs 1..3): two
// simulator orders with their canonical form, as a connector returns
// them, and one stored without (a version from before canonical orders).
func payloadStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	p := config.Platform{Name: "shop", Kind: "sim"}
	for i, status := range []string{"paid", "shipped"} {
		raw := `{"id":"S-` + string(rune('1'+i)) + `","status":"` + status + `","currency":"EUR","total":"25.00",` +
			`"line_items":[{"sku":"SKU-1","title":"Mug","qty":2,"price":"12.50"}],` +
			`"customer":{"name":"Anna Schmidt","email":"anna@example.com","address":{"street":"1 Main Street","city":"Berlin","zip":"10115","country":"DE"}}}`
		o := connectors.Order{Platform: "shop", ID: "S-" + string(rune('1'+i)), Status: status, Currency: "EUR", Total: "25.00",
			CreatedAt: at, UpdatedAt: at.Add(time.Duration(i) * time.Minute), Raw: json.RawMessage(raw), HasLines: true, LineCount: 1,
			Lines: []connectors.OrderLine{{ID: "1", SKU: "SKU-1", Title: "Mug", Quantity: 2, UnitPrice: "12.50", Currency: "EUR"}}}
		o.Canonical = connectors.Canonical(p, o)
		_, err := st.UpsertOrders(context.Background(), []connectors.Order{o})
		require.NoError(t, err)
	}
	_, err = st.UpsertOrders(context.Background(), []connectors.Order{{Platform: "shop", ID: "OLD-1", Status: "paid", Currency: "EUR",
		Total: "1.00", CreatedAt: at, UpdatedAt: at.Add(time.Hour), Raw: json.RawMessage(`{"id":"OLD-1"}`)}})
	require.NoError(t, err)
	return st
}

// checkPayload checks one delivered change, as JSON, against the
// destination's payload: the raw order only without canonical, the
// canonical order (valid under the schema) only without raw, and with
// canonical none of the per-kind header and lines. The version stored
// before canonical orders (OLD-1) has none but with payload canonical,
// which sends its header form. Every form decodes
// into a store.Change with its seq, platform and order id.
func checkPayload(t *testing.T, payload string, doc []byte) {
	t.Helper()
	var c struct {
		Seq     int64                      `json:"seq"`
		OrderID string                     `json:"order_id"`
		Order   map[string]json.RawMessage `json:"order"`
	}
	require.NoError(t, json.Unmarshal(doc, &c))
	_, hasRaw := c.Order["raw"]
	canon, hasCanonical := c.Order["canonical"]
	stored := c.OrderID != "OLD-1"
	require.Equal(t, payload != config.PayloadCanonical, hasRaw, "raw in payload %q: %s", payload, doc)
	require.Equal(t, payload == config.PayloadCanonical || (payload != config.PayloadRaw && stored), hasCanonical,
		"canonical in payload %q: %s", payload, doc)
	if hasCanonical {
		require.NoError(t, order.ValidateCanonicalJSON(canon), "%s", canon)
	}
	if payload == config.PayloadCanonical {
		for _, k := range []string{"status", "currency", "total", "line_count", "lines", "has_lines"} {
			require.NotContains(t, c.Order, k, "the canonical payload restates %s in the canonical order", k)
		}
	}
	var sc store.Change
	require.NoError(t, json.Unmarshal(doc, &sc))
	require.Equal(t, c.Seq, sc.Seq)
	require.Equal(t, "shop", sc.Platform)
	require.Equal(t, sc.OrderID, sc.Order.ID)
}

// capture is a webhook endpoint keeping each body as sent.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func deliverAll(t *testing.T, a *Activities, dest string) {
	t.Helper()
	_, err := a.DeliverChanges(context.Background(), api.DeliverRequest{Destination: dest, SeqRange: api.SeqRange{After: 0, To: 3}, Expect: 3})
	require.NoError(t, err)
}

// TestWebhookPayloads: a webhook destination receives the payload it is
// set to; set to canonical it receives canonical orders that validate
// against the schema, also for a version stored before canonical orders.
func TestWebhookPayloads(t *testing.T) {
	for _, payload := range []string{"", config.PayloadBoth, config.PayloadRaw, config.PayloadCanonical} {
		t.Run("payload "+payload, func(t *testing.T) {
			rc := &capture{}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			st := payloadStore(t)
			a := webhookActivities(t, st, srv.URL)
			d := a.Deliveries.Destinations["oms"]
			d.Payload = payload
			a.Deliveries.Destinations["oms"] = d
			deliverAll(t, a, "oms")
			require.Len(t, rc.bodies, 1)
			var body struct {
				ID      string            `json:"id"`
				Changes []json.RawMessage `json:"changes"`
			}
			require.NoError(t, json.Unmarshal(rc.bodies[0], &body))
			require.Len(t, body.Changes, 3)
			for _, c := range body.Changes {
				checkPayload(t, payload, c)
			}
			var b delivery.WebhookBatch
			require.NoError(t, json.Unmarshal(rc.bodies[0], &b), "a receiver decodes every payload as delivery.WebhookBatch")
			require.Equal(t, "oms-1-3", b.ID)
		})
	}
}

// TestWebhookDefaultPayloadIsTodaysBody: with no payload set, the body
// is byte for byte what the webhook sender wrote before payloads existed
// (the delivery.WebhookBatch of the changes as the feed holds them).
func TestWebhookDefaultPayloadIsTodaysBody(t *testing.T) {
	rc := &capture{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := payloadStore(t)
	a := webhookActivities(t, st, srv.URL)
	deliverAll(t, a, "oms")
	changes, err := st.Changes(context.Background(), store.ChangeQuery{After: 0, Limit: 10, Platform: "shop"})
	require.NoError(t, err)
	want, err := json.Marshal(delivery.WebhookBatch{ID: "oms-1-3", Type: "orders.changes", Destination: "oms", FromSeq: 1, ToSeq: 3, Changes: changes})
	require.NoError(t, err)
	require.Len(t, rc.bodies, 1)
	require.Equal(t, string(want), string(rc.bodies[0]))
	require.Contains(t, string(rc.bodies[0]), `"canonical":{"schema":"`+order.SchemaV1)
}

// TestNATSPayloads: each JetStream message carries the change in the
// destination's payload.
func TestNATSPayloads(t *testing.T) {
	url, _, js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, payload := range []string{config.PayloadBoth, config.PayloadRaw, config.PayloadCanonical} {
		t.Run("payload "+payload, func(t *testing.T) {
			subject := "p" + string(rune('a'+i))
			stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS_" + subject, Subjects: []string{subject + ".>"}})
			require.NoError(t, err)
			d := config.DestinationDefaults()
			d.Name, d.Kind, d.URL, d.Subject, d.Payload = "bus", "nats", url, subject, payload
			a := &Activities{Feed: payloadStore(t), Deliveries: &Deliveries{Destinations: map[string]config.Destination{"bus": d}}}
			defer a.Deliveries.Close()
			deliverAll(t, a, "bus")
			cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
			require.NoError(t, err)
			for range 3 {
				m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
				require.NoError(t, err)
				checkPayload(t, payload, m.Data())
			}
		})
	}
}

// TestKafkaPayloads: each Kafka record carries the change in the
// destination's payload.
func TestKafkaPayloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, payload := range []string{config.PayloadBoth, config.PayloadRaw, config.PayloadCanonical} {
		t.Run("payload "+payload, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
			require.NoError(t, err)
			defer cluster.Close()
			d := config.DestinationDefaults()
			d.Name, d.Kind, d.Brokers, d.Topic, d.Payload = "stream", "kafka", cluster.ListenAddrs(), "orders", payload
			a := &Activities{Feed: payloadStore(t), Deliveries: &Deliveries{Destinations: map[string]config.Destination{"stream": d}}}
			defer a.Deliveries.Close()
			deliverAll(t, a, "stream")
			consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			require.NoError(t, err)
			defer consumer.Close()
			for n := 0; n < 3; {
				fetches := consumer.PollFetches(ctx)
				require.NoError(t, fetches.Err())
				fetches.EachRecord(func(r *kgo.Record) {
					n++
					checkPayload(t, payload, r.Value)
				})
			}
		})
	}
}
