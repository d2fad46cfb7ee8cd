package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// One plain-text rule for every outbound endpoint (issue 24): encrypted
// unless loopback, allow_plaintext the one opt-in, link-local and
// metadata addresses always refused. Before, a platform endpoint could be
// http:// to any host, a NATS token went to any host in the clear, and
// webhooks to https://169.254.169.254/ validated.
func TestOnePlainTextRule(t *testing.T) {
	platform := func(endpoint, extra string) string {
		return "platforms:\n  shop:\n    kind: sim\n    endpoint: " + endpoint + "\n    credentials: {env: T}\n" + extra
	}
	dest := func(yaml string) string {
		return platform("http://127.0.0.1:8780/shops/a", "") + "destinations:\n  d: " + yaml + "\n"
	}
	const plain = "sends credentials and orders unencrypted; use %s://, or set allow_plaintext: true for a private network"
	tests := []struct {
		name, yaml string
		want       string // "" when valid
	}{
		{"platform over http to another host", platform("http://shop.internal/shops/a", ""),
			`platform "shop": field "endpoint": "http://shop.internal/shops/a": plain http ` + strings.Replace(plain, "%s", "https", 1)},
		{"platform over http with the opt-in", platform("http://10.0.0.5/shops/a", "    allow_plaintext: true\n"), ""},
		{"platform opt-in from the default block", "default: {allow_plaintext: true}\n" + platform("http://sim:8780/shops/a", ""), ""},
		{"platform over http to loopback", platform("http://[::1]:8780/shops/a", ""), ""},
		{"platform over https", platform("https://shop.example.com", ""), ""},
		{"platform at the metadata address", platform("https://169.254.169.254/latest", "    allow_plaintext: true\n"),
			`platform "shop": field "endpoint": "https://169.254.169.254/latest": host is a link-local address`},
		{"platform at EC2's IPv6 metadata address", platform("http://[fd00:ec2::254]/", "    allow_plaintext: true\n"),
			`platform "shop": field "endpoint": "http://[fd00:ec2::254]/": host is the EC2 metadata service`},
		{"platform at GCE's metadata name", platform("https://metadata.google.internal/", ""),
			`host is a cloud metadata service`},
		{"an OAuth token_url over http to another host", "platforms:\n  shop:\n    kind: ebay\n    endpoint: https://api.ebay.com\n    credentials: {env: T}\n    options: {token_url: \"http://auth.internal/token\"}\n",
			`platform "shop": field "options.token_url": "http://auth.internal/token": plain http`},
		{"webhook to the metadata address", dest(`{kind: webhook, url: "https://169.254.169.254/hook", secret: {env: S}}`),
			`destination "d": field "url": "https://169.254.169.254/hook": host is a link-local address`},
		{"webhook to a private network over https", dest(`{kind: webhook, url: "https://10.1.2.3/hook", secret: {env: S}}`), ""},
		{"webhook over http with the opt-in", dest(`{kind: webhook, url: "http://oms:9000/hook", secret: {env: S}, allow_plaintext: true}`), ""},
		{"nats token to another host in the clear", dest(`{kind: nats, url: "nats://bus.internal:4222", subject: orders, secret: {env: S}}`),
			`destination "d": field "url": "nats://bus.internal:4222": plain nats ` + strings.Replace(plain, "%s", "tls", 1)},
		{"nats over tls", dest(`{kind: nats, url: "tls://bus.internal:4222", subject: orders, secret: {env: S}}`), ""},
		{"nats in a private network", dest(`{kind: nats, url: "nats://nats:4222", subject: orders, allow_plaintext: true}`), ""},
		{"nats to loopback", dest(`{kind: nats, url: "nats://127.0.0.1:4222", subject: orders, secret: {env: S}}`), ""},
		{"kafka broker at a link-local address", dest(`{kind: kafka, brokers: ["169.254.10.1:9092"], topic: orders}`),
			`destination "d": field "brokers": "169.254.10.1:9092": host is a link-local address`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Len(t, strings.Split(err.Error(), "\n"), 1, "one line: %v", err)
		})
	}
}

// Platforms "a.b" and "a_b" would publish to one NATS subject; the file
// is refused, naming both.
func TestNATSSubjectCollision(t *testing.T) {
	file := func(platforms []string, dest string) string {
		y := "platforms:\n"
		for _, p := range platforms {
			y += "  " + p + ":\n    kind: sim\n    endpoint: http://127.0.0.1:8780/shops/a\n    credentials: {env: T}\n"
		}
		return y + "destinations:\n  bus: " + dest + "\n"
	}
	_, err := Parse([]byte(file([]string{"a.b", "a_b", "c"}, `{kind: nats, url: "nats://127.0.0.1:4222", subject: orders}`)))
	require.ErrorContains(t, err, `destination "bus": field "subject": platforms "a.b" and "a_b" would share the subject orders.a_b`)
	_, err = Parse([]byte(file([]string{"a.b", "a_b"}, `{kind: nats, url: "nats://127.0.0.1:4222", subject: orders, platforms: [a.b]}`)))
	require.NoError(t, err, "a destination of one of them only")
	_, err = Parse([]byte(file([]string{"a.b", "a_b"}, `{kind: webhook, url: "https://oms.example.com", secret: {env: S}}`)))
	require.NoError(t, err, "webhooks carry the platform in the body")
}
