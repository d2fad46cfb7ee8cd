// Package alerttest records the alerts the code under test sends
// (activities.Alerter, metrics.CredentialAlerter), for tests.
package alerttest

import (
	"context"
	"errors"
	"sync"

	"github.com/ordersync/ordersync/api"
)

// Recorder keeps every alert delivered to it; while down it refuses them,
// as a receiver that is down would. The zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	down   bool
	alerts []api.Alert
}

// Alert records a, or fails while the recorder is down.
func (r *Recorder) Alert(_ context.Context, a api.Alert) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return errors.New("alert receiver down")
	}
	r.alerts = append(r.alerts, a)
	return nil
}

// SetDown makes deliveries fail (true) or succeed again.
func (r *Recorder) SetDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// Alerts returns the alerts recorded so far.
func (r *Recorder) Alerts() []api.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Alert(nil), r.alerts...)
}

// Keys returns the recorded alerts' keys.
func (r *Recorder) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.alerts {
		out = append(out, a.Key)
	}
	return out
}

// Reset forgets the alerts recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alerts = nil
}
