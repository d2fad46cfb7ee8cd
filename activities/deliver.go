package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// Error types of deliveries.
const (
	// ErrDeliveryRefused: the destination refused the batch in a way that
	// retrying cannot fix (delivery.ErrRefused).
	ErrDeliveryRefused = delivery.ErrRefused
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

// Deliveries holds what delivery activities need besides the feed: where
// a destination's settings come from (a workflow names a destination; its
// URL and secret reference come from here, so workflow input cannot point
// a secret elsewhere) and the open senders.
type Deliveries struct {
	// Registry, when set, resolves destinations by name from the account
	// registry (accounts.Directory): one added at runtime is delivered to
	// without a restart, and a removed one is refused.
	Registry DestinationLookup
	// Destinations are the ones this worker was given directly (its
	// platforms file): used for a name the registry does not hold.
	Destinations map[string]config.Destination

	mu      sync.Mutex
	senders map[string]senderEntry
}

// DestinationLookup resolves a destination by name (accounts.Directory).
type DestinationLookup interface {
	LookupDestination(ctx context.Context, name string) (config.Destination, accounts.State, bool, error)
}

type senderEntry struct {
	settings config.Destination
	sender   delivery.Sender
}

// laneBatchID names one lane's batch: its first seq, the range's end and
// the lane, which together fix its changes (every change of the lane from
// its first seq to the end), so a redelivery carries the same id and no
// other batch does.
func laneBatchID(destination string, req api.DeliverRequest) string {
	return fmt.Sprintf("%s-%d-%d-lane%dof%d", destination, req.Seqs[0], req.To, req.Lane+1, req.Lanes)
}

// batchID is deterministic from the destination and the seq range, so a
// redelivered batch carries the same id.
func batchID(destination string, r api.SeqRange) string {
	return fmt.Sprintf("%s-%d-%d", destination, r.After+1, r.To)
}

// NextBatch lists the seqs of the destination's next batch after req.After,
// waiting up to req.Wait for one to appear. It first records req.After as
// the destination's acknowledged seq in the store, so compaction keeps
// everything after it.
func (a *Activities) NextBatch(ctx context.Context, req api.NextBatchRequest) (api.NextBatchResult, error) {
	d, err := a.destination(ctx, req.Destination)
	if err != nil {
		return api.NextBatchResult{}, err
	}
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	if req.Resume {
		acks, err := a.Feed.Acks(ctx)
		if err != nil {
			return api.NextBatchResult{}, temporal.NewApplicationError(err.Error(), ErrStore)
		}
		req.After = max(req.After, acks[d.Name])
	}
	ack := req.After
	if req.OldestSetAside > 0 {
		ack = min(ack, req.OldestSetAside-1) // not acknowledged by the destination
	}
	if err := a.Feed.AckChanges(ctx, d.Name, ack); err != nil {
		return api.NextBatchResult{}, temporal.NewApplicationError(err.Error(), ErrStore)
	}
	lanes := max(req.Lanes, 1)
	deadline := time.Now().Add(req.Wait)
	for {
		// Listing needs seqs and order ids only, not the orders.
		changes, err := a.readChanges(ctx, d, store.ChangeQuery{After: req.After, Limit: req.Limit * lanes, KeysOnly: true})
		if err != nil {
			return api.NextBatchResult{}, err
		}
		if len(changes) > 0 || !time.Now().Before(deadline) {
			out := api.NextBatchResult{After: req.After}
			if req.Lanes > 1 {
				out.To, out.Lanes = splitLanes(req.After, changes, req.Lanes, req.Limit)
				return out, nil
			}
			for _, c := range changes[:min(len(changes), req.Limit)] {
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

// heartbeatWhileRunning heartbeats from its own goroutine until stop is
// called, so a long poll or a slow send shows the server its worker is
// alive even while a store call or the destination is slow, and a worker
// killed meanwhile is noticed within the heartbeat timeout (not the
// start-to-close one). The SDK sends at most
// one heartbeat per 80% of the timeout, and heartbeats write no history.
func heartbeatWhileRunning(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {} // called directly, as in unit tests; a local activity cannot heartbeat
	}
	every := time.Second
	if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 {
		every = min(every, ht/4)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		activity.RecordHeartbeat(ctx)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// splitLanes splits changes (in seq order, after after) into up to lanes
// batches of at most limit, every change of one order in the same lane
// (LaneOf). The range ends before the first change whose lane is full, so
// it is a gap-free prefix of changes; it returns the range's end and the
// non-empty lanes.
func splitLanes(after int64, changes []store.Change, lanes, limit int) (int64, []api.LaneBatch) {
	byLane := make([][]int64, lanes)
	to := after
	for _, c := range changes {
		l := LaneOf(c.Platform, c.OrderID, lanes)
		if len(byLane[l]) >= limit {
			break
		}
		byLane[l] = append(byLane[l], c.Seq)
		to = c.Seq
	}
	var out []api.LaneBatch
	for l, seqs := range byLane {
		if len(seqs) > 0 {
			out = append(out, api.LaneBatch{Lane: l, Seqs: seqs})
		}
	}
	return to, out
}

// LaneOf is the lane of an order among lanes: FNV-1a of platform/order
// id, so one order's changes always share a lane and go in seq order.
func LaneOf(platform, orderID string, lanes int) int {
	h := fnv.New32a()
	h.Write([]byte(platform))
	h.Write([]byte{'/'})
	h.Write([]byte(orderID))
	return int(h.Sum32() % uint32(lanes))
}

// readChanges reads d's changes for q; a destination limited to some
// platforms reads each of them and merges in seq order.
func (a *Activities) readChanges(ctx context.Context, d config.Destination, q store.ChangeQuery) ([]store.Change, error) {
	platforms := d.Platforms
	if len(platforms) == 0 {
		platforms = []string{""}
	}
	var out []store.Change
	for _, p := range platforms {
		q.Platform = p
		cs, err := a.Feed.Changes(ctx, q)
		if err != nil {
			return nil, temporal.NewApplicationError(fmt.Sprintf("read changes for %s: %v", d.Name, err), ErrStore)
		}
		out = append(out, cs...)
	}
	slices.SortFunc(out, func(x, y store.Change) int { return cmp.Compare(x.Seq, y.Seq) })
	return out[:min(len(out), q.Limit)], nil
}

// DeliverChanges reads the destination's changes in (After, To] and
// delivers them as one batch. The workflow moves its acknowledged seq only
// when this returns nil. It heartbeats while it reads and sends, so a
// worker killed mid-batch is noticed within the heartbeat timeout the
// workflow sets (workflows, deliverActivityContext), not after the
// start-to-close one.
func (a *Activities) DeliverChanges(ctx context.Context, req api.DeliverRequest) (api.DeliverResult, error) {
	d, err := a.destination(ctx, req.Destination)
	if err != nil {
		return api.DeliverResult{}, err
	}
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	changes, err := a.readRequested(ctx, d, req)
	if err != nil {
		return api.DeliverResult{}, err
	}
	s, err := a.Deliveries.sender(d)
	if err != nil {
		return api.DeliverResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, nil)
	}
	// The payload is read from the destination's settings here, per
	// batch, like its URL: an edit applies from the next batch, and the
	// workflow's input never carries it.
	b := delivery.Batch{ID: batchID(d.Name, req.SeqRange), Destination: d.Name, SeqRange: req.SeqRange, Changes: changes, Payload: d.Payload}
	if req.Lanes > 1 {
		b.ID, b.Lane, b.Lanes = laneBatchID(d.Name, req), req.Lane, req.Lanes
	}
	sendCtx, cancel := context.WithTimeout(ctx, d.Timeout.D())
	defer cancel()
	if err := s.Send(sendCtx, b); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return api.DeliverResult{}, err
		}
		return api.DeliverResult{}, temporal.NewApplicationError(textclip.Message(fmt.Sprintf("deliver %s: %v", b.ID, err)), ErrTransient)
	}
	return api.DeliverResult{Delivered: len(changes)}, nil
}

// readRequested reads the changes a DeliverRequest names: all of (After,
// To], or with Seqs only those. It fails with ErrChangesGone when it finds
// fewer than the request expects.
func (a *Activities) readRequested(ctx context.Context, d config.Destination, req api.DeliverRequest) ([]store.Change, error) {
	q := store.ChangeQuery{After: req.After, Limit: max(req.Expect, 1) + 1}
	if req.Lanes > 1 || len(req.Seqs) > 0 {
		if err := checkLaneRequest(req); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, nil)
		}
		q.Seqs = req.Seqs
	}
	changes, err := a.readChanges(ctx, d, q)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(changes) && changes[n].Seq <= req.To {
		n++
	}
	changes = changes[:n]
	if len(changes) != req.Expect {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("changes (%d, %d] of %s: listed %d, found %d", req.After, req.To, d.Name, req.Expect, len(changes)), ErrChangesGone, nil)
	}
	return changes, nil
}

