package sim

import "math"

// rng is a splitmix64 generator. The simulator uses its own tiny generator
// rather than math/rand so that a seed produces the same world in every Go
// version, and so a per-order generator lives on the stack: order details are
// re-derived from the order's seed on demand instead of being stored.
type rng struct{ state uint64 }

func newRNG(seed uint64, stream uint64) rng {
	r := rng{state: seed ^ (stream * 0x9e3779b97f4a7c15)}
	r.next() // decorrelate nearby seeds
	return r
}

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); n <= 0 gives 0.
func (r *rng) intn(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(r.next() % uint64(n))
}

// float returns a value in [0, 1).
func (r *rng) float() float64 {
	return float64(r.next()>>11) / (1 << 53)
}

// exp returns an exponentially distributed value with mean 1/rate.
func (r *rng) exp(rate float64) float64 {
	return -math.Log(1-r.float()) / rate
}

// hashString is FNV-1a, used to give each shop its own random streams.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
