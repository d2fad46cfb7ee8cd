package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// handleGet serves GET /shops/{shop}/orders/{id}: the order's newest
// visible version, in the list endpoint's shape, or 404 with
// {"error":"order <id> not found"} when no order has the id or none of its
// versions is visible yet (a late order is unknown to the platform until
// then, as on the list). It shares the shop's rate limit, counters and
// injected faults with the list endpoint: a get-one call is a request like
// any other, so a client that calls it too fast is answered 429.
func (s *Simulator) handleGet(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.byName[r.PathValue("shop")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown shop %q", r.PathValue("shop")))
		return
	}
	id := r.PathValue("id")
	authed := bearerMatches(r, sh.token)
	now := s.now()

	if !sh.admit(w, authed, now) {
		return
	}
	plan := drawFault(sh.faults, &sh.faultRand)
	hangFor := sh.faults.HangFor
	var found *listed
	if !sh.stats.countUnserved(plan) {
		sh.world.advance(now)
		found = sh.world.orderByID(id)
		n := 0
		if found != nil {
			n = 1
		}
		sh.stats.countServed(plan, n)
	}
	sh.mu.Unlock()

	switch plan.kind {
	case fault5xx:
		writeError(w, http.StatusServiceUnavailable, "service temporarily unavailable (simulated fault), try again")
		return
	case faultEmptyPage:
		// The get-one call has no page to leave empty: the same fault
		// answers as a platform's index that does not show the order yet.
		found = nil
	}
	if found == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("order %s not found", clipEchoedID(id)))
		return
	}
	b, err := json.Marshal(render(found.seq, &found.o, found.v, sh.currency))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the order failed")
		return
	}
	writeFaulted(w, r, plan, hangFor, b)
}

// orderByID returns order id's newest visible version, or nil when the id names
// no order (not one of the simulator's ids, not created yet) or none of
// its versions is visible yet.
func (w *world) orderByID(id string) *listed {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || len(id) != len(orderID(1)) || n <= 1_000_000_000 || n-1_000_000_000 > uint64(len(w.orders)) {
		return nil
	}
	seq := uint32(n - 1_000_000_000)
	o := w.orders[seq-1]
	if o.shown < 0 {
		return nil
	}
	var buf versionBuf
	vs := w.shape.versions(&o, w.stopAt, &buf)
	if int(o.shown) >= len(vs) {
		return nil
	}
	return &listed{seq: seq, o: o, v: vs[o.shown]}
}

// clipEchoedID keeps an echoed id short: it came from the request.
func clipEchoedID(id string) string {
	if len(id) > 64 {
		return strconv.Quote(id[:64]) + "..."
	}
	return strconv.Quote(id)
}
