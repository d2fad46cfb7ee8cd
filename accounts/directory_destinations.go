package accounts

import (
	"context"
	"slices"

	"github.com/ordersync/ordersync/config"
)

// The destinations' side of a Directory: a worker resolves the destination
// a Delivery names from the registry (read through, cached, dropped from
// the cache when the registry changes it), and learns the task queues the
// registered destinations use, so a destination added at runtime is
// delivered to, on a new queue too, without a restart.

// LookupDestination resolves a destination by name: its settings and
// state. found is false for a name the registry does not hold; a removed
// destination is found, in state Removed.
func (d *Directory) LookupDestination(ctx context.Context, name string) (config.Destination, State, bool, error) {
	return lookup(ctx, d, &d.dests, name)
}

// DestinationQueues lists the task queues of the registered destinations
// that are not removed.
func (d *Directory) DestinationQueues() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.destQueues)
}

// OnDestinationQueues calls f (from Run's goroutine) with the full list of
// the destinations' task queues whenever it changes.
func (d *Directory) OnDestinationQueues(f func([]string)) {
	d.mu.Lock()
	d.destWatch = append(d.destWatch, f)
	d.mu.Unlock()
}

func (d *Directory) destQueuesStale() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.destStale
}

// pollDestinationQueues reads the destinations' task queues again and
// tells the watchers when they changed. A failed read is tried again at
// the next poll even when no destination changes meanwhile.
func (d *Directory) pollDestinationQueues(ctx context.Context) error {
	queues, err := d.reg.TaskQueues(ctx, ClassDestination)
	d.mu.Lock()
	d.destStale = err != nil
	if err != nil {
		d.mu.Unlock()
		return err
	}
	same := slices.Equal(queues, d.destQueues)
	d.destQueues = queues
	watch := slices.Clone(d.destWatch)
	d.mu.Unlock()
	if !same {
		for _, f := range watch {
			f(slices.Clone(queues))
		}
	}
	return nil
}
