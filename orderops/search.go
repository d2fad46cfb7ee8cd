package orderops

import (
	"context"
	"errors"
	"fmt"

	"github.com/ordersync/ordersync/store"
)

// Search returns one page of stored orders, newest updated_at first (see
// store.SearchQuery). A bad query or page token wraps ErrBadRequest.
func (s *Service) Search(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	p, err := s.Store.SearchOrders(ctx, q)
	if errors.Is(err, store.ErrBadQuery) {
		return p, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if p.Orders == nil {
		p.Orders = []store.OrderSummary{}
	}
	return p, err
}
