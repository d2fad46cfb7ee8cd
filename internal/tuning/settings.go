package tuning

import (
	"time"
)

// Settings are what a platform's workflows decide by: its name and kind,
// the registry revision they were read at, and its tuning. They travel in
// workflow and activity inputs and the `config` signal by reference to the
// platform's registry entry: where requests go and with which secret
// (endpoint, credentials, options, allow_plaintext) is never part of them;
// activities resolve that from the account registry by name.
//
// The JSON names and forms are those of config.Platform, so the settings
// recorded in histories before v0.8 (a whole config.Platform) decode into
// Settings: their identity fields are ignored, their options read only as
// LegacyOptions.
type Settings struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Revision is the registry revision the settings were read at; 0 when
	// unknown (settings from a file, or recorded before v0.8).
	Revision int64 `json:"revision,omitempty"`
	// Start is where the backfill begins: RFC3339, or relative to now ("-2160h").
	Start    string   `json:"start"`
	Interval Duration `json:"interval"`
	// Overlap widens every request backwards so boundary updates are not missed.
	Overlap Duration `json:"overlap"`
	// Settle is how far behind now a slice must end before it is fetched.
	Settle  Duration `json:"settle"`
	Timeout Duration `json:"timeout"`
	// Retries is how many times a failing page is retried (0: tried once).
	Retries       int      `json:"retries"`
	RetryInterval Duration `json:"retry_interval"`
	// RetryBackoff multiplies the interval after each retry.
	RetryBackoff     float64  `json:"retry_backoff"`
	MaxRetryInterval Duration `json:"max_retry_interval"`
	// Concurrency is how many slices may be in flight at once.
	Concurrency int       `json:"concurrency"`
	RateLimit   RateLimit `json:"rate_limit"`
	// RateLimitWait is how long one page may keep waiting on the
	// platform's rate-limit answers; 0: DefaultRateLimitWait.
	RateLimitWait Duration `json:"rate_limit_wait,omitempty"`
	PageSize      int      `json:"page_size"`
	// MaxPages is how many pages one slice may take before it splits in two.
	MaxPages int `json:"max_pages"`
	// BackfillMaxSpan lets backfill slices grow beyond interval while the
	// history is sparse; 0 keeps every slice one interval long.
	BackfillMaxSpan Duration `json:"backfill_max_span,omitempty"`
	// ResweepDelay fetches every closed window once more this long after
	// it was first fetched; 0 disables the re-sweep.
	ResweepDelay Duration `json:"resweep_delay,omitempty"`
	// BreakerFailures pauses the cursor after this many consecutive failed
	// slices; 0 disables the breaker.
	BreakerFailures int `json:"breaker_failures"`
	// LagAlert raises an alert when the watermark falls further behind now
	// than this; 0 disables it.
	LagAlert Duration `json:"lag_alert,omitempty"`
	// StallAlert raises an alert when slices are in flight and none of
	// them has finished for this long; 0 means DefaultStallAlert.
	StallAlert Duration `json:"stall_alert,omitempty"`
	// DeadLetterRetry retries dead-lettered slices whose cause is transient.
	DeadLetterRetry DeadLetterRetry `json:"dead_letter_retry,omitzero"`
	// Reconcile, ReconcileWindow and ReconcileRecheck tune count
	// reconciliation (workflows, reconcile.go): off with reconcile: false;
	// a window of reconcile_window (0: a day), checked once it settled
	// and again reconcile_recheck after its end (unset: 3 days, 0: never).
	Reconcile        *bool     `json:"reconcile,omitempty"`
	ReconcileWindow  Duration  `json:"reconcile_window,omitempty"`
	ReconcileRecheck *Duration `json:"reconcile_recheck,omitempty"`
	// WebhookInterval is how often the cursor polls while the account's
	// webhooks are live (hybrid pacing, LiveFor); 0: always Interval. A
	// whole multiple of Interval, so slices stay on the grid.
	WebhookInterval Duration `json:"webhook_interval,omitempty"`
	// LiveWindows is how a caught-up cursor fetches its settled live
	// windows: LiveWindowsInline ("" too) or LiveWindowsWorkflows.
	LiveWindows string `json:"live_windows,omitempty"`
	// Windows restrict when the platform may be pulled.
	Windows   []string `json:"windows,omitempty"`
	TaskQueue string   `json:"task_queue"`
	// Bulk is the Shopify bulk backfill tuning, derived at the edge from
	// the kind's options (config.Platform.Settings). Settings of kind
	// shopify written since v0.8 always carry it; settings recorded before
	// carry none, and their slices read the bulk options from
	// LegacyOptions as they did (no options: Shopify's defaults). Other
	// kinds have no bulk path and carry none.
	Bulk *Bulk `json:"bulk,omitempty"`
	// LegacyOptions are the kind options of settings recorded before v0.8
	// (a whole config.Platform). Only a slice of such a run reads them, for
	// the bulk decision its history recorded (workflows,
	// slice_bulk_settings.go). New code never sets them. Can go after
	// release v0.8, once no run started before it remains.
	LegacyOptions map[string]any `json:"options,omitempty"`
}

