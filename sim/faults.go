package sim

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

type faultKind uint8

const (
	faultNone faultKind = iota
	fault5xx
	faultHang
	faultMalformed
	faultEmptyPage
)

// faultPlan is everything random about one fault, drawn under the shop's
// lock from the shop's fault stream so the sequence of faults is
// reproducible for a given sequence of requests.
type faultPlan struct {
	kind   faultKind
	at     float64 // where to cut or garble a malformed body, as a fraction
	garble bool    // garble one byte instead of truncating
	abort  bool    // after a hang, drop the connection instead of answering
}

// drawFault picks at most one fault: one uniform draw against the
// cumulative rates, so the rates are exact and mutually exclusive.
func drawFault(f Faults, r *rng) faultPlan {
	u := r.float()
	p := faultPlan{at: r.float(), garble: r.intn(2) == 0, abort: r.intn(2) == 0}
	switch {
	case u < f.Err5xx:
		p.kind = fault5xx
	case u < f.Err5xx+f.Hang:
		p.kind = faultHang
	case u < f.Err5xx+f.Hang+f.Malformed:
		p.kind = faultMalformed
	case u < f.total():
		p.kind = faultEmptyPage
	}
	return p
}

// malform breaks a JSON body so that no decoder accepts it: either a proper
// prefix (the object never closes) or a control byte, which is invalid both
// inside and outside strings.
func malform(body []byte, p faultPlan) []byte {
	body = bytes.TrimRight(body, "\n")
	if len(body) < 2 {
		return []byte("{")
	}
	pos := 1 + int(p.at*float64(len(body)-1))
	pos = min(pos, len(body)-1)
	if p.garble {
		b := bytes.Clone(body)
		b[pos] = 0x01
		return b
	}
	return body[:pos]
}

// hang waits d in real time, or until the client gives up, so hung handlers
// do not pile up after their clients have timed out.
func hang(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// abortConnection drops the connection without a response; net/http treats
// this panic value as a deliberate abort and does not log it.
func abortConnection() {
	panic(http.ErrAbortHandler)
}

// countServed counts an answered page in the shop's stats as its fault plan
// says: a hang or a malformed body, or a page served with its orders. The
// shop's lock is held.
func (st *ShopStats) countServed(plan faultPlan, orders int) {
	switch plan.kind {
	case faultHang:
		st.Faults.Hang++
	case faultMalformed:
		st.Faults.Malformed++
	default:
		st.Pages++
		st.OrdersServed += int64(orders)
	}
}

// writeFaulted writes an answer's JSON body with status 200 as its fault
// plan says: garbled or cut short, after a hang (then maybe no answer at
// all), or as it is. Every API surface of the simulator ends this way.
func writeFaulted(w http.ResponseWriter, r *http.Request, plan faultPlan, hangFor time.Duration, body []byte) {
	switch plan.kind {
	case faultMalformed:
		writeBody(w, http.StatusOK, malform(body, plan))
	case faultHang:
		if !hang(r.Context(), hangFor) {
			return // the client gave up
		}
		if plan.abort {
			abortConnection()
		}
		writeBody(w, http.StatusOK, body)
	default:
		writeBody(w, http.StatusOK, body)
	}
}

// countUnserved counts a fault that answers without a page (a 5xx, or an
// empty page that hands back the request's own token) and reports whether
// the plan is one; false means the page is to be served.
func (st *ShopStats) countUnserved(plan faultPlan) bool {
	switch plan.kind {
	case fault5xx:
		st.Faults.Err5xx++
	case faultEmptyPage:
		st.Faults.EmptyPage++
	default:
		return false
	}
	return true
}
