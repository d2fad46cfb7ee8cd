package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Amazon surface: every shop is also an Amazon seller account speaking
// SP-API Orders v2026-01-01 searchOrders, with its own Login with Amazon, so
// a platform of kind amazon works against the simulator with
//
//	endpoint: http://127.0.0.1:8780/shops/<shop>/amazon
//	options:  {token_url: http://127.0.0.1:8780/shops/<shop>/amazon/auth/o2/token, marketplace_ids: [...]}
//
// and the credential {"client_id":"any","client_secret":"any","refresh_token":"<shop token>"}.
// It lists the same orders as the shop's own API, in Amazon's shapes
// (orders_2026-01-01.json in amzn/selling-partner-api-models), with the
// behaviours a connector must cope with: inclusive bounds, the 2-minute
// rule, pagination tokens that repeat the search and expire
// (Config.AmazonTokenTTL) with any of the texts sellers report
// (Config.AmazonTokenError), access tokens that lapse before their stated
// expiry (Config.AmazonAccessTTL: 403, then the client must refresh), the
// usage plan in x-amzn-RateLimit-Limit on every answer, 429s included, and
// 429 without Retry-After (a seller whose real plan is below the
// configured rate_limit: Config.RateLimit lower than the platform's),
// errors as {"errors":[{"code","message","details"}]}.

// amazonMinAge is how far before the request lastUpdatedBefore must lie.
const amazonMinAge = 2 * time.Minute

// amazonMaxPage is the largest maxResultsPerPage, also its default.
const amazonMaxPage = 100

// amazonDatasets are includedData's values; the simulator renders BUYER,
// RECIPIENT, PROCEEDS and FULFILLMENT and accepts the others.
var amazonDatasets = []string{"BUYER", "RECIPIENT", "PROCEEDS", "EXPENSE", "PROMOTION", "CANCELLATION",
	"FULFILLMENT", "PACKAGES", "TAX", "PAYMENT", "FULFILLMENT_ORDERS"}

// amazonMarketplace is a shop's marketplace, by its currency (a CHF shop
// sells on amazon.de).
type amazonMarketplace struct{ id, name string }

var amazonMarketplaces = map[string]amazonMarketplace{
	"EUR": {"A1PA6795UKMFR9", "Amazon.de"},
	"CHF": {"A1PA6795UKMFR9", "Amazon.de"},
	"USD": {"ATVPDKIKX0DER", "Amazon.com"},
	"GBP": {"A1F83G8C2ARO7P", "Amazon.co.uk"},
}

// AmazonMarketplaceIDs are the marketplace ids of the simulator's shops:
// listing them all in marketplace_ids gets every shop's orders.
var AmazonMarketplaceIDs = []string{"A1PA6795UKMFR9", "ATVPDKIKX0DER", "A1F83G8C2ARO7P"}

// AmazonMarketplace returns the marketplace id of a shop on the Amazon surface.
func (s *Simulator) AmazonMarketplace(shopName string) (string, error) {
	sh, ok := s.byName[shopName]
	if !ok {
		return "", fmt.Errorf("unknown shop %q", shopName)
	}
	return amazonMarketplaces[sh.currency].id, nil
}

// amazonQuery is a parsed searchOrders request.
type amazonQuery struct {
	from, to     int64 // ns, inclusive; to resolved when lastUpdatedBefore is absent
	toGiven      bool
	limit        int
	token        string
	marketplaces []string
	include      map[string]bool
}

// parseAmazonTime reads an ISO 8601 date-time in UTC.
func parseAmazonTime(name, v string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, amazonInvalid(fmt.Sprintf("Invalid date/time field [%s]: %q is not ISO 8601 like 2026-01-02T15:04:05.000Z.", name, v))
	}
	if _, off := t.Zone(); off != 0 {
		return 0, amazonInvalid(fmt.Sprintf("Invalid date/time field [%s]: %q must be in UTC.", name, v))
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return 0, amazonInvalid(fmt.Sprintf("Invalid date/time field [%s]: %q is outside 1970..2200.", name, v))
	}
	return t.UnixNano(), nil
}

