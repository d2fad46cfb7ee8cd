package sim

import (
	"math"
	"time"
)

// bucket is a per-shop token bucket on the simulator's clock. It holds
// Burst tokens, refills RPS per second, and each accepted request takes one.
type bucket struct {
	rl     RateLimit
	tokens float64
	last   int64 // µs of the last refill
	primed bool  // a fresh bucket starts full at its first request
}

func (b *bucket) burst() float64 {
	if b.rl.Burst > 0 {
		return float64(b.rl.Burst)
	}
	return max(1, math.Ceil(b.rl.RPS))
}

// allow takes a token at now (µs) or says how long until one is available.
func (b *bucket) allow(now int64) (ok bool, wait time.Duration) {
	if b.rl.RPS <= 0 {
		return true, 0
	}
	burst := b.burst()
	if !b.primed {
		b.tokens, b.last, b.primed = burst, now, true
	}
	if now > b.last {
		b.tokens = min(burst, b.tokens+float64(now-b.last)/1e6*b.rl.RPS)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rl.RPS * float64(time.Second))
}

// set changes the limit; tokens already earned are kept up to the new burst.
func (b *bucket) set(rl RateLimit) {
	b.rl = rl
	if b.primed {
		b.tokens = min(b.tokens, b.burst())
	}
}

// retryAfterSeconds is the Retry-After value: whole seconds, rounded up,
// at least 1, so a client that honours it never comes back too early.
func retryAfterSeconds(wait time.Duration) int64 {
	return max(1, int64(math.Ceil(wait.Seconds())))
}

// peakRate measures the highest request rate a shop has seen, defined as
// the largest number of requests whose arrival times (on the simulator's
// clock, µs) fall within one half-open second (t-1s, t], over all t. It keeps
// the arrival times of the last second, so memory is proportional to the
// peak rate itself.
type peakRate struct {
	times []int64 // arrival times, nondecreasing; times[head:] are within the last second
	head  int
	peak  int
}

func (p *peakRate) add(now int64) {
	p.times = append(p.times, now)
	for p.times[p.head] <= now-int64(time.Second/time.Microsecond) {
		p.head++
	}
	if n := len(p.times) - p.head; n > p.peak {
		p.peak = n
	}
	if p.head > 1024 && p.head > len(p.times)/2 { // reclaim the consumed prefix
		p.times = append(p.times[:0], p.times[p.head:]...)
		p.head = 0
	}
}
