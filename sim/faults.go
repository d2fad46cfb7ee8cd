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
