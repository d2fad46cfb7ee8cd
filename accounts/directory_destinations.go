package accounts

import (
	"context"

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
func (d *Directory) DestinationQueues() []string { return d.queuesOf(&d.destQueues) }

// OnDestinationQueues calls f (from Run's goroutine) with the full list of
// the destinations' task queues whenever it changes.
func (d *Directory) OnDestinationQueues(f func([]string)) { d.onQueues(&d.destQueues, f) }
