package sim

import (
	"math"
	"slices"

	"github.com/tidwall/btree"
)

// entry is an order's position in the list index: the updated_at of its
// shown version, then its sequence number (ids sort like sequence numbers).
type entry struct {
	upd int64
	seq uint32
}

func entryLess(a, b entry) bool {
	if a.upd != b.upd {
		return a.upd < b.upd
	}
	return a.seq < b.seq
}

// event says that order seq has a version becoming visible at at.
type event struct {
	at  int64
	seq uint32
}

// world is one shop's orders. It is advanced lazily to the clock on each
// request; since creations are drawn from one random stream in time order
// and versions are derived from per-order seeds, the state at time t does not
// depend on the times it was advanced through. Not safe for concurrent use:
// the shop's mutex guards it.
type world struct {
	shape    shape
	orders   []order    // by sequence number - 1, i.e. in creation order
	hides    []listHide // hidden from list responses for a while (hidden.go)
	index    *btree.BTreeG[entry]
	pending  []event // min-heap by at: each order's next invisible version
	now      int64   // µs the world has advanced to
	stopAt   int64   // versions updated at or after this do not exist
	gen      rng     // creation times and order seeds
	liveRate float64 // orders per second
	next     int64   // µs of the next live creation
	versions int64   // versions that have become visible
	visible  int     // orders with a visible version
	// onShow, when set, hears of every version that becomes visible after
	// the backlog (the Shopify surface's webhooks, webhooks.go).
	onShow func(seq uint32, prev int8, k int, vs []version)
}

func newWorld(cfg Config, shop string, start int64) *world {
	w := &world{
		shape: shape{
			maxUpdates: int64(cfg.MaxUpdates),
			spread:     max(1, cfg.UpdateSpread.Microseconds()),
			late:       cfg.Late.Microseconds(),
		},
		index:    btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true, Degree: 64}),
		now:      start,
		stopAt:   math.MaxInt64,
		gen:      newRNG(uint64(cfg.Seed), hashString(shop)),
		liveRate: cfg.LiveRate,
		next:     math.MaxInt64,
	}
	// The backlog: creation times uniform over [start-History, start).
	times := make([]int64, cfg.HistoryOrders)
	for i := range times {
		times[i] = start - 1 - w.gen.intn(cfg.History.Microseconds())
	}
	slices.Sort(times)
	w.orders = make([]order, 0, len(times))
	for _, t := range times {
		w.create(t)
	}
	if w.liveRate > 0 {
		w.next = start + w.gap()
	}
	return w
}

// gap draws the time to the next live creation.
func (w *world) gap() int64 {
	return max(1, int64(math.Ceil(w.gen.exp(w.liveRate)*1e6)))
}

func (w *world) create(t int64) {
	w.orders = append(w.orders, order{created: t, seed: w.gen.next(), shown: -1})
	w.place(uint32(len(w.orders)))
}

// place shows order seq's newest version visible at w.now and schedules its next one.
func (w *world) place(seq uint32) {
	o := &w.orders[seq-1]
	var buf versionBuf
	vs := w.shape.versions(o, w.stopAt, &buf)
	k := visibleAt(vs, w.now)
	if k > int(o.shown) {
		prev := o.shown
		if o.shown >= 0 {
			w.index.Delete(entry{vs[o.shown].updated, seq})
		} else {
			w.visible++
		}
		w.index.Set(entry{vs[k].updated, seq})
		w.versions += int64(k - int(o.shown))
		o.shown = int8(k)
		if w.onShow != nil {
			w.onShow(seq, prev, k, vs)
		}
	}
	if k+1 < len(vs) {
		w.push(event{vs[k+1].visible, seq})
	}
}

// advance brings the world to now (µs); it never goes back.
func (w *world) advance(now int64) {
	if now <= w.now {
		return
	}
	w.now = now
	for w.next <= now && w.next < w.stopAt {
		t := w.next
		w.next += w.gap()
		w.create(t)
	}
	for len(w.pending) > 0 && w.pending[0].at <= now {
		w.place(w.pop().seq)
	}
}

// stop ends creation and drops every version updated after now. It returns
// the time from which nothing changes any more: the last late version is
// visible by then.
func (w *world) stop(now int64) int64 {
	w.advance(now)
	if w.stopAt > w.now+1 {
		w.stopAt = w.now + 1
	}
	return w.stopAt - 1 + w.shape.late
}

// listed is one order picked for a page, copied out so rendering can happen
// after the shop's lock is released.
type listed struct {
	seq uint32
	o   order
	v   version
}

// page returns up to limit orders with shown updated_at in [from, to),
// strictly after cursor in (updated_at, seq) order, and whether more follow.
func (w *world) page(from, to int64, after entry, limit int) (out []listed, more bool) {
	if after.upd < from {
		after = entry{upd: from}
	}
	out = make([]listed, 0, limit)
	var buf versionBuf
	w.index.Ascend(entry{after.upd, after.seq + 1}, func(e entry) bool {
		if e.upd >= to {
			return false
		}
		if len(w.hides) > 0 && w.hidden(e.seq) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		o := w.orders[e.seq-1]
		vs := w.shape.versions(&o, w.stopAt, &buf)
		out = append(out, listed{seq: e.seq, o: o, v: vs[o.shown]})
		return true
	})
	return out, more
}

// truthView is what a ground-truth scan needs, taken under the shop's lock.
// created and seed never change once an order exists, so the scan itself
// can run without the lock while the world moves on.
type truthView struct {
	orders []order
	stopAt int64
	shape  shape
}

func (w *world) truthView() truthView {
	return truthView{orders: w.orders[:len(w.orders):len(w.orders)], stopAt: w.stopAt, shape: w.shape}
}

// each calls fn, in id order, with every order's newest version visible at asOf.
func (tv truthView) each(asOf int64, fn func(seq uint32, o *order, v version)) {
	var buf versionBuf
	for i := range tv.orders {
		o := order{created: tv.orders[i].created, seed: tv.orders[i].seed} // not shown: it may be changing
		if o.created > asOf {
			break // orders are in creation order
		}
		vs := tv.shape.versions(&o, tv.stopAt, &buf)
		if k := visibleAt(vs, asOf); k >= 0 {
			fn(uint32(i+1), &o, vs[k])
		}
	}
}

func (w *world) push(e event) {
	w.pending = append(w.pending, e)
	h := w.pending
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (w *world) pop() event {
	h := w.pending
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	w.pending = h[:n]
	h = h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].at < h[c].at {
			c++
		}
		if h[i].at <= h[c].at {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return top
}

// scan calls fn for every order with shown updated_at in [from, to), in
// (updated_at, id) order.
func (w *world) scan(from, to int64, fn func(listed)) {
	after := entry{upd: from}
	for {
		items, more := w.page(from, to, after, 1000)
		for _, it := range items {
			fn(it)
		}
		if !more || len(items) == 0 {
			return
		}
		last := items[len(items)-1]
		after = entry{upd: last.v.updated, seq: last.seq}
	}
}
