package tuning

import (
	"fmt"
	"strings"
	"time"
)

// Bad reports one problem of a field ("rate_limit.rps"); the caller adds
// the platform's name and skips fields already reported.
type Bad func(field, format string, args ...any)

// Lengths of the tuning's strings, in bytes: with config's limits on the
// identity strings they keep one platform's settings far below Temporal's
// 2 MB payload limit.
const (
	maxTaskQueueLen = 200 // Temporal allows 1000; ordersync's own IDs add to it
	maxStartLen     = 64
	maxWindows      = 32
	maxWindowLen    = 100
	// maxLiveWindowsLen: the longest valid value is 9 bytes.
	maxLiveWindowsLen = 16
)

// CheckStructure checks the form of the tuning: signs, and how settings
// relate to each other. It is frozen (workflow code replays it, see
// config.Platform.ValidateStructure): new rules go in CheckRanges or
// CheckLengths, which run at the edges.
func (p Settings) CheckStructure(bad Bad) {
	// Only the form is checked, without the clock, so workflows can validate
	// settings deterministically.
	if _, err := ParseStart(p.Start, time.Time{}); err != nil {
		bad("start", "%v", err)
	}
	if p.Interval <= 0 {
		bad("interval", "must be positive, got %s", p.Interval)
	}
	if p.Overlap < 0 {
		bad("overlap", "must not be negative, got %s", p.Overlap)
	} else if p.Interval > 0 && p.Overlap >= p.Interval {
		bad("overlap", "must be shorter than interval (%s), got %s", p.Interval, p.Overlap)
	}
	if p.Settle < 0 {
		bad("settle", "must not be negative, got %s", p.Settle)
	}
	if p.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", p.Timeout)
	}
	if p.Retries < 0 {
		bad("retries", "must not be negative, got %d", p.Retries)
	}
	if p.RetryInterval <= 0 {
		bad("retry_interval", "must be positive, got %s", p.RetryInterval)
	}
	if p.RetryBackoff < 1 {
		bad("retry_backoff", "must be at least 1, got %g", p.RetryBackoff)
	}
	if p.MaxRetryInterval < p.RetryInterval {
		bad("max_retry_interval", "must not be shorter than retry_interval (%s), got %s", p.RetryInterval, p.MaxRetryInterval)
	}
	if p.Concurrency < 1 {
		bad("concurrency", "must be at least 1, got %d", p.Concurrency)
	}
	if p.RateLimit.RPS <= 0 {
		bad("rate_limit.rps", "must be positive, got %g", p.RateLimit.RPS)
	}
	if p.RateLimit.Burst < 1 {
		bad("rate_limit.burst", "must be at least 1, got %d", p.RateLimit.Burst)
	}
	if p.PageSize < 1 {
		bad("page_size", "must be at least 1, got %d", p.PageSize)
	}
	if p.MaxPages < 1 {
		bad("max_pages", "must be at least 1, got %d", p.MaxPages)
	}
	if p.BackfillMaxSpan < 0 {
		bad("backfill_max_span", "must not be negative (0 keeps slices one interval long), got %s", p.BackfillMaxSpan)
	} else if p.BackfillMaxSpan > 0 && p.Interval > 0 && p.BackfillMaxSpan < p.Interval {
		bad("backfill_max_span", "must be 0 (off) or at least interval (%s), got %s", p.Interval, p.BackfillMaxSpan)
	}
	if p.ResweepDelay < 0 {
		bad("resweep_delay", "must not be negative, got %s", p.ResweepDelay)
	}
	if p.BreakerFailures < 0 {
		bad("breaker_failures", "must not be negative (0 disables the breaker), got %d", p.BreakerFailures)
	}
	if p.LagAlert < 0 {
		bad("lag_alert", "must not be negative (0 disables the alert), got %s", p.LagAlert)
	}
	if p.StallAlert < 0 {
		bad("stall_alert", "must not be negative (0 means the default, %s), got %s", DefaultStallAlert, p.StallAlert)
	}
	for _, w := range p.Windows {
		if _, err := ParseWindow(w); err != nil {
			bad("windows", "%v", err)
		}
	}
	if strings.TrimSpace(p.TaskQueue) == "" {
		bad("task_queue", "must not be empty")
	}
}

