package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// listQuery is a parsed GET /shops/{shop}/orders request.
type listQuery struct {
	from, to int64 // ns, as requested (tokens are bound to these)
	limit    int
	token    string
}

// defaultLimit applies when a request names no limit.
const defaultLimit = 50

// Accepted times: int64 nanoseconds cover 1678..2262; stay well inside.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func parseTimeParam(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, fmt.Errorf("%s is required (RFC3339, e.g. 2026-01-02T15:04:05Z)", name)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not an RFC3339 time like 2026-01-02T15:04:05Z", name, v)
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return 0, fmt.Errorf("%s %q is outside 1970..2200", name, v)
	}
	return t.UnixNano(), nil
}

func parseListQuery(r *http.Request, maxPage int) (listQuery, error) {
	var q listQuery
	var err error
	if q.from, err = parseTimeParam(r, "updated_from"); err != nil {
		return q, err
	}
	if q.to, err = parseTimeParam(r, "updated_to"); err != nil {
		return q, err
	}
	if q.from >= q.to {
		return q, fmt.Errorf("updated_from must be before updated_to")
	}
	q.limit = min(defaultLimit, maxPage)
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return q, fmt.Errorf("limit must be an integer between 1 and %d, got %q", maxPage, v)
		}
		q.limit = n
	}
	q.token = r.URL.Query().Get("page_token")
	return q, nil
}

// ceilMicros converts a window bound in ns to the first µs at or after it,
// so [from, to) in µs selects exactly the µs times inside [from, to) in ns.
func ceilMicros(ns int64) int64 { return (ns + 999) / 1000 }

// listBody is the list endpoint's response.
type listBody struct {
	Orders        []wireOrder `json:"orders"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// admit runs the checks every request to a shop's REST endpoints passes
// before its own validation, in the order a real platform applies them:
// count it, authenticate, then take a rate-limit token. On success it
// returns true with sh.mu held (the caller goes on under the same lock and
// unlocks); otherwise it has answered the request and released the lock.
func (sh *shop) admit(w http.ResponseWriter, authed bool, now int64) bool {
	sh.mu.Lock()
	sh.stats.Requests++
	sh.peak.add(now)
	if rps := sh.bucket.rl.RPS; rps > 0 {
		w.Header().Set("X-RateLimit-Limit", strconv.FormatFloat(rps, 'f', -1, 64))
	}
	if !authed {
		sh.stats.Unauthorized++
		sh.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer realm="sim"`)
		writeError(w, http.StatusUnauthorized, "invalid or missing bearer token")
		return false
	}
	if ok, wait := sh.bucket.allow(now); !ok {
		sh.stats.RateLimited++
		msg := fmt.Sprintf("rate limit exceeded: %v requests/s, burst %v", sh.bucket.rl.RPS, sh.bucket.burst())
		sh.mu.Unlock()
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
		writeError(w, http.StatusTooManyRequests, msg)
		return false
	}
	return true
}

// handleList serves GET /shops/{shop}/orders. The checks run in the order a
// real platform applies them: route, authentication, rate limit, request
// validation, then (on valid requests only) injected faults.
func (s *Simulator) handleList(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.byName[r.PathValue("shop")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown shop %q", r.PathValue("shop")))
		return
	}
	q, qerr := parseListQuery(r, s.cfg.MaxPageSize)
	authed := bearerMatches(r, sh.token)
	now := s.now()

	if !sh.admit(w, authed, now) {
		return
	}
	cur := cursor{shop: sh.hash, from: q.from, to: q.to, after: entry{upd: ceilMicros(q.from)}}
	if qerr == nil && q.token != "" {
		cur, qerr = decodeCursor(q.token, sh.hash, q.from, q.to)
	}
	if qerr != nil {
		sh.stats.BadRequests++
		sh.mu.Unlock()
		writeError(w, http.StatusBadRequest, qerr.Error())
		return
	}
	plan := drawFault(sh.faults, &sh.faultRand)
	hangFor := sh.faults.HangFor
	var items []listed
	var more bool
	if !sh.stats.countUnserved(plan) {
		sh.world.advance(now)
		items, more = sh.world.page(ceilMicros(q.from), ceilMicros(q.to), cur.after, q.limit)
		sh.stats.countServed(plan, len(items))
	}
	sh.mu.Unlock()

	switch plan.kind {
	case fault5xx:
		writeError(w, http.StatusServiceUnavailable, "service temporarily unavailable (simulated fault), try again")
		return
	case faultEmptyPage:
		// The token resumes at the request's own position: following it loses nothing.
		writeJSON(w, http.StatusOK, listBody{Orders: []wireOrder{}, NextPageToken: cur.encode()})
		return
	}
	body := listBody{Orders: make([]wireOrder, len(items))}
	for i, it := range items {
		body.Orders[i] = render(it.seq, &it.o, it.v, sh.currency)
	}
	if more {
		last := items[len(items)-1]
		cur.after = entry{upd: last.v.updated, seq: last.seq}
		body.NextPageToken = cur.encode()
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the page failed")
		return
	}
	writeFaulted(w, r, plan, hangFor, b)
}