// csv splits an SP-API array parameter (comma-separated).
func csv(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// parseAmazonQuery reads a searchOrders request at now (µs). The sim lists
// by update time only: createdAfter and createdBefore are refused.
func parseAmazonQuery(r *http.Request, now int64) (amazonQuery, error) {
	v := r.URL.Query()
	q := amazonQuery{limit: amazonMaxPage, token: v.Get("paginationToken"), include: map[string]bool{}}
	if v.Has("createdAfter") || v.Has("createdBefore") {
		return q, amazonInvalid("The simulator lists by lastUpdatedAfter only; createdAfter and createdBefore are not simulated.")
	}
	if !v.Has("lastUpdatedAfter") {
		return q, amazonInvalid("Exactly one of createdAfter and lastUpdatedAfter is required.")
	}
	var err error
	if q.from, err = parseAmazonTime("lastUpdatedAfter", v.Get("lastUpdatedAfter")); err != nil {
		return q, err
	}
	latest := (now - amazonMinAge.Microseconds()) * 1000
	q.to, q.toGiven = latest, v.Has("lastUpdatedBefore")
	if q.toGiven {
		if q.to, err = parseAmazonTime("lastUpdatedBefore", v.Get("lastUpdatedBefore")); err != nil {
			return q, err
		}
		if q.to > latest {
			return q, amazonInvalid(fmt.Sprintf("lastUpdatedBefore must be at least 2 minutes before the time of the request (%s); got %s.",
				formatMicros(now), v.Get("lastUpdatedBefore")))
		}
	}
	if q.to < q.from {
		return q, amazonInvalid("lastUpdatedBefore must be equal to or after lastUpdatedAfter.")
	}
	if s := v.Get("maxResultsPerPage"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > amazonMaxPage {
			return q, amazonInvalid(fmt.Sprintf("maxResultsPerPage must be between 1 and %d, got %q.", amazonMaxPage, s))
		}
		q.limit = n
	}
	q.marketplaces = csv(v.Get("marketplaceIds"))
	if len(q.marketplaces) > 50 {
		return q, amazonInvalid("marketplaceIds accepts at most 50 marketplaces.")
	}
	for _, d := range csv(v.Get("includedData")) {
		if !slices.Contains(amazonDatasets, d) {
			return q, amazonInvalid(fmt.Sprintf("Invalid includedData value %q.", d))
		}
		q.include[d] = true
	}
	return q, nil
}

// amazonError is SP-API's error body.
type amazonError struct {
	Errors []amazonErrorEntry `json:"errors"`
}

type amazonErrorEntry struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
}

func writeAmazonError(w http.ResponseWriter, status int, code, msg, details string) {
	writeJSON(w, status, amazonError{Errors: []amazonErrorEntry{{Code: code, Message: msg, Details: details}}})
}

// amazonSearchBody is searchOrders' response.
type amazonSearchBody struct {
	Orders            []amazonOrder     `json:"orders"`
	Pagination        *amazonPagination `json:"pagination,omitempty"`
	LastUpdatedBefore string            `json:"lastUpdatedBefore"`
}

type amazonPagination struct {
	NextToken string `json:"nextToken"`
}

// amazonSeller stamps the request id every SP-API answer carries and finds
// the seller the route names; nil when there is none (answered 404).
func (s *Simulator) amazonSeller(w http.ResponseWriter, r *http.Request) *shop {
	w.Header().Set("x-amzn-RequestId", fmt.Sprintf("sim-%d", s.now()))
	sh, ok := s.byName[r.PathValue("shop")]
	if !ok {
		writeAmazonError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Unknown seller %q.", r.PathValue("shop")), "")
		return nil
	}
	return sh
}