// CheckLengths reports tuning strings longer than their limit and too
// many windows. It runs first, so a huge value is reported by its size
// and never quoted in another message.
func (p Settings) CheckLengths(bad Bad) {
	long := func(field, value string, limit int) {
		if len(value) > limit {
			bad(field, "is %d bytes long; the limit is %d", len(value), limit)
		}
	}
	long("task_queue", p.TaskQueue, maxTaskQueueLen)
	long("start", p.Start, maxStartLen)
	long("live_windows", p.LiveWindows, maxLiveWindowsLen)
	switch {
	case len(p.Windows) > maxWindows:
		bad("windows", "has %d windows; the limit is %d", len(p.Windows), maxWindows)
	default:
		for i, w := range p.Windows {
			if len(w) > maxWindowLen {
				bad("windows", "window %d is %d bytes long; the limit is %d", i+1, len(w), maxWindowLen)
				break
			}
		}
	}
}

// durationRanges bound the duration settings. The lower bounds keep a typo
// from spinning the workers (a 10 ms interval kept the server at 100% CPU);
// the upper bounds are far beyond what a platform needs and keep timers and
// retry policies within what Temporal handles. Zero, where allowed, means
// off. The range table in docs/configuration.md mirrors this list.
var durationRanges = []struct {
	field    string
	value    func(Settings) Duration
	min, max time.Duration
}{
	{"interval", func(p Settings) Duration { return p.Interval }, time.Second, 7 * day},
	{"settle", func(p Settings) Duration { return p.Settle }, 0, day},
	// A short timeout only makes attempts fail (retries are spaced by
	// retry_interval), so its floor is low enough for tests of hangs.
	{"timeout", func(p Settings) Duration { return p.Timeout }, 100 * time.Millisecond, 10 * time.Minute},
	{"retry_interval", func(p Settings) Duration { return p.RetryInterval }, 100 * time.Millisecond, time.Hour},
	{"max_retry_interval", func(p Settings) Duration { return p.MaxRetryInterval }, 0, day},
	{"rate_limit_wait", func(p Settings) Duration { return p.RateLimitWait }, 0, 7 * day},
	{"backfill_max_span", func(p Settings) Duration { return p.BackfillMaxSpan }, 0, 90 * day},
	{"resweep_delay", func(p Settings) Duration { return p.ResweepDelay }, 0, 7 * day},
	{"lag_alert", func(p Settings) Duration { return p.LagAlert }, 0, 30 * day},
	{"stall_alert", func(p Settings) Duration { return p.StallAlert }, 0, 30 * day},
	{"reconcile_window", func(p Settings) Duration { return p.ReconcileWindow }, 0, MaxReconcileWindow},
	{"reconcile_recheck", reconcileRecheckValue, 0, MaxReconcileRecheck},
	{"webhook_interval", func(p Settings) Duration { return p.WebhookInterval }, 0, day},
}

// numberRanges bound the numeric settings, as durationRanges do.
var numberRanges = []struct {
	field    string
	value    func(Settings) float64
	min, max float64
}{
	{"retries", func(p Settings) float64 { return float64(p.Retries) }, 0, 100},
	{"retry_backoff", func(p Settings) float64 { return p.RetryBackoff }, 1, 10},
	{"concurrency", func(p Settings) float64 { return float64(p.Concurrency) }, 1, 64},
	{"rate_limit.rps", func(p Settings) float64 { return p.RateLimit.RPS }, 0, 1000}, // > 0 is checked with the form
	{"rate_limit.burst", func(p Settings) float64 { return float64(p.RateLimit.Burst) }, 1, 1000},
	{"page_size", func(p Settings) float64 { return float64(p.PageSize) }, 1, 1000},
	{"max_pages", func(p Settings) float64 { return float64(p.MaxPages) }, 1, 10000},
	{"breaker_failures", func(p Settings) float64 { return float64(p.BreakerFailures) }, 0, 1000},
}

