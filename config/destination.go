package config

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// DestinationKinds lists the back-ends a destination may name. Adding one
// means a row here, a case in Destination.checkKind and a sender in
// delivery/sender.go (its registry test fails until all three agree).
var DestinationKinds = []string{"webhook", "nats", "kafka"}

// DefaultDeliveryTaskQueue runs every Delivery workflow and its activities
// unless a destination names another.
const DefaultDeliveryTaskQueue = "deliveries"

// Destination is one back-end that receives the change feed, from the
// platforms file's destinations block. Like Platform it travels in
// workflow input as JSON, so it holds a credential reference, never the
// secret.
type Destination struct {
	Name string `json:"name" yaml:"-"`
	Kind string `json:"kind" yaml:"kind"`
	// URL is where batches go: the webhook's https URL (http only for
	// loopback), or the NATS server (nats:// or tls://).
	URL string `json:"url" yaml:"url"`
	// AllowPlaintext permits http:// (webhook) or nats:// to a host that is
	// not loopback (a private network); see config/plaintext.go.
	AllowPlaintext bool `json:"allow_plaintext,omitempty" yaml:"allow_plaintext"`
	// Secret is the webhook signing secret (Standard Webhooks, "whsec_"
	// and base64), or the NATS token; required for webhooks.
	Secret CredentialRef `json:"secret,omitzero" yaml:"secret"`
	// Subject prefixes NATS subjects: a change of platform P goes to
	// "<subject>.<P>". A JetStream stream must capture them.
	Subject string `json:"subject,omitempty" yaml:"subject"`
	// Brokers are the Kafka bootstrap brokers (host:port).
	Brokers []string `json:"brokers,omitempty" yaml:"brokers"`
	// Topic receives a Kafka destination's changes, keyed by
	// platform/order id so each order's changes share a partition.
	Topic string `json:"topic,omitempty" yaml:"topic"`
	// Platforms limits the destination to these platforms' changes; empty
	// sends every platform's.
	Platforms []string `json:"platforms,omitempty" yaml:"platforms"`
	// Payload is which form of each change's order the destination
	// receives: PayloadBoth (also when empty: what destinations received
	// before there was a choice, plus the canonical order), PayloadRaw or
	// PayloadCanonical (docs/delivery.md, "What a destination receives").
	Payload string `json:"payload,omitempty" yaml:"payload"`
	// BatchSize is the most changes one delivery carries.
	BatchSize int `json:"batch_size" yaml:"batch_size"`
	// Timeout bounds one delivery attempt.
	Timeout Duration `json:"timeout" yaml:"timeout"`
	// Retries is how many times a failed batch is retried before it counts
	// as a failure for the breaker.
	Retries       int      `json:"retries" yaml:"retries"`
	RetryInterval Duration `json:"retry_interval" yaml:"retry_interval"`
	// RateLimit bounds deliveries (batches) per second.
	RateLimit RateLimit `json:"rate_limit" yaml:"rate_limit"`
	// MaxInFlight is how many batches may be delivered at once (1 to
	// MaxInFlightLimit). Above 1 each range of the feed is split into that
	// many lanes by order, so one order's changes stay in one batch, in
	// order; the next range starts once every lane is confirmed.
	MaxInFlight int `json:"max_in_flight" yaml:"max_in_flight"`
	// BreakerFailures pauses delivery after this many consecutive failed
	// batches and raises an alert; 0 disables the breaker.
	BreakerFailures int `json:"breaker_failures" yaml:"breaker_failures"`
	// Windows restrict when the destination may receive.
	Windows   []string `json:"windows,omitempty" yaml:"windows"`
	TaskQueue string   `json:"task_queue" yaml:"task_queue"`
}

// Payload values of a destination.
const (
	// PayloadBoth sends the order as stored: its header and lines, the
	// platform's raw JSON and the canonical order.
	PayloadBoth = "both"
	// PayloadRaw sends the order without its canonical form.
	PayloadRaw = "raw"
	// PayloadCanonical sends the canonical order with the order's identity
	// and times, without the raw JSON and the per-kind header and lines.
	PayloadCanonical = "canonical"
)

// PayloadValues are the payload values a destination may name.
var PayloadValues = []string{PayloadBoth, PayloadRaw, PayloadCanonical}

