package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Problem is one invalid setting: which platform, which field, and why.
type Problem struct {
	Platform string // "" for file-level problems, "default" for the default block
	// Destination names the destination a problem is about ("" otherwise).
	Destination string
	Field       string
	Reason      string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Platform != "" {
		fmt.Fprintf(&b, "platform %q: ", p.Platform)
	}
	if p.Destination != "" {
		fmt.Fprintf(&b, "destination %q: ", p.Destination)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	b.WriteString(p.Reason)
	return b.String()
}

// ValidationError lists every problem found in a platforms file.
type ValidationError struct {
	Source   string // file path, when known
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
		if e.Source != "" {
			lines[i] = e.Source + ": " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func (e *ValidationError) add(platform, field, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Platform: platform, Field: field, Reason: fmt.Sprintf(format, args...)})
}

// fields is the set of fields that have a problem already.
func (e *ValidationError) fields() map[string]bool {
	set := make(map[string]bool, len(e.Problems))
	for _, p := range e.Problems {
		set[p.Field] = true
	}
	return set
}

func (e *ValidationError) merge(other *ValidationError) {
	if other != nil {
		e.Problems = append(e.Problems, other.Problems...)
	}
}

var (
	platformName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate checks one merged platform and returns nil or every problem
// found: first the lengths of its strings (limits.go), then the form of
// each setting (checkStructure), then the ranges of the numbers
// (checkRanges), then what only its kind knows (kinds.go). A field with a
// problem is not checked again by a later step, so one mistake is one line.
func (p Platform) Validate() *ValidationError {
	ve := &ValidationError{}
	p.checkLengths(ve)
	p.checkStructure(ve, ve.fields())
	p.checkRanges(ve, ve.fields())
	p.checkDeadLetterRetry(ve, ve.fields())
	if len(ve.Problems) == 0 {
		// Kind checks (kinds.go) build on valid generic settings; run after
		// them so one mistake does not pile up follow-on problems. The
		// plain-text rule is not part of ValidateStructure (replayed).
		if kve := p.validateKind(); kve != nil {
			return kve
		}
		return p.checkPlaintext()
	}
	return ve
}

// checkStructure checks the form of every setting: required fields, URLs,
// names, signs and how settings relate to each other. It reports nothing
// for the fields in skip (already reported).
func (p Platform) checkStructure(ve *ValidationError, skip map[string]bool) {
	bad := func(field, format string, args ...any) {
		if !skip[field] {
			ve.add(p.Name, field, format, args...)
		}
	}

	if !platformName.MatchString(p.Name) {
		bad("", "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
	}
	if p.Kind == "" {
		bad("kind", "is required (one of %s)", strings.Join(Kinds, ", "))
	} else if !slices.Contains(Kinds, p.Kind) {
		bad("kind", "unknown kind %q (one of %s)", p.Kind, strings.Join(Kinds, ", "))
	}
	if p.Endpoint == "" {
		bad("endpoint", "is required")
	} else if u, err := url.Parse(p.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("endpoint", "%q is not an http(s) URL", p.Endpoint)
	}
	switch {
	case p.Credentials.Env != "" && p.Credentials.File != "":
		bad("credentials", "set env or file, not both")
	case p.Credentials.Env == "" && p.Credentials.File == "":
		bad("credentials", "is required: {env: VAR_NAME} or {file: /path/to/secret}; secrets never go in this file")
	case p.Credentials.Env != "" && !envName.MatchString(p.Credentials.Env):
		bad("credentials.env", "%q is not an environment variable name (put the secret in the environment, not here)", p.Credentials.Env)
	}
	// Only the form is checked, without the clock, so workflows can validate
	// settings deterministically.
	if _, err := parseStart(p.Start, time.Time{}); err != nil {
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
	if !skip["windows"] {
		for _, w := range p.Windows {
			if _, err := ParseWindow(w); err != nil {
				bad("windows", "%v", err)
			}
		}
	}
	if strings.TrimSpace(p.TaskQueue) == "" {
		bad("task_queue", "must not be empty")
	}
}
