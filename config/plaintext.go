package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// One rule for every outbound endpoint that carries a credential or order
// data: platform endpoints (credentials ride in every request), webhook
// destinations (signed batches of orders), NATS destinations (a token,
// when set) and Kafka brokers.
//
//   - The connection is encrypted (https://, NATS tls://) unless the host is
//     loopback (127.0.0.0/8, ::1, localhost).
//   - allow_plaintext: true on the platform or destination is the one
//     opt-in for plain http:// or nats:// to another host, meant for a
//     private network (a compose network, a cluster-internal service).
//   - Link-local addresses (169.254.0.0/16, fe80::/10, including the cloud
//     metadata endpoints 169.254.169.254 and fd00:ec2::254) and
//     metadata.google.internal are always refused: nothing ordersync talks
//     to lives there, and a credential sent there is a credential lost.
//
// Kafka destinations take no credentials and no TLS yet, so only the
// link-local rule applies to their brokers.

// refusedHost says why a host must never receive a credential, or "".
func refusedHost(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "metadata.google.internal" || h == "metadata" {
		return "is a cloud metadata service; it never receives credentials or orders"
	}
	addr, err := netip.ParseAddr(strings.Trim(h, "[]"))
	if err != nil {
		return ""
	}
	addr = addr.Unmap()
	switch {
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		return "is a link-local address (cloud metadata lives there); it never receives credentials or orders"
	case addr == netip.MustParseAddr("fd00:ec2::254"):
		return "is the EC2 metadata service; it never receives credentials or orders"
	case addr.IsUnspecified():
		return "is the unspecified address; name the host"
	}
	return ""
}

// checkPlaintext applies the rule to a URL: secure is the scheme that
// encrypts (https, tls), plain the one that does not (http, nats).
func checkPlaintext(raw, secure, plain string, allow bool) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "" // the form check reports it
	}
	if why := refusedHost(u.Hostname()); why != "" {
		return fmt.Sprintf("%q: host %s", raw, why)
	}
	if u.Scheme == plain && !allow && !loopbackHost(u.Hostname()) {
		return fmt.Sprintf("%q: plain %s sends credentials and orders unencrypted; use %s://, or set allow_plaintext: true for a private network", raw, plain, secure)
	}
	return ""
}

// checkPlaintext applies the rule to the platform's endpoint and to an
// OAuth token_url (amazon, ebay), which receives the client secret and
// the refresh token.
func (p Platform) checkPlaintext() *ValidationError {
	ve := &ValidationError{}
	if why := checkPlaintext(p.Endpoint, "https", "http", p.AllowPlaintext); why != "" {
		ve.add(p.Name, "endpoint", "%s", why)
	}
	if u, ok := p.Options["token_url"].(string); ok && u != "" {
		if why := checkPlaintext(u, "https", "http", p.AllowPlaintext); why != "" {
			ve.add(p.Name, "options.token_url", "%s", why)
		}
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// checkPlaintext applies the rule to the destination's URL or brokers.
func (d Destination) checkPlaintext(bad func(field, format string, args ...any)) {
	switch d.Kind {
	case "webhook":
		if why := checkPlaintext(d.URL, "https", "http", d.AllowPlaintext); why != "" {
			bad("url", "%s", why)
		}
	case "nats":
		// Without a token a nats:// URL carries orders but no credential;
		// the same rule still applies, so no configuration sends orders in
		// the clear without saying so.
		if why := checkPlaintext(d.URL, "tls", "nats", d.AllowPlaintext); why != "" {
			bad("url", "%s", why)
		}
	case "kafka":
		for _, b := range d.Brokers {
			if host, _, err := net.SplitHostPort(b); err == nil {
				if why := refusedHost(host); why != "" {
					bad("brokers", "%q: host %s", b, why)
				}
			}
		}
	}
}