// Bulk is how a Shopify slice runs as one bulk query instead of paging.
type Bulk struct {
	// Enabled: a slice at least MinSpan wide runs as a bulk query.
	Enabled bool `json:"enabled"`
	// MinSpan is the narrowest slice that runs as a bulk query.
	MinSpan Duration `json:"min_span,omitempty"`
	// PollInterval is the durable timer between looks at a running query.
	PollInterval Duration `json:"poll_interval,omitempty"`
}

// RateLimit is a token bucket: sustained requests per second and burst.
type RateLimit struct {
	RPS   float64 `json:"rps" yaml:"rps"`
	Burst int     `json:"burst" yaml:"burst"`
}

// DefaultStallAlert is a platform's stall_alert when none is set: longer
// than a slice of the slowest plans takes (an Amazon seller at 0.0056
// requests/s pages about 60 pages in 3 hours), short enough that a stuck
// platform is noticed the same working day.
const DefaultStallAlert = 3 * time.Hour

// StallAlertOrDefault is s's stall_alert, or DefaultStallAlert.
func (s Settings) StallAlertOrDefault() time.Duration {
	if d := s.StallAlert.D(); d > 0 {
		return d
	}
	return DefaultStallAlert
}

// DefaultRateLimitWait is a page's rate_limit_wait when none is set: long
// enough for a seller's whole burst to refill at Amazon's slowest plan
// (20 requests at 0.0056/s is an hour), short enough that a platform that
// keeps refusing is seen in the dead-letter workflow the same morning.
// FetchSlice decides by it, so a change is a workflow change: version it.
const DefaultRateLimitWait = 4 * time.Hour

// RateLimitWaitOrDefault is s's rate_limit_wait, or DefaultRateLimitWait.
func (s Settings) RateLimitWaitOrDefault() time.Duration {
	if d := s.RateLimitWait.D(); d > 0 {
		return d
	}
	return DefaultRateLimitWait
}

// Values of live_windows. Inline (the default): a caught-up cursor fetches
// a settled live window itself, by a FetchWindow activity, and starts a child
// Slice workflow only when that fetch fails or cannot finish alone; about
// half the Temporal actions per window (docs/performance.md, B12).
// Workflows: every window is a child Slice workflow, listed on its own in
// the Web UI, as before v0.11.
const (
	LiveWindowsInline    = "inline"
	LiveWindowsWorkflows = "workflows"
)

// InlineLiveWindows says whether a caught-up cursor fetches its live
// windows itself.
func (s Settings) InlineLiveWindows() bool {
	return s.LiveWindows != LiveWindowsWorkflows
}

// WebhookLiveFactor: an account's webhooks are live while an event was
// accepted within this many webhook_intervals (LiveFor).
const WebhookLiveFactor = 2

// LiveFor is how recent the last accepted webhook event must be for the
// fast path to count as live: WebhookLiveFactor x webhook_interval, so a
// dead fast path is noticed within one webhook_interval of the pacing
// check after it; 0 when webhook_interval is off.
func (s Settings) LiveFor() time.Duration {
	return WebhookLiveFactor * s.WebhookInterval.D()
}

// WebhookSpan is how many intervals one poll covers while the webhooks are
// live: webhook_interval / interval, 1 (off) when unset or not longer.
func (s Settings) WebhookSpan() int {
	iv, wi := s.Interval.D(), s.WebhookInterval.D()
	if iv <= 0 || wi <= iv {
		return 1
	}
	return int(wi / iv)
}

const day = 24 * time.Hour