// MaxInFlightLimit bounds max_in_flight: each batch in flight is an
// activity and a connection to the destination, and a range of
// max_in_flight × batch_size seqs is listed in workflow history at once.
const MaxInFlightLimit = 16

// DestinationDefaults are the settings of a destination that sets nothing.
func DestinationDefaults() Destination {
	return Destination{
		BatchSize:       100,
		Timeout:         Duration(10e9),
		Retries:         5,
		RetryInterval:   Duration(1e9),
		RateLimit:       RateLimit{RPS: 10, Burst: 10},
		MaxInFlight:     1,
		BreakerFailures: 5,
		TaskQueue:       DefaultDeliveryTaskQueue,
	}
}

var kafkaTopic = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

var natsSubjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// Validate checks one destination; platforms are the file's platform
// names, which Platforms must be among (nil skips that check).
func (d Destination) Validate(platforms []string) *ValidationError {
	ve := &ValidationError{}
	bad := func(field, format string, args ...any) {
		ve.Problems = append(ve.Problems, Problem{Destination: d.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	checkDestinationNameKind(d.Name, d.Kind, bad)
	switch {
	case d.Secret.Stored != "":
		bad("secret.stored", "a destination's secret is {env} or {file}; stored credentials hold platforms' OAuth tokens")
	case d.Secret.Env != "" && d.Secret.File != "":
		bad("secret", "set env or file, not both")
	case d.Secret.Env != "" && !envName.MatchString(d.Secret.Env):
		bad("secret.env", "%q is not an environment variable name (put the secret in the environment, not here)", d.Secret.Env)
	}
	d.checkKind(bad)
	if d.Payload != "" && !slices.Contains(PayloadValues, d.Payload) {
		bad("payload", "%q is not a payload: one of %s (default %s)", d.Payload, strings.Join(PayloadValues, ", "), PayloadBoth)
	}
	for _, p := range d.Platforms {
		if platforms != nil && !slices.Contains(platforms, p) {
			bad("platforms", "%q is not a platform of this file", p)
		}
	}
	if d.Kind == "nats" {
		d.checkSubjectCollisions(platforms, bad)
	}
	d.checkTuning(bad)
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// checkDestinationNameKind checks a destination's name and kind.
func checkDestinationNameKind(name, kind string, bad func(field, format string, args ...any)) {
	if !platformName.MatchString(name) {
		bad("", "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
	}
	switch {
	case kind == "":
		bad("kind", "is required (one of %s)", strings.Join(DestinationKinds, ", "))
	case !slices.Contains(DestinationKinds, kind):
		bad("kind", "unknown kind %q (one of %s)", kind, strings.Join(DestinationKinds, ", "))
	}
}

// checkTuning checks what the Delivery workflow decides by.
func (d Destination) checkTuning(bad func(field, format string, args ...any)) {
	if d.BatchSize < 1 || d.BatchSize > 1000 {
		bad("batch_size", "must be 1 to 1000, got %d", d.BatchSize)
	}
	if d.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", d.Timeout)
	}
	if d.Retries < 0 {
		bad("retries", "must not be negative, got %d", d.Retries)
	}
	if d.RetryInterval <= 0 {
		bad("retry_interval", "must be positive, got %s", d.RetryInterval)
	}
	if d.RateLimit.RPS <= 0 {
		bad("rate_limit.rps", "must be positive, got %g", d.RateLimit.RPS)
	}
	if d.RateLimit.Burst < 1 {
		bad("rate_limit.burst", "must be at least 1, got %d", d.RateLimit.Burst)
	}
	if d.MaxInFlight < 1 || d.MaxInFlight > MaxInFlightLimit {
		bad("max_in_flight", "must be 1 to %d batches delivered at once, got %d", MaxInFlightLimit, d.MaxInFlight)
	}
	if d.BreakerFailures < 0 {
		bad("breaker_failures", "must not be negative (0 disables the breaker), got %d", d.BreakerFailures)
	}
	for _, w := range d.Windows {
		if _, err := ParseWindow(w); err != nil {
			bad("windows", "%v", err)
		}
	}
	if strings.TrimSpace(d.TaskQueue) == "" {
		bad("task_queue", "must not be empty")
	}
}

// checkKind checks what only the destination's kind knows.
func (d Destination) checkKind(bad func(field, format string, args ...any)) {
	switch d.Kind {
	case "webhook":
		u, err := url.Parse(d.URL)
		switch {
		case d.URL == "":
			bad("url", "is required")
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("url", "%q is not an https URL", d.URL)
		case u.User != nil:
			bad("url", "must not carry credentials; use secret")
		default:
			d.checkPlaintext(bad)
		}
		if d.Secret.Env == "" && d.Secret.File == "" {
			bad("secret", "is required: {env: VAR_NAME} or {file: /path} holding the whsec_ signing secret; secrets never go in this file")
		}
		if d.Subject != "" {
			bad("subject", "is for nats destinations")
		}
	case "kafka":
		if len(d.Brokers) == 0 {
			bad("brokers", "is required: a list of host:port")
		}
		for _, b := range d.Brokers {
			if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
				bad("brokers", "%q is not host:port", b)
			}
		}
		d.checkPlaintext(bad)
		if !kafkaTopic.MatchString(d.Topic) {
			bad("topic", "%q is not a Kafka topic name (1-249 of letters, digits, '.', '_' and '-')", d.Topic)
		}
		if d.URL != "" || d.Subject != "" {
			bad("url", "kafka destinations take brokers and topic, not url or subject")
		}
		if d.Secret.Env != "" || d.Secret.File != "" {
			bad("secret", "kafka destinations do not support credentials yet (SASL is a later increment)")
		}
	case "nats":
		u, err := url.Parse(d.URL)
		switch {
		case d.URL == "":
			bad("url", "is required (nats://host:4222)")
		case err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls"):
			bad("url", "%q is not a nats:// or tls:// URL", d.URL)
		case u.User != nil:
			bad("url", "must not carry credentials; use secret")
		default:
			d.checkPlaintext(bad)
		}
		if d.Subject == "" {
			bad("subject", "is required: changes of platform P go to <subject>.<P>")
		} else if !natsSubjectToken.MatchString(d.Subject) {
			bad("subject", "%q is not a NATS subject of plain tokens (letters, digits, _ and -, separated by dots)", d.Subject)
		}
	}
}

// checkSubjectCollisions refuses two platforms whose changes would share a
// NATS subject: a platform's subject token is its name with '.' (a NATS
// token separator) as '_' (delivery.NATSSubject), so "a.b" and "a_b"
// would be one subject and a consumer could not tell them apart.
func (d Destination) checkSubjectCollisions(platforms []string, bad func(field, format string, args ...any)) {
	names := d.Platforms
	if len(names) == 0 {
		names = platforms
	}
	byToken := map[string]string{}
	for _, p := range names {
		token := strings.ReplaceAll(p, ".", "_")
		if other, ok := byToken[token]; ok && other != p {
			bad("subject", "platforms %q and %q would share the subject %s.%s ('.' becomes '_'); rename one, or send them to separate destinations", other, p, d.Subject, token)
			continue
		}
		byToken[token] = p
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Destination returns the destination with the given name.
func (f *File) Destination(name string) (Destination, bool) {
	for _, d := range f.Destinations {
		if d.Name == name {
			return d, true
		}
	}
	return Destination{}, false
}

// DestinationNames lists the destination names in order.
func (f *File) DestinationNames() []string {
	names := make([]string, len(f.Destinations))
	for i, d := range f.Destinations {
		names[i] = d.Name
	}
	return names
}

// CheckDestinationSecrets resolves each destination's secret reference (when
// it has one) and reports one problem per destination whose secret cannot
// be read, or, for a webhook, is not in the form the sender signs with
// (delivery's webhookKey: "whsec_" and base64); the secrets are dropped
// at once and never quoted.
func CheckDestinationSecrets(source string, dests []Destination) error {
	ve := &ValidationError{Source: source}
	for _, d := range dests {
		if d.Secret.Env == "" && d.Secret.File == "" {
			continue
		}
		secret, err := d.Secret.Resolve()
		if err != nil {
			ve.Problems = append(ve.Problems, Problem{Destination: d.Name, Field: "secret", Reason: err.Error()})
			continue
		}
		if d.Kind == "webhook" {
			if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); err != nil || len(key) == 0 {
				ve.Problems = append(ve.Problems, Problem{Destination: d.Name, Field: "secret", Reason: fmt.Sprintf(
					"webhook secret %s is not whsec_ followed by base64 (Standard Webhooks); make one with: echo whsec_$(openssl rand -base64 32)", d.Secret)})
			}
		}
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}
