package config

import (
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/internal/tuning"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Platform is one configured source account after the default block has been
// merged in. It travels in workflow inputs and the `config` signal as JSON, so
// it holds credential references, never secrets.
type Platform struct {
	Name     string `json:"name" yaml:"-"`
	Kind     string `json:"kind" yaml:"kind"`
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	// AllowPlaintext permits a plain http:// endpoint to a host that is
	// not loopback (a private network); see config/plaintext.go.
	AllowPlaintext bool          `json:"allow_plaintext,omitempty" yaml:"allow_plaintext"`
	Credentials    CredentialRef `json:"credentials" yaml:"credentials"`
	// Start is where the backfill begins: RFC3339, or relative to now ("-2160h").
	Start    string   `json:"start" yaml:"start"`
	Interval Duration `json:"interval" yaml:"interval"`
	// Overlap widens every request backwards so boundary updates are not missed.
	Overlap Duration `json:"overlap" yaml:"overlap"`
	// Settle is how far behind now a slice must end before it is fetched.
	Settle  Duration `json:"settle" yaml:"settle"`
	Timeout Duration `json:"timeout" yaml:"timeout"`
	// Retries is how many times a failing page is retried (0: tried once).
	Retries       int      `json:"retries" yaml:"retries"`
	RetryInterval Duration `json:"retry_interval" yaml:"retry_interval"`
	// RetryBackoff multiplies the interval after each retry (the growing interval).
	RetryBackoff     float64  `json:"retry_backoff" yaml:"retry_backoff"`
	MaxRetryInterval Duration `json:"max_retry_interval" yaml:"max_retry_interval"`
	// Concurrency is how many slices may be in flight at once.
	Concurrency int       `json:"concurrency" yaml:"concurrency"`
	RateLimit   RateLimit `json:"rate_limit" yaml:"rate_limit"`
	// RateLimitWait is how long one page may keep waiting on the
	// platform's rate-limit answers (429, THROTTLED) before it fails as
	// rate-limited; those answers are waits, never attempts. 0: the
	// default, DefaultRateLimitWait.
	RateLimitWait Duration `json:"rate_limit_wait,omitempty" yaml:"rate_limit_wait"`
	PageSize      int      `json:"page_size" yaml:"page_size"`
	// MaxPages is how many pages one slice may take before it splits in two.
	MaxPages int `json:"max_pages" yaml:"max_pages"`
	// BackfillMaxSpan lets backfill slices grow beyond interval while the
	// history is sparse (each slice doubles while slices take at most a
	// quarter of max_pages, halves when one splits), up to this span; near
	// the present slices are one interval again. 0 keeps every slice one
	// interval long.
	BackfillMaxSpan Duration `json:"backfill_max_span,omitempty" yaml:"backfill_max_span"`
	// ResweepDelay, when set, fetches every closed window once more this
	// long after it was first fetched, to catch updates the platform showed
	// later than the overlap covers. 0 disables the re-sweep.
	ResweepDelay Duration `json:"resweep_delay,omitempty" yaml:"resweep_delay"`
	// BreakerFailures pauses the cursor after this many consecutive failed
	// slices (the platform is probably down); 0 disables the breaker.
	BreakerFailures int `json:"breaker_failures" yaml:"breaker_failures"`
	// LagAlert raises an alert when the watermark falls further behind now
	// than this; 0 disables it.
	LagAlert Duration `json:"lag_alert,omitempty" yaml:"lag_alert"`
	// StallAlert raises an alert when slices are in flight and none of
	// them has finished for this long: a cursor that makes no progress (a
	// pacing livelock, a platform that never answers usably). 0 means
	// DefaultStallAlert; the largest value (720h) all but silences it.
	StallAlert Duration `json:"stall_alert,omitempty" yaml:"stall_alert"`
	// DeadLetterRetry retries dead-lettered slices whose cause is transient
	// on a backoff schedule (deadletter_retry.go); the zero value is on,
	// with the default schedule.
	DeadLetterRetry DeadLetterRetry `json:"dead_letter_retry,omitzero" yaml:"dead_letter_retry"`
	// Reconcile turns count reconciliation off when false (unset: on, for
	// the kinds with a count call). ReconcileWindow is the window the
	// platform's count is compared with the store's in (0: a day);
	// ReconcileRecheck is how long after a window's end it is checked
	// again (unset: 3 days; 0: never). See docs/reconcile.md.
	Reconcile        *bool     `json:"reconcile,omitempty" yaml:"reconcile"`
	ReconcileWindow  Duration  `json:"reconcile_window,omitempty" yaml:"reconcile_window"`
	ReconcileRecheck *Duration `json:"reconcile_recheck,omitempty" yaml:"reconcile_recheck"`
	// WebhookInterval is how often the cursor polls while the account's
	// webhooks are live (an event accepted within twice this): hybrid
	// pacing, docs/webhooks.md. 0 (off): always interval. A whole multiple
	// of interval.
	WebhookInterval Duration `json:"webhook_interval,omitempty" yaml:"webhook_interval"`
	// LiveWindows is how a caught-up cursor fetches its live windows:
	// "inline" (default; a FetchWindow activity of the cursor, a child Slice
	// workflow only when that fails) or "workflows" (a child Slice
	// workflow each, as before v0.11). docs/configuration.md.
	LiveWindows string `json:"live_windows,omitempty" yaml:"live_windows"`
	// Windows restrict when the platform may be pulled, e.g. "MON-FRI 00:00-06:00 Europe/Berlin".
	Windows   []string `json:"windows,omitempty" yaml:"windows"`
	TaskQueue string   `json:"task_queue" yaml:"task_queue"`
	// Options carries kind-specific settings (API version, marketplace ids, ...).
	Options map[string]any `json:"options,omitempty" yaml:"options"`
}

// CredentialRef says where a secret lives: an environment variable, a file,
// or a credential stored (encrypted) in the store under a name, for OAuth
// tokens that rotate. Only the reference is ever stored or sent; Resolve
// reads an env or file secret, package credentials serves stored ones.
type CredentialRef struct {
	Env    string `json:"env,omitempty" yaml:"env"`
	File   string `json:"file,omitempty" yaml:"file"`
	Stored string `json:"stored,omitempty" yaml:"stored"`
}

// The stall and rate-limit-wait defaults are api's: workflows decide by them.
const (
	DefaultStallAlert    = tuning.DefaultStallAlert
	DefaultRateLimitWait = tuning.DefaultRateLimitWait
)

// DefaultTaskQueue is the task queue of a platform that names none: one
// per kind, shared by every account of that kind, each with its own
// fairness key (so a new account needs no new pollers, and one huge
// account cannot starve the small ones). Before the registry the default
// was orders-<platform>; a cursor still running there keeps its queue when
// the platform is registered (accounts.Service.ApplyPlatforms).
func DefaultTaskQueue(kind string) string { return "orders-" + kind }

// maxSecretSize bounds a credential file: it holds one token or a small
// JSON object, and a reference to a huge file (or /dev/zero) must not
// exhaust the worker's memory.
const maxSecretSize = 64 << 10

// Resolve reads the secret the reference points to, with surrounding
// whitespace trimmed. An unset or empty variable and a missing, unreadable,
// empty or oversized file are errors. The error names the reference, never
// the secret.
func (c CredentialRef) Resolve() (string, error) {
	switch {
	case c.Env != "":
		v, ok := os.LookupEnv(c.Env)
		if !ok {
			return "", fmt.Errorf("credential environment variable %s is not set", c.Env)
		}
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("credential environment variable %s is empty", c.Env)
		}
		return strings.TrimSpace(v), nil
	case c.File != "":
		b, err := readSecretFile(c.File)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", fmt.Errorf("credential file %s is empty", c.File)
		}
		return strings.TrimSpace(string(b)), nil
	case c.Stored != "":
		return "", fmt.Errorf("credential %s is stored in the credential store; a worker with ORDERSYNC_CREDENTIAL_KEYS reads it", c)
	default:
		return "", fmt.Errorf("no credential reference (env, file or stored) configured")
	}
}

func readSecretFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return nil, fmt.Errorf("credential file %s cannot be read: %w", path, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxSecretSize+1))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("credential file %s cannot be read: %w", path, err)
	}
	if len(b) > maxSecretSize {
		return nil, fmt.Errorf("credential file %s is larger than %d KiB; it should hold only the secret", path, maxSecretSize>>10)
	}
	return b, nil
}

// CheckCredentials resolves the credential reference of each platform and
// reports one problem per platform whose secret cannot be read, naming the
// reference; the secrets are dropped at once, never returned or printed.
// source names the platforms file in the messages. It returns nil when
// every reference resolves.
func CheckCredentials(source string, platforms []Platform) error {
	ve := &ValidationError{Source: source}
	for _, p := range platforms {
		if p.Credentials.Stored != "" {
			continue // in the credential store; the worker checks it there
		}
		if _, err := p.Credentials.Resolve(); err != nil {
			ve.add(p.Name, "credentials", "%v", err)
		}
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

func (c CredentialRef) String() string {
	switch {
	case c.Env != "":
		return "env:" + c.Env
	case c.File != "":
		return "file:" + c.File
	case c.Stored != "":
		return "stored:" + c.Stored
	}
	return "none"
}

// ResolveStart turns Start into an absolute UTC time, relative to now when
// Start is a duration.
func (p Platform) ResolveStart(now time.Time) (time.Time, error) {
	return tuning.ParseStart(p.Start, now)
}
