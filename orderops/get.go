package orderops

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// Order is one stored order as `orders get` shows it.
type Order struct {
	Platform    string    `json:"platform"`
	ID          string    `json:"id"`
	Number      string    `json:"number,omitempty"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	FirstSeenAt time.Time `json:"first_seen_at"`
	LastSeenAt  time.Time `json:"last_seen_at"`
	Currency    string    `json:"currency"`
	Total       string    `json:"total"`
	LineCount   int       `json:"line_count"`
	// Canonical is the canonical order; nil for a version stored before
	// there was one (refetch the order to fill it in).
	Canonical *order.Canonical `json:"canonical"`
	// Raw is the platform's order, only when asked for.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Lines are the stored lines (HasLines false: the platform listed none).
	Lines    []order.Line `json:"lines"`
	HasLines bool         `json:"has_lines"`
	// Versions are the change feed's retained entries of this order,
	// oldest first; compaction removes those every destination has.
	Versions []Version `json:"versions"`
	// Deliveries say, per destination, where the current version stands.
	Deliveries []Delivery `json:"deliveries"`
}

// Version is one change feed entry of an order: a version the store
// accepted.
type Version struct {
	Seq         int64            `json:"seq"`
	UpdatedAt   time.Time        `json:"updated_at"`
	CommittedAt time.Time        `json:"committed_at"`
	Kind        store.ChangeKind `json:"kind"`
}

// Delivery states of an order's current version at one destination.
const (
	// Delivered: the destination acknowledged the seq of the order's
	// latest change (or the change is compacted, which needs every
	// destination's acknowledgement).
	Delivered = "delivered"
	// SetAside: the latest change is on the destination's poison list
	// (ordersync deliveries retry|skip).
	SetAside = "set_aside"
	// Pending: not acknowledged yet.
	Pending = "pending"
	// NotForPlatform: the destination takes other platforms' changes only.
	NotForPlatform = "not_for_platform"
)

// Delivery is where an order's current version stands at one destination.
type Delivery struct {
	Destination string `json:"destination"`
	State       string `json:"state"`
	// Seq is the change that carries the current version (0: compacted);
	// Acked the destination's acknowledged seq.
	Seq   int64 `json:"seq,omitempty"`
	Acked int64 `json:"acked"`
	// Paused is the destination's registry state.
	Paused bool `json:"paused,omitempty"`
	// Reason is why it was set aside (the destination's status), or why
	// the poison list could not be read.
	Reason string `json:"reason,omitempty"`
}

// GetOptions say what Get includes.
type GetOptions struct {
	// Raw includes the platform's order.
	Raw bool
}

// Get returns one stored order; found is false when the store does not
// know it.
func (s *Service) Get(ctx context.Context, platform, id string, opts GetOptions) (Order, bool, error) {
	so, ok, err := s.Store.GetOrder(ctx, platform, id)
	if err != nil || !ok {
		return Order{}, false, err
	}
	o := Order{Platform: so.Platform, ID: so.ID, Status: so.Status, CreatedAt: so.CreatedAt, UpdatedAt: so.UpdatedAt,
		FirstSeenAt: so.FirstSeenAt, LastSeenAt: so.LastSeenAt, Currency: so.Currency, Total: so.Total, LineCount: so.LineCount,
		Canonical: so.Canonical, Lines: so.Lines, HasLines: so.HasLines, Versions: []Version{}, Deliveries: []Delivery{}}
	if o.Lines == nil {
		o.Lines = []order.Line{}
	}
	if so.Canonical != nil {
		o.Number = so.Canonical.Number
	}
	if opts.Raw {
		o.Raw = so.Raw
	}
	changes, err := s.Store.OrderChanges(ctx, platform, id)
	if err != nil {
		return Order{}, false, err
	}
	var latest int64
	for _, c := range changes {
		o.Versions = append(o.Versions, Version{Seq: c.Seq, UpdatedAt: c.UpdatedAt, CommittedAt: c.CommittedAt, Kind: c.Kind})
		latest = c.Seq
	}
	if o.Deliveries, err = s.deliveries(ctx, platform, latest); err != nil {
		return Order{}, false, err
	}
	return o, true, nil
}

// deliveries judges the change latest (0: compacted) at every registered
// destination that is not removed.
func (s *Service) deliveries(ctx context.Context, platform string, latest int64) ([]Delivery, error) {
	out := []Delivery{}
	if s.Registry == nil {
		return out, nil
	}
	acks, err := s.Store.Acks(ctx)
	if err != nil {
		return nil, fmt.Errorf("read acknowledged seqs: %w", err)
	}
	err = accounts.EachEntry(ctx, s.Registry, accounts.Filter{Class: accounts.ClassDestination}, func(e accounts.Entry) error {
		if e.State == accounts.Removed {
			return nil
		}
		d, err := accounts.DecodeDestination(e)
		if err != nil {
			return fmt.Errorf("destination %s: %w", e.Name, err)
		}
		out = append(out, s.judge(ctx, d, e.State == accounts.Paused, platform, latest, acks[d.Name]))
		return nil
	})
	return out, err
}

func (s *Service) judge(ctx context.Context, d config.Destination, paused bool, platform string, latest, acked int64) Delivery {
	r := Delivery{Destination: d.Name, Seq: latest, Acked: acked, Paused: paused}
	if len(d.Platforms) > 0 && !slices.Contains(d.Platforms, platform) {
		r.State = NotForPlatform
		return r
	}
	if latest == 0 {
		// Compaction removes only changes every destination acknowledged.
		r.State = Delivered
		return r
	}
	// The Delivery workflow knows more than the store: it records its
	// acknowledged seq in the store only when it lists the next batch, so
	// a busy worker leaves the store's seq behind. A set-aside change
	// counts as acknowledged (the workflow moves past it), so its poison
	// list is asked first.
	st, err := s.deliveryState(ctx, d.Name)
	if err != nil {
		r.Reason = textclip.Value("set-aside changes unknown: " + err.Error())
	}
	for _, p := range st.Poison {
		if p.Seq == latest {
			r.State, r.Reason = SetAside, textclip.Value(p.Reason)
			return r
		}
	}
	acked = max(acked, st.Acked)
	r.Acked = acked
	if acked >= latest {
		r.State = Delivered
	} else {
		r.State = Pending
	}
	return r
}

// deliveryState is the Delivery workflow's state, from the status query
// `deliveries status` reads. No workflow: an empty state.
func (s *Service) deliveryState(ctx context.Context, destination string) (api.DeliveryState, error) {
	if s.Temporal == nil {
		return api.DeliveryState{}, fmt.Errorf("no Temporal connection")
	}
	v, err := s.Temporal.QueryWorkflow(ctx, api.DeliveryWorkflowID(destination), "", api.QueryDeliveryStatus)
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), "workflow execution already completed") {
			return api.DeliveryState{}, nil
		}
		return api.DeliveryState{}, fmt.Errorf("query %s: %w", api.DeliveryWorkflowID(destination), err)
	}
	var out api.DeliveryStatus
	if err := v.Get(&out); err != nil {
		return api.DeliveryState{}, fmt.Errorf("decode the status of %s: %w", destination, err)
	}
	return out.State, nil
}
