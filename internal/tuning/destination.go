package tuning

// Destination is what a destination's Delivery workflow decides by: its
// name and kind, the registry revision they were read at, and its tuning
// (batch size, timeouts and retries, rate, lanes, breaker, windows, task
// queue). It travels in the Delivery's input and its `config` message by
// reference to the destination's registry entry: where batches go and
// with which secret (url, secret, subject, brokers, topic,
// allow_plaintext) and which platforms' changes it takes are never part
// of it; the delivery activities resolve the whole destination from the
// registry by name.
//
// The JSON names and forms are those of config.Destination, so a
// Delivery input recorded before destinations travelled by reference (a
// whole config.Destination) decodes into Destination with its identity
// ignored.
type Destination struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Revision is the registry revision the settings were read at; 0 when
	// unknown (settings from a file, or recorded before).
	Revision int64 `json:"revision,omitempty"`
	// BatchSize is the most changes one delivery carries.
	BatchSize int `json:"batch_size"`
	// Timeout bounds one delivery attempt.
	Timeout Duration `json:"timeout"`
	// Retries is how many times a failed batch is retried before it counts
	// as a failure for the breaker.
	Retries       int      `json:"retries"`
	RetryInterval Duration `json:"retry_interval"`
	// RateLimit bounds deliveries (batches) per second.
	RateLimit RateLimit `json:"rate_limit"`
	// MaxInFlight is how many batches may be delivered at once.
	MaxInFlight int `json:"max_in_flight"`
	// BreakerFailures pauses delivery after this many consecutive failed
	// batches; 0 disables the breaker.
	BreakerFailures int `json:"breaker_failures"`
	// Windows restrict when the destination may receive.
	Windows   []string `json:"windows,omitempty"`
	TaskQueue string   `json:"task_queue"`
}
