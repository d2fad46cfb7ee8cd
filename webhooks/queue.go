package webhooks

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/orderops"
)

// Refetcher starts refetches: *orderops.Service.
type Refetcher interface {
	StartRefetch(ctx context.Context, req orderops.RefetchRequest) ([]orderops.Refetch, error)
}

// orderKey is one order of one platform.
type orderKey struct{ platform, id string }

// queue holds the orders events asked to refetch, each once: an event for
// an order already queued is folded into it. It is bounded by orders, not
// events, so a burst for one order never fills it.
type queue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	order   []orderKey
	pending map[orderKey]bool
	limit   int
	closed  bool
}

func newQueue(limit int) *queue {
	q := &queue{pending: map[orderKey]bool{}, limit: limit}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add queues k; coalesced when it was queued already; full (nothing
// queued) when the queue holds limit orders or is closed.
func (q *queue) add(k orderKey) (coalesced, full bool, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[k] {
		return true, false, len(q.order)
	}
	if q.closed || len(q.order) >= q.limit {
		return false, true, len(q.order)
	}
	q.pending[k] = true
	q.order = append(q.order, k)
	q.cond.Signal()
	return false, false, len(q.order)
}

// take waits for an order; ok is false once the queue is closed and empty.
func (q *queue) take() (orderKey, int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.order) == 0 {
		return orderKey{}, 0, false
	}
	k := q.order[0]
	q.order = q.order[1:]
	delete(q.pending, k)
	return k, len(q.order), true
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// startTimeout bounds one signal-with-start; startAttempts how often a
// failed one is tried before the event is left to polling (logged).
const (
	startTimeout  = 10 * time.Second
	startAttempts = 3
)

// starter takes orders off q and starts their refetches until q closes.
func starter(q *queue, r Refetcher, m *metrics.Webhooks, log *slog.Logger, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		k, n, ok := q.take()
		if !ok {
			return
		}
		m.Queued(n)
		var err error
		for attempt := 1; attempt <= startAttempts; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			_, err = r.StartRefetch(ctx, orderops.RefetchRequest{Platform: k.platform, IDs: []string{k.id}, Priority: api.RefetchDefaultPriority, Again: true})
			cancel()
			if err == nil {
				break
			}
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		if err != nil {
			m.Refetch(k.platform, metrics.WebhookRefetchFailed)
			log.Warn("webhook refetch not started; polling will bring the change", "platform", k.platform,
				"order_id", textclip.Value(k.id), "error", textclip.Message(err.Error()))
			continue
		}
		m.Refetch(k.platform, metrics.WebhookRefetchStarted)
	}
}
