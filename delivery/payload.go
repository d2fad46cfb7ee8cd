package delivery

import (
	"encoding/json"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// canonicalChange is a change as a destination with payload canonical
// receives it: the change's own fields, and of its order only what names
// it (platform, id, times) and the canonical order. Decoded into a
// store.Change it fills the same fields.
type canonicalChange struct {
	Seq         int64            `json:"seq"`
	Platform    string           `json:"platform"`
	OrderID     string           `json:"order_id"`
	Kind        store.ChangeKind `json:"kind"`
	UpdatedAt   time.Time        `json:"updated_at"`
	CommittedAt time.Time        `json:"committed_at"`
	Order       canonicalOrder   `json:"order"`
}

type canonicalOrder struct {
	Platform  string           `json:"platform"`
	ID        string           `json:"id"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
	Canonical *order.Canonical `json:"canonical"`
}

// EncodeChange is one change as JSON in a destination's payload
// (config.Destination.Payload), as every sender and `ordersync changes -o
// jsonl --payload` write it. Both (the default) is the change as the
// feed holds it, byte for byte what destinations received before there
// was a choice, plus the order's canonical form; raw leaves out the
// canonical form; canonical leaves out the raw JSON and the per-kind
// header and lines, which the canonical order restates in one shape.
func EncodeChange(payload string, c store.Change) ([]byte, error) {
	switch payload {
	case config.PayloadRaw:
		c.Order.Canonical = nil
		return json.Marshal(c)
	case config.PayloadCanonical:
		return json.Marshal(canonicalChange{Seq: c.Seq, Platform: c.Platform, OrderID: c.OrderID, Kind: c.Kind,
			UpdatedAt: c.UpdatedAt, CommittedAt: c.CommittedAt, Order: canonicalOrder{Platform: c.Order.Platform, ID: c.Order.ID,
				CreatedAt: c.Order.CreatedAt, UpdatedAt: c.Order.UpdatedAt, Canonical: canonicalOf(c.Order.Order)}})
	}
	return json.Marshal(c)
}

// canonicalOf is o's canonical order, or, for a version stored before
// ordersync kept canonical orders, its header form (kind unknown here:
// "", as the schema allows), so a canonical destination never gets a
// change without one.
func canonicalOf(o order.Order) *order.Canonical {
	if o.Canonical != nil {
		return o.Canonical
	}
	return connectors.Canonical(config.Platform{Name: o.Platform}, o)
}
