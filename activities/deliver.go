package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// Error types of deliveries.
const (
	// ErrDeliveryRefused: the destination refused the batch in a way that
	// retrying cannot fix (a 4xx other than 408 and 429). The workflow
	// delivers the batch's changes one by one and sets aside those it
	// refuses alone.
	ErrDeliveryRefused = "DeliveryRefused"
	// ErrChangesGone: the range no longer holds the changes it was listed
	// with (compacted meanwhile; only possible for set-aside changes).
	ErrChangesGone = "ChangesGone"
)

// ChangeFeed is the part of the store deliveries read and acknowledge.
type ChangeFeed interface {
	Changes(ctx context.Context, q store.ChangeQuery) ([]store.Change, error)
	AckChanges(ctx context.Context, consumer string, seq int64) error
	Acks(ctx context.Context) (map[string]int64, error)
}

// Deliveries holds what delivery activities need besides the feed: the
// destinations this worker's platforms file declares (a workflow names a
// destination; its URL and secret reference come from here, so workflow
// input cannot point a secret elsewhere) and their open senders.
type Deliveries struct {
	Destinations map[string]config.Destination

	mu      sync.Mutex
	senders map[string]senderEntry
}

type senderEntry struct {
	settings config.Destination
	sender   sender
}

// sender delivers one batch of changes to a destination. It returns nil
// once the destination confirmed every change, an error of type
// ErrDeliveryRefused for a refusal retrying cannot fix, and any other
// error for a failure worth retrying.
type sender interface {
	send(ctx context.Context, b batch) error
	close()
}

// batch is what a sender sends: the changes of (After, To] with an id a
// receiver can drop a redelivery by.
type batch struct {
	ID          string
	Destination string
	api.SeqRange
	Changes []store.Change
}

// batchID is deterministic from the destination and the seq range, so a
// redelivered batch carries the same id.
func batchID(destination string, r api.SeqRange) string {
	return fmt.Sprintf("%s-%d-%d", destination, r.After+1, r.To)
}

// senderKinds builds a sender per destination kind; config.DestinationKinds
// must name the same kinds (TestSenderKindsMatchConfig).
var senderKinds = map[string]func(config.Destination) (sender, error){
	"webhook": newWebhookSender,
	"nats":    newNATSSender,
	"kafka":   newKafkaSender,
}