// checkLaneRequest refuses a lane request that does not name a lane of
// (After, To] by its seqs.
func checkLaneRequest(req api.DeliverRequest) error {
	switch {
	case req.Lanes < 2 || req.Lane < 0 || req.Lane >= req.Lanes:
		return fmt.Errorf("lane %d of %d is not a lane", req.Lane, req.Lanes)
	case len(req.Seqs) == 0 || len(req.Seqs) != req.Expect:
		return fmt.Errorf("lane %d of (%d, %d]: %d seqs for %d changes", req.Lane, req.After, req.To, len(req.Seqs), req.Expect)
	case req.Seqs[0] <= req.After || req.Seqs[len(req.Seqs)-1] > req.To:
		return fmt.Errorf("lane %d: seqs %d..%d outside (%d, %d]", req.Lane, req.Seqs[0], req.Seqs[len(req.Seqs)-1], req.After, req.To)
	case !slices.IsSorted(req.Seqs):
		return fmt.Errorf("lane %d: seqs not in order", req.Lane)
	}
	return nil
}

func (a *Activities) destination(ctx context.Context, name string) (config.Destination, error) {
	if a.Deliveries == nil || a.Feed == nil {
		return config.Destination{}, temporal.NewNonRetryableApplicationError("this worker delivers no changes (no store feed or destinations)", ErrPermanent, nil)
	}
	if r := a.Deliveries.Registry; r != nil {
		d, state, found, err := r.LookupDestination(ctx, name)
		switch {
		case err != nil:
			return config.Destination{}, temporal.NewApplicationError(
				textclip.Message(fmt.Sprintf("destination %s: look it up in the registry: %v", printableName(name), err)), ErrStore)
		case found && state == accounts.Removed:
			// Nothing is sent or acknowledged for a removed destination:
			// its consumer row is being released.
			return config.Destination{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("destination %s was removed from the registry; nothing is delivered to it (add it again to deliver)", printableName(name)),
				ErrPermanent, nil)
		case found:
			return d, nil
		}
	}
	d, ok := a.Deliveries.Destinations[name]
	if !ok {
		// Retried, not fatal: during a rollout of a new platforms file, or
		// with workers whose files differ, another worker (or this one
		// after it re-reads its file) has the destination. Failing the
		// Delivery workflow here would stop delivery for good.
		return config.Destination{}, temporal.NewApplicationError(
			fmt.Sprintf("destination %s is neither registered nor in this worker's platforms file (retried until it is registered: ordersync deliveries add)",
				printableName(name)), ErrTransient)
	}
	return d, nil
}

// sender returns the destination's open sender, building a new one when
// its settings changed.
func (ds *Deliveries) sender(d config.Destination) (delivery.Sender, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if e, ok := ds.senders[d.Name]; ok {
		if delivery.Same(e.settings, d) {
			return e.sender, nil
		}
		e.sender.Close()
		delete(ds.senders, d.Name)
	}
	s, err := delivery.New(d)
	if err != nil {
		return nil, err
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
		e.sender.Close()
		delete(ds.senders, name)
	}
}
