package sim

import (
	"fmt"
	"time"
)

// Hidden from the list: the fault count reconciliation exists for. Shopify
// users report orders whose updated_at falls in a window that the orders
// search leaves out for a while (an index that lags the order), although
// the order exists, its own get finds it and ordersCount counts it. A
// poller that passed the window in that while never lists the order
// again; only a count of the window shows it is missing.
//
// HideFromList hides the next n orders the shop creates from the list
// endpoint and the Shopify orders query, each for d after its creation
// (on the simulator's clock); get-one-order calls, ordersCount and the
// ground truth see them throughout.

// listHide hides orders with sequence numbers in [from, to) while the
// world's now is before their creation plus hideFor (µs).
type listHide struct {
	from, to uint32
	hideFor  int64
}

// HideFromList hides the shop's next n created orders from list
// responses for d after each one's creation.
func (s *Simulator) HideFromList(shopName string, n int, d time.Duration) error {
	sh, ok := s.byName[shopName]
	if !ok {
		return fmt.Errorf("unknown shop %q", shopName)
	}
	if n < 1 || n > 1_000_000 || d <= 0 {
		return fmt.Errorf("hide from list needs 1..1000000 orders and a positive duration, got %d for %s", n, d)
	}
	now := s.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.world.advance(now)
	first := uint32(len(sh.world.orders) + 1)
	sh.world.hides = append(sh.world.hides, listHide{from: first, to: first + uint32(n), hideFor: d.Microseconds()})
	return nil
}

// hidden says whether order seq is hidden from list responses now.
func (w *world) hidden(seq uint32) bool {
	for _, h := range w.hides {
		if seq >= h.from && seq < h.to && w.now < w.orders[seq-1].created+h.hideFor {
			return true
		}
	}
	return false
}