// NextBatch lists the seqs of the destination's next batch after req.After,
// waiting up to req.Wait for one to appear. It first records req.After as
// the destination's acknowledged seq in the store, so compaction keeps
// everything after it.
func (a *Activities) NextBatch(ctx context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
	d, err := a.destination(req.Destination)
	if err != nil {
		return api.NextBatchResult{}, err
	}
	if req.Resume {
		acks, err := a.Feed.Acks(ctx)
		if err != nil {
			return api.NextBatchResult{}, temporal.NewApplicationError(err.Error(), ErrStore)
		}
		req.After = max(req.After, acks[d.Name])
	}
	if err := a.Feed.AckChanges(ctx, d.Name, req.After); err != nil {
		return api.NextBatchResult{}, temporal.NewApplicationError(err.Error(), ErrStore)
	}
	deadline := time.Now().Add(req.Wait)
	for {
		changes, err := a.readBatch(ctx, d, req.After, req.Limit)
		if err != nil {
			return api.NextBatchResult{}, err
		}
		if len(changes) > 0 || !time.Now().Before(deadline) {
			out := api.NextBatchResult{After: req.After}
			for _, c := range changes {
				out.Seqs = append(out.Seqs, c.Seq)
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return api.NextBatchResult{}, ctx.Err()
		case <-time.After(min(250*time.Millisecond, time.Until(deadline))):
		}
	}
}

// readBatch reads up to limit of d's changes after after; a destination
// limited to some platforms reads each of them and merges in seq order.
func (a *Activities) readBatch(ctx context.Context, d config.Destination, after int64, limit int) ([]store.Change, error) {
	platforms := d.Platforms
	if len(platforms) == 0 {
		platforms = []string{""}
	}
	var out []store.Change
	for _, p := range platforms {
		cs, err := a.Feed.Changes(ctx, store.ChangeQuery{After: after, Limit: limit, Platform: p})
		if err != nil {
			return nil, temporal.NewApplicationError(fmt.Sprintf("read changes for %s: %v", d.Name, err), ErrStore)
		}
		out = append(out, cs...)
	}
	slices.SortFunc(out, func(x, y store.Change) int { return int(x.Seq - y.Seq) })
	return out[:min(len(out), limit)], nil
}

// DeliverChanges reads the destination's changes in (After, To] and
// delivers them as one batch. The workflow moves its acknowledged seq only
// when this returns nil.
func (a *Activities) DeliverChanges(ctx context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
	d, err := a.destination(req.Destination)
	if err != nil {
		return api.DeliverResult{}, err
	}
	changes, err := a.readBatch(ctx, d, req.After, max(req.Expect, 1)+1)
	if err != nil {
		return api.DeliverResult{}, err
	}
	n := 0
	for n < len(changes) && changes[n].Seq <= req.To {
		n++
	}
	changes = changes[:n]
	if len(changes) != req.Expect {
		return api.DeliverResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("changes (%d, %d] of %s: listed %d, found %d", req.After, req.To, d.Name, req.Expect, len(changes)), ErrChangesGone, nil)
	}
	s, err := a.Deliveries.sender(d)
	if err != nil {
		return api.DeliverResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, nil)
	}
	b := batch{ID: batchID(d.Name, req.SeqRange), Destination: d.Name, SeqRange: req.SeqRange, Changes: changes}
	sendCtx, cancel := context.WithTimeout(ctx, d.Timeout.D())
	defer cancel()
	if err := s.send(sendCtx, b); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return api.DeliverResult{}, err
		}
		return api.DeliverResult{}, temporal.NewApplicationError(fmt.Sprintf("deliver %s: %v", b.ID, err), ErrTransient)
	}
	return api.DeliverResult{Delivered: len(changes)}, nil
}

func (a *Activities) destination(name string) (config.Destination, error) {
	if a.Deliveries == nil || a.Feed == nil {
		return config.Destination{}, temporal.NewNonRetryableApplicationError("this worker delivers no changes (no store feed or destinations)", ErrPermanent, nil)
	}
	d, ok := a.Deliveries.Destinations[name]
	if !ok {
		return config.Destination{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("destination %q is not in this worker's platforms file", name), ErrPermanent, nil)
	}
	return d, nil
}

// sender returns the destination's open sender, building a new one when
// its settings changed.
func (ds *Deliveries) sender(d config.Destination) (sender, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if e, ok := ds.senders[d.Name]; ok {
		if sameDestination(e.settings, d) {
			return e.sender, nil
		}
		e.sender.close()
		delete(ds.senders, d.Name)
	}
	build, ok := senderKinds[d.Kind]
	if !ok {
		return nil, fmt.Errorf("destination %s: unknown kind %q", d.Name, d.Kind)
	}
	s, err := build(d)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	if ds.senders == nil {
		ds.senders = map[string]senderEntry{}
	}
	ds.senders[d.Name] = senderEntry{settings: d, sender: s}
	return s, nil
}

// Close closes every open sender (NATS connections).
func (ds *Deliveries) Close() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for name, e := range ds.senders {
		e.sender.close()
		delete(ds.senders, name)
	}
}

func sameDestination(a, b config.Destination) bool {
	return a.Kind == b.Kind && a.URL == b.URL && a.Secret == b.Secret && a.Subject == b.Subject && a.Timeout == b.Timeout &&
		slices.Equal(a.Brokers, b.Brokers) && a.Topic == b.Topic
}
