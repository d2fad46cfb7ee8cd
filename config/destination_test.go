package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/tuning"
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
		{"a stored secret is a platform's kind of credential", `
  oms: {kind: webhook, url: "https://oms.example.com/hook", secret: {stored: oms}}`, []string{
			`destination "oms": field "secret.stored": a destination's secret is {env} or {file}; stored credentials hold platforms' OAuth tokens`,
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
		{"every payload", `
  a: {kind: webhook, url: "https://x", secret: {env: S}, payload: canonical}
  b: {kind: nats, url: "nats://127.0.0.1:4222", subject: orders, payload: raw}
  c: {kind: kafka, brokers: ["127.0.0.1:9092"], topic: orders, payload: both}`, nil},
		{"a payload that is none", `
  oms: {kind: webhook, url: "https://x", secret: {env: S}, payload: Canonical}
  bus: {kind: nats, url: "nats://127.0.0.1:4222", subject: orders, payload: [raw]}`, []string{
			`destination "oms": field "payload": "Canonical" is not a payload: one of both, raw, canonical (default both)`,
			`destination "bus": field "payload": cannot unmarshal !!seq into string (line 9)`,
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

// TestDestinationSettingsAreTheTuning: Settings holds every tuning field
// of Destination and nothing of its identity, under the same JSON names
// (so a whole destination recorded in history decodes into it), and
// WithTuning puts them back: a field added to Destination must be placed
// on one side or the other.
func TestDestinationSettingsAreTheTuning(t *testing.T) {
	identity := map[string]bool{}
	for _, k := range IgnoredDestinationFields {
		identity[k] = true
	}
	settingsFields := map[string]bool{}
	st := reflect.TypeOf(tuning.Destination{})
	for i := 0; i < st.NumField(); i++ {
		settingsFields[jsonName(st.Field(i))] = true
	}
	dt := reflect.TypeOf(Destination{})
	for i := 0; i < dt.NumField(); i++ {
		name := jsonName(dt.Field(i))
		require.False(t, identity[name] && settingsFields[name], "Destination field %q is both identity and tuning", name)
		require.True(t, identity[name] || settingsFields[name], "Destination field %q is neither identity nor in tuning.Destination", name)
	}

	d := DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = "oms", "webhook", "https://oms.example/hook", CredentialRef{Env: "OMS_SECRET"}
	d.Platforms, d.Windows, d.MaxInFlight, d.AllowPlaintext = []string{"shop"}, []string{"MON-FRI 00:00-06:00"}, 3, true
	require.Nil(t, d.Validate(nil))
	s := d.Settings()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "oms.example")
	require.NotContains(t, string(raw), "OMS_SECRET")
	whole, err := json.Marshal(d)
	require.NoError(t, err)
	var recorded tuning.Destination
	require.NoError(t, json.Unmarshal(whole, &recorded))
	require.Equal(t, s, recorded, "a whole destination decodes into its settings")

	other := Destination{Name: "oms", Kind: "webhook", URL: "https://registered.example", Platforms: []string{"b"}}
	back := other.WithTuning(s)
	d.URL, d.Secret, d.Platforms, d.AllowPlaintext = other.URL, other.Secret, other.Platforms, false
	require.Equal(t, d, back, "the tuning comes back whole, the identity stays the registry's")
}

// TestDecodeDestinationSettingsJSON: a destination's `config` payload may
// still carry the whole entry; its identity is dropped unread, every
// other unknown field is refused by name, at any depth, as a destination's.
func TestDecodeDestinationSettingsJSON(t *testing.T) {
	d := DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = "oms", "webhook", "https://oms.example/hook", CredentialRef{Env: "OMS_SECRET"}
	d.BatchSize = 42
	full, err := json.Marshal(d)
	require.NoError(t, err)
	s, err := DecodeDestinationSettingsJSON(full)
	require.NoError(t, err)
	require.Equal(t, d.Settings(), s)

	for payload, field := range map[string]string{
		`{"name":"oms","urll":"https://x"}`:               "urll",
		`{"name":"oms","rate_limit":{"rps":1,"burts":2}}`: "rate_limit.burts",
		`{"name":"oms","Batch_Size":3}`:                   "Batch_Size",
		`{"name":"oms","headers":{"Authorization":"x"}}`:  "headers",
	} {
		_, err := DecodeDestinationSettingsJSON([]byte(payload))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, payload)
		require.Equal(t, field, ve.Problems[0].Field, payload)
		require.Equal(t, "oms", ve.Problems[0].Destination, payload)
		require.Contains(t, ve.Error(), `destination "oms"`, payload)
	}
}

// TestValidateDestinationSettings: the settings a Delivery takes are held
// to the tuning rules the file's destinations are, and need no identity.
func TestValidateDestinationSettings(t *testing.T) {
	d := DestinationDefaults()
	d.Name, d.Kind = "oms", "kafka"
	require.Nil(t, ValidateDestinationSettings(d.Settings()), "no brokers or topic: identity is the registry's")
	for field, mutate := range map[string]func(*tuning.Destination){
		"":              func(s *tuning.Destination) { s.Name = "Bad Name" },
		"kind":          func(s *tuning.Destination) { s.Kind = "smtp" },
		"batch_size":    func(s *tuning.Destination) { s.BatchSize = 1001 },
		"max_in_flight": func(s *tuning.Destination) { s.MaxInFlight = MaxInFlightLimit + 1 },
		"windows":       func(s *tuning.Destination) { s.Windows = []string{"whenever"} },
		"task_queue":    func(s *tuning.Destination) { s.TaskQueue = " " },
	} {
		s := d.Settings()
		mutate(&s)
		ve := ValidateDestinationSettings(s)
		require.NotNil(t, ve, field)
		require.Equal(t, field, ve.Problems[0].Field, field)
	}
}
