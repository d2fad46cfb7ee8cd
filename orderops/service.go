package orderops

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// Service answers the order operations.
type Service struct {
	// Store holds the orders and the change feed.
	Store store.Store
	// Registry holds the platforms (a refetch's task queue and settings)
	// and the destinations (orders get's delivery states).
	Registry accounts.Registry
	// Temporal starts refetches and asks Delivery workflows for their
	// set-aside changes; nil: refetch is refused, and orders get reports
	// delivery from the acknowledged seqs alone.
	Temporal client.Client
}

// ErrUnknownPlatform is wrapped when a request names a platform the
// registry does not hold (or holds as removed).
var ErrUnknownPlatform = errors.New("unknown platform")

// ErrBadRequest is wrapped by errors in what the caller asked (an order
// id, a priority, too many ids): nothing was done.
var ErrBadRequest = errors.New("bad request")

// platform reads a platform's settings from the registry, with the
// revision they were read at.
func (s *Service) platform(ctx context.Context, name string) (config.Platform, int64, error) {
	if s.Registry == nil {
		return config.Platform{}, 0, errors.New("orders: no account registry")
	}
	e, ok, err := s.Registry.Get(ctx, accounts.ClassPlatform, name)
	if err != nil {
		return config.Platform{}, 0, fmt.Errorf("read platform %s: %w", name, err)
	}
	if !ok || e.State == accounts.Removed {
		return config.Platform{}, 0, fmt.Errorf("platform %q: %w (ordersync platform list shows the registered ones)", name, ErrUnknownPlatform)
	}
	p, err := accounts.DecodePlatform(e)
	if err != nil {
		return config.Platform{}, 0, fmt.Errorf("platform %s: %w", name, err)
	}
	return p, e.Revision, nil
}
