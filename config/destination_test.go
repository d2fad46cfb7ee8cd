package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const destPlatforms = `
platforms:
  shop:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/a
    credentials: {env: SHOP_TOKEN}
`

func TestDestinationsParse(t *testing.T) {
	f, err := Parse([]byte(destPlatforms + `
destinations:
  oms:
    kind: webhook
    url: https://oms.example.com/hooks/orders
    secret: {env: OMS_WEBHOOK_SECRET}
    batch_size: 50
    windows: ["MON-FRI 06:00-22:00 Europe/Berlin"]
  bus:
    kind: nats
    url: nats://127.0.0.1:4222
    subject: orders.changes
    platforms: [shop]
    rate_limit: {rps: 50}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"bus", "oms"}, f.DestinationNames())
	oms, ok := f.Destination("oms")
	require.True(t, ok)
	require.Equal(t, 50, oms.BatchSize)
	require.Equal(t, 10*time.Second, oms.Timeout.D(), "defaults fill what is not set")
	require.Equal(t, DefaultDeliveryTaskQueue, oms.TaskQueue)
	bus, _ := f.Destination("bus")
	require.Equal(t, RateLimit{RPS: 50, Burst: 10}, bus.RateLimit, "nested fields merge one by one")
}

func TestDestinationsValidate(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // one line per mistake
	}{
		{"webhook without secret, plain http elsewhere", `
  oms: {kind: webhook, url: "http://oms.example.com/hook"}`, []string{
			`destination "oms": field "url": "http://oms.example.com/hook": plain http sends credentials and orders unencrypted; use https://, or set allow_plaintext: true for a private network`,
			`destination "oms": field "secret": is required: {env: VAR_NAME} or {file: /path} holding the whsec_ signing secret; secrets never go in this file`,
		}},
		{"http to loopback is fine", `
  oms: {kind: webhook, url: "http://127.0.0.1:9000/hook", secret: {env: S}}`, nil},
		{"unknown kind and field", `
  oms: {kind: kafka2, url: "https://x", secret: {env: S}, batchsize: 3}`, []string{
			`destination "oms": field "batchsize": unknown field (line 8)`,
			`destination "oms": field "kind": unknown kind "kafka2" (one of webhook, nats, kafka)`,
		}},
		{"a value of the wrong type", `
  oms: {kind: webhook, url: "https://x", secret: {env: S}, batch_size: many}`, []string{
			"destination \"oms\": field \"batch_size\": cannot unmarshal !!str `many` into int (line 8)",
		}},
		{"nats mistakes", `
  bus: {kind: nats, url: "http://x", subject: "orders.>", platforms: [nope], max_in_flight: 17, secret: {env: "a b"}}`, []string{
			`destination "bus": field "secret.env": "a b" is not an environment variable name (put the secret in the environment, not here)`,
			`destination "bus": field "url": "http://x" is not a nats:// or tls:// URL`,
			`destination "bus": field "subject": "orders.>" is not a NATS subject of plain tokens (letters, digits, _ and -, separated by dots)`,
			`destination "bus": field "platforms": "nope" is not a platform of this file`,
			`destination "bus": field "max_in_flight": must be 1 to 16 batches delivered at once, got 17`,
		}},
		{"several batches in flight", `
  oms: {kind: webhook, url: "https://x", secret: {env: S}, max_in_flight: 16}`, nil},
		{"no batch in flight", `
  oms: {kind: webhook, url: "https://x", secret: {env: S}, max_in_flight: 0}`, []string{
			`destination "oms": field "max_in_flight": must be 1 to 16 batches delivered at once, got 0`,
		}},
		{"kafka", `
  stream: {kind: kafka, brokers: ["127.0.0.1:9092"], topic: orders}`, nil},
		{"kafka mistakes", `
  stream: {kind: kafka, brokers: ["kafka"], topic: "a topic", secret: {env: K}}`, []string{
			`destination "stream": field "brokers": "kafka" is not host:port`,
			`destination "stream": field "topic": "a topic" is not a Kafka topic name (1-249 of letters, digits, '.', '_' and '-')`,
			`destination "stream": field "secret": kafka destinations do not support credentials yet (SASL is a later increment)`,
		}},
		{"secret in the URL", `
  oms: {kind: webhook, url: "https://user:pw@oms.example.com", secret: {file: /run/s}, batch_size: 0}`, []string{
			`destination "oms": field "url": must not carry credentials; use secret`,
			`destination "oms": field "batch_size": must be 1 to 1000, got 0`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(destPlatforms + "destinations:" + tc.yaml + "\n"))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, strings.Join(tc.want, "\n"), err.Error())
		})
	}
}