// CheckRanges reports settings outside their range.
func (p Settings) CheckRanges(bad Bad) {
	if w := p.ReconcileWindow.D(); w > 0 && w < MinReconcileWindow {
		bad("reconcile_window", "must be 0 (a day) or at least %s, got %s", ShortDuration(MinReconcileWindow), w)
	}
	for _, r := range durationRanges {
		v := r.value(p).D()
		switch {
		case v < r.min:
			bad(r.field, "must be at least %s, got %s", ShortDuration(r.min), v)
		case v > r.max:
			bad(r.field, "must be at most %s, got %s", ShortDuration(r.max), v)
		}
	}
	for _, r := range numberRanges {
		v := r.value(p)
		switch {
		case v < r.min:
			bad(r.field, "must be at least %g, got %g", r.min, v)
		case v > r.max || v != v: // v != v: NaN
			bad(r.field, "must be at most %g, got %g", r.max, v)
		}
	}
	p.checkWebhookInterval(bad)
	switch p.LiveWindows {
	case "", LiveWindowsInline, LiveWindowsWorkflows:
	default:
		bad("live_windows", "must be %q (the default) or %q, got %q", LiveWindowsInline, LiveWindowsWorkflows, p.LiveWindows)
	}
}

// checkWebhookInterval: a webhook_interval must be a whole multiple of
// interval, so a poll while the webhooks are live covers whole grid
// intervals and the slice grid never moves when the pacing changes.
func (p Settings) checkWebhookInterval(bad Bad) {
	wi, iv := p.WebhookInterval.D(), p.Interval.D()
	switch {
	case wi <= 0 || wi > day || iv <= 0: // off, or reported by its range
	case wi < iv:
		bad("webhook_interval", "must be 0 (off) or at least interval (%s), got %s", iv, wi)
	case wi%iv != 0:
		bad("webhook_interval", "must be a whole multiple of interval (%s) so slices stay on the grid, got %s", iv, wi)
	}
}

// CheckDeadLetterRetry reports a schedule that is too long or has a wait
// outside the bounds, naming the wait by its position.
func (p Settings) CheckDeadLetterRetry(bad Bad) {
	const field = "dead_letter_retry.schedule"
	s := p.DeadLetterRetry.Schedule
	switch {
	case len(s) > MaxDeadLetterRetryWaits:
		bad(field, "has %d waits; the limit is %d (the last wait repeats, so a long list is never needed)", len(s), MaxDeadLetterRetryWaits)
	default:
		for i, w := range s {
			switch {
			case w.D() < MinDeadLetterRetryWait:
				bad(field, "wait %d is %s; it must be at least %s", i+1, w, ShortDuration(MinDeadLetterRetryWait))
				return
			case w.D() > MaxDeadLetterRetryWait:
				bad(field, "wait %d is %s; it must be at most %s", i+1, w, ShortDuration(MaxDeadLetterRetryWait))
				return
			}
		}
	}
}

// ShortDuration writes a bound as it would be written in the file: "168h",
// "10m", "100ms" rather than "168h0m0s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseStart reads a backfill start: RFC3339, or a negative duration
// relative to now.
func ParseStart(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("is required (RFC3339 like 2026-01-01T00:00:00Z, or relative like -2160h)")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d > 0 {
			return time.Time{}, fmt.Errorf("relative start %q is in the future; use a negative duration like -2160h", s)
		}
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC3339 (2026-01-01T00:00:00Z) nor a relative duration (-2160h)", s)
}
