package sim

import (
	"fmt"
	"time"
)

// VersionVisibility is one order version and the instant the list endpoint
// started showing it.
type VersionVisibility struct {
	ID        string    `json:"id"`
	UpdatedAt time.Time `json:"updated_at"`
	VisibleAt time.Time `json:"visible_at"`
}

// VisibleBetween returns every version of the shop's orders that became
// visible in [from, to), by id and then update order. It is read-only ground
// truth for measuring freshness (how long after a version became visible it
// reached the store). to must not lie after the simulator's now; a version
// superseded before it became visible is still listed (it was visible, if
// only from that instant).
func (s *Simulator) VisibleBetween(shopName string, from, to time.Time) ([]VersionVisibility, error) {
	sh, ok := s.byName[shopName]
	if !ok {
		return nil, fmt.Errorf("unknown shop %q", shopName)
	}
	now := s.now()
	lo, hi := from.UnixNano()/1000, to.UnixNano()/1000
	if hi > now {
		return nil, fmt.Errorf("to %s is after the simulator's now %s", to.UTC().Format(time.RFC3339Nano), formatMicros(now))
	}
	sh.mu.Lock()
	sh.world.advance(now)
	tv := sh.world.truthView()
	sh.mu.Unlock()
	var out []VersionVisibility
	var buf versionBuf
	for i := range tv.orders {
		o := order{created: tv.orders[i].created, seed: tv.orders[i].seed}
		if o.created >= hi {
			break // orders are in creation order and no version is visible before its creation
		}
		for _, v := range tv.shape.versions(&o, tv.stopAt, &buf) {
			if v.visible >= lo && v.visible < hi {
				out = append(out, VersionVisibility{
					ID:        orderID(uint32(i + 1)),
					UpdatedAt: time.UnixMicro(v.updated).UTC(),
					VisibleAt: time.UnixMicro(v.visible).UTC(),
				})
			}
		}
	}
	return out, nil
}