// amazonAdmit runs the checks searchOrders and getOrder share, in SP-API's
// order: count the request, the access token (403), then the seller's one
// usage-plan bucket (429). On success it returns true with sh.mu held (the
// caller goes on under the same lock and unlocks); otherwise it has answered
// the request and released the lock.
func (sh *shop) amazonAdmit(w http.ResponseWriter, authed bool, denied string, now int64) bool {
	sh.mu.Lock()
	sh.stats.Requests++
	sh.peak.add(now)
	if rps := sh.bucket.rl.RPS; rps > 0 {
		w.Header().Set("x-amzn-RateLimit-Limit", strconv.FormatFloat(rps, 'f', -1, 64))
	}
	if !authed {
		sh.stats.Unauthorized++
		sh.mu.Unlock()
		writeAmazonError(w, http.StatusForbidden, amazonUnauthorizedErr, amazonDeniedMessage, denied)
		return false
	}
	if ok, _ := sh.bucket.allow(now); !ok {
		// SP-API sends no Retry-After: the rate header is the client's guide.
		sh.stats.RateLimited++
		sh.mu.Unlock()
		writeAmazonError(w, http.StatusTooManyRequests, "QuotaExceeded", "You exceeded your quota for the requested resource.", "")
		return false
	}
	return true
}

// handleAmazonOrders serves GET /shops/{shop}/amazon/orders/2026-01-01/orders
// in the order SP-API checks: route, access token (403), usage plan (429),
// request (400), then injected faults.
func (s *Simulator) handleAmazonOrders(w http.ResponseWriter, r *http.Request) {
	sh := s.amazonSeller(w, r)
	if sh == nil {
		return
	}
	now := s.now()
	q, qerr := parseAmazonQuery(r, now)
	authed, denied := s.amazonAuth(sh, r.Header.Get("x-amz-access-token"), now)

	if !sh.amazonAdmit(w, authed, denied, now) {
		return
	}
	cur := amazonCursor{cursor: cursor{shop: sh.hash, from: q.from, to: q.to, after: entry{upd: ceilMicros(q.from)}}}
	if qerr == nil && q.token != "" {
		cur, qerr = decodeAmazonCursor(q.token, sh.hash, now, s.cfg.AmazonTokenTTL)
		if qerr == nil && (cur.from != q.from || (q.toGiven && cur.to != q.to)) {
			qerr = errAmazonTokenSearch
		}
		q.to = cur.to // a later page without lastUpdatedBefore continues the first page's search
	}
	if qerr != nil {
		sh.stats.BadRequests++
		sh.mu.Unlock()
		if errors.Is(qerr, errAmazonTokenExpired) {
			// Amazon's text for a lapsed token varies (Config.AmazonTokenError).
			writeBody(w, http.StatusBadRequest, []byte(amazonTokenErrorBodies[s.cfg.AmazonTokenError]))
			return
		}
		writeAmazonError(w, http.StatusBadRequest, "InvalidInput", qerr.Error(), "")
		return
	}
	market := amazonMarketplaces[sh.currency]
	inMarket := len(q.marketplaces) == 0 || slices.Contains(q.marketplaces, market.id)
	plan := drawFault(sh.faults, &sh.faultRand)
	hangFor := sh.faults.HangFor
	var items []listed
	var more bool
	if !sh.stats.countUnserved(plan) {
		if inMarket {
			sh.world.advance(now)
			// Inclusive bounds: µs times in [ceil(from), floor(to)].
			items, more = sh.world.page(ceilMicros(q.from), q.to/1000+1, cur.after, q.limit)
		}
		sh.stats.countServed(plan, len(items))
	}
	sh.mu.Unlock()

	body := amazonSearchBody{Orders: make([]amazonOrder, len(items)), LastUpdatedBefore: formatMicros(q.to / 1000)}
	cur.issued = now
	switch plan.kind {
	case fault5xx:
		writeAmazonError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "Temporary overloading or maintenance of the server (simulated fault).", "")
		return
	case faultEmptyPage:
		// The token resumes at the request's own position: following it loses nothing.
		body.Pagination = &amazonPagination{NextToken: cur.encode()}
		writeJSON(w, http.StatusOK, body)
		return
	}
	for i, it := range items {
		body.Orders[i] = renderAmazon(render(it.seq, &it.o, it.v, sh.currency), it.v.status, market, q.include)
	}
	if more {
		last := items[len(items)-1]
		cur.after = entry{upd: last.v.updated, seq: last.seq}
		body.Pagination = &amazonPagination{NextToken: cur.encode()}
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeAmazonError(w, http.StatusInternalServerError, "InternalFailure", "Encoding the page failed.", "")
		return
	}
	writeFaulted(w, r, plan, hangFor, b)
}
