package tuning

import (
	"slices"
	"strings"
	"time"
)

// DeadLetterRetry is the automatic retry of a platform's dead-lettered
// slices whose cause is transient (which causes are: workflows,
// deadletter_retry.go). Its zero value is the default: on, with
// DefaultDeadLetterRetrySchedule. A platform that never set it (and every
// settings payload written before it existed) travels without it in
// workflow inputs (omitzero), so recorded histories replay unchanged.
//
//	dead_letter_retry:
//	  enabled: true                  # false: every dead letter waits for an operator
//	  schedule: [5m, 30m, 2h, 6h]    # wait before each try; the last repeats
type DeadLetterRetry struct {
	// Enabled turns the automatic retry off when false; unset means on.
	Enabled *bool `json:"enabled,omitempty" yaml:"enabled"`
	// Schedule is the wait before each automatic try, counted from the
	// failure before it: the first wait before the first try, and so on;
	// the last wait repeats for every later try. Empty: the default.
	Schedule []Duration `json:"schedule,omitempty" yaml:"schedule"`
}

// DefaultDeadLetterRetrySchedule is the schedule of a platform that sets
// none: 5 minutes, 30 minutes, 2 hours, then every 6 hours.
var DefaultDeadLetterRetrySchedule = []time.Duration{5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

// Bounds of the schedule. A wait under a minute would hammer a platform
// that is down (retrying a page within a failure is what retries and
// retry_interval are for) and grow the dead-letter workflow's history; a
// week is far beyond any outage worth waiting out automatically.
const (
	MinDeadLetterRetryWait  = time.Minute
	MaxDeadLetterRetryWait  = 7 * day
	MaxDeadLetterRetryWaits = 20
)

// On says whether dead letters with a transient cause are retried
// automatically.
func (r DeadLetterRetry) On() bool { return r.Enabled == nil || *r.Enabled }

// Waits is the schedule in effect: Schedule, or the default when it is
// empty. Workflow code decides with it, so its rule is frozen like
// ValidateStructure: a wait outside the bounds (settings that skipped
// validation) is held to them here, never refused.
func (r DeadLetterRetry) Waits() []time.Duration {
	if len(r.Schedule) == 0 {
		return slices.Clone(DefaultDeadLetterRetrySchedule)
	}
	out := make([]time.Duration, len(r.Schedule))
	for i, w := range r.Schedule {
		out[i] = min(max(w.D(), MinDeadLetterRetryWait), MaxDeadLetterRetryWait)
	}
	return out
}

// Wait is how long automatic try number try (1 for the first) waits after
// the failure before it; the last wait repeats.
func (r DeadLetterRetry) Wait(try int) time.Duration {
	waits := r.Waits()
	return waits[min(max(try, 1), len(waits))-1]
}

// String describes the schedule: "off", or "5m0s, 30m0s, 2h0m0s, then
// every 6h0m0s".
func (r DeadLetterRetry) String() string {
	if !r.On() {
		return "off"
	}
	waits := r.Waits()
	parts := make([]string, 0, len(waits))
	for _, w := range waits[:len(waits)-1] {
		parts = append(parts, w.String())
	}
	return strings.Join(append(parts, "then every "+waits[len(waits)-1].String()), ", ")
}
