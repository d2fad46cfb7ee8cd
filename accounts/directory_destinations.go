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

type cachedDestination struct {
	entry Entry
	dest  config.Destination
}

// LookupDestination resolves a destination by name: its settings and
// state. found is false for a name the registry does not hold; a removed
// destination is found, in state Removed.
func (d *Directory) LookupDestination(ctx context.Context, name string) (config.Destination, State, bool, error) {
	d.mu.Lock()
	c, ok := d.dests[name]
	seenBefore := d.seen
	d.mu.Unlock()
	if ok {
		return c.dest, c.entry.State, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	e, found, err := d.reg.Get(ctx, ClassDestination, name)
	if err != nil || !found {
		return config.Destination{}, "", false, err
	}
	dest, err := DecodeDestination(e)
	if err != nil {
		return config.Destination{}, "", false, err
	}
	d.mu.Lock()
	if len(d.dests) >= maxCached {
		for k := range d.dests { // evict one arbitrary entry: reads are cheap
			delete(d.dests, k)
			break
		}
	}
	// As Lookup: keep the read only if no poll ran meanwhile.
	if d.seen == seenBefore {
		d.dests[name] = cachedDestination{entry: e, dest: dest}
	}
	d.mu.Unlock()
	return dest, e.State, true, nil
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
