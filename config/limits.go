package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Limits of a platforms file. A file is read whole and every platform
// travels in workflow inputs, so without bounds a runaway file (20 MB,
// 235,000 platforms) took 11 s and 1 GB to load, and one long string passed
// validation only to fail `platform start` at Temporal's payload limit.
const (
	// MaxFileSize is the largest platforms file read.
	MaxFileSize = 4 << 20
	// MaxPlatforms is the most platforms one file may declare.
	MaxPlatforms = 10000
)

// Lengths of a platform's strings, in bytes. Together they keep one
// platform's settings far below Temporal's 2 MB payload limit.
const (
	maxEndpointLen  = 2048
	maxEnvNameLen   = 256
	maxFilePathLen  = 4096
	maxTaskQueueLen = 200 // Temporal allows 1000; ordersync's own IDs add to it
	maxStartLen     = 64
	maxWindows      = 32
	maxWindowLen    = 100
	maxOptionsJSON  = 64 << 10
)

const day = 24 * time.Hour

// durationRanges bound the duration settings. The lower bounds keep a typo
// from spinning the workers (a 10 ms interval kept the server at 100% CPU);
// the upper bounds are far beyond what a platform needs and keep timers and
// retry policies within what Temporal handles. Zero, where allowed, means
// off. The README's range table mirrors this list.
var durationRanges = []struct {
	field    string
	value    func(Platform) Duration
	min, max time.Duration
}{
	{"interval", func(p Platform) Duration { return p.Interval }, time.Second, 7 * day},
	{"settle", func(p Platform) Duration { return p.Settle }, 0, day},
	// A short timeout only makes attempts fail (retries are spaced by
	// retry_interval), so its floor is low enough for tests of hangs.
	{"timeout", func(p Platform) Duration { return p.Timeout }, 100 * time.Millisecond, 10 * time.Minute},
	{"retry_interval", func(p Platform) Duration { return p.RetryInterval }, 100 * time.Millisecond, time.Hour},
	{"max_retry_interval", func(p Platform) Duration { return p.MaxRetryInterval }, 0, day},
	{"rate_limit_wait", func(p Platform) Duration { return p.RateLimitWait }, 0, 7 * day},
	{"backfill_max_span", func(p Platform) Duration { return p.BackfillMaxSpan }, 0, 90 * day},
	{"resweep_delay", func(p Platform) Duration { return p.ResweepDelay }, 0, 7 * day},
	{"lag_alert", func(p Platform) Duration { return p.LagAlert }, 0, 30 * day},
	{"stall_alert", func(p Platform) Duration { return p.StallAlert }, 0, 30 * day},
}

// numberRanges bound the numeric settings, as durationRanges do.
var numberRanges = []struct {
	field    string
	value    func(Platform) float64
	min, max float64
}{
	{"retries", func(p Platform) float64 { return float64(p.Retries) }, 0, 100},
	{"retry_backoff", func(p Platform) float64 { return p.RetryBackoff }, 1, 10},
	{"concurrency", func(p Platform) float64 { return float64(p.Concurrency) }, 1, 64},
	{"rate_limit.rps", func(p Platform) float64 { return p.RateLimit.RPS }, 0, 1000}, // > 0 is checked with the form
	{"rate_limit.burst", func(p Platform) float64 { return float64(p.RateLimit.Burst) }, 1, 1000},
	{"page_size", func(p Platform) float64 { return float64(p.PageSize) }, 1, 1000},
	{"max_pages", func(p Platform) float64 { return float64(p.MaxPages) }, 1, 10000},
	{"breaker_failures", func(p Platform) float64 { return float64(p.BreakerFailures) }, 0, 1000},
}

// checkRanges reports settings outside their range, except for the fields
// in skip (already reported).
func (p Platform) checkRanges(ve *ValidationError, skip map[string]bool) {
	for _, r := range durationRanges {
		v := r.value(p).D()
		switch {
		case skip[r.field]:
		case v < r.min:
			ve.add(p.Name, r.field, "must be at least %s, got %s", shortDuration(r.min), v)
		case v > r.max:
			ve.add(p.Name, r.field, "must be at most %s, got %s", shortDuration(r.max), v)
		}
	}
	for _, r := range numberRanges {
		v := r.value(p)
		switch {
		case skip[r.field]:
		case v < r.min:
			ve.add(p.Name, r.field, "must be at least %g, got %g", r.min, v)
		case v > r.max || v != v: // v != v: NaN
			ve.add(p.Name, r.field, "must be at most %g, got %g", r.max, v)
		}
	}
}

// checkLengths reports strings longer than their limit and a platform with
// too many windows or too large options. It runs first, so a huge value is
// reported by its size and never quoted in another message.
func (p Platform) checkLengths(ve *ValidationError) {
	long := func(field, value string, limit int) {
		if len(value) > limit {
			ve.add(p.Name, field, "is %d bytes long; the limit is %d", len(value), limit)
		}
	}
	long("endpoint", p.Endpoint, maxEndpointLen)
	long("credentials.env", p.Credentials.Env, maxEnvNameLen)
	long("credentials.file", p.Credentials.File, maxFilePathLen)
	long("task_queue", p.TaskQueue, maxTaskQueueLen)
	long("start", p.Start, maxStartLen)
	switch {
	case len(p.Windows) > maxWindows:
		ve.add(p.Name, "windows", "has %d windows; the limit is %d", len(p.Windows), maxWindows)
	default:
		for i, w := range p.Windows {
			if len(w) > maxWindowLen {
				ve.add(p.Name, "windows", "window %d is %d bytes long; the limit is %d", i+1, len(w), maxWindowLen)
				break
			}
		}
	}
	if len(p.Options) > 0 {
		b, err := json.Marshal(p.Options)
		switch {
		case err != nil:
			ve.add(p.Name, "options", "cannot be encoded as JSON: %v", err)
		case len(b) > maxOptionsJSON:
			ve.add(p.Name, "options", "are %d bytes as JSON; the limit is %d", len(b), maxOptionsJSON)
		}
	}
}

// shortDuration writes a bound as it would be written in the file: "168h",
// "10m", "100ms" rather than "168h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkFileSize describes a file larger than MaxFileSize ("" when it fits).
func checkFileSize(size int64) string {
	if size > MaxFileSize {
		return fmt.Sprintf("the file is %d bytes; the limit is %d bytes (%d MiB)", size, MaxFileSize, MaxFileSize>>20)
	}
	return ""
}
