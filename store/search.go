package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// OrderSearch reads stored orders for the order operations (`orders
// search`, `orders get`): both backends implement it alike, proven by the
// conformance tests.
type OrderSearch interface {
	// SearchOrders returns one page of the orders q selects, newest
	// updated_at first, and the token of the next page ("" on the last).
	SearchOrders(ctx context.Context, q SearchQuery) (SearchPage, error)
	// OrderChanges returns the retained changes of one order, oldest
	// first, without the order (KeysOnly): the versions the feed still
	// holds.
	OrderChanges(ctx context.Context, platform, id string) ([]Change, error)
}

// Search page sizes.
const (
	DefaultSearchLimit = 50
	MaxSearchLimit     = 500
)

// SearchQuery selects orders; every set field narrows the selection.
type SearchQuery struct {
	Platform string
	// Number is the order's number or name as the canonical order has it
	// (Shopify's "#1001"); "1001" also finds "#1001".
	Number string
	// UpdatedFrom and UpdatedTo bound updated_at to [from, to); zero is
	// open.
	UpdatedFrom, UpdatedTo time.Time
	// Status is the platform's status as stored (Order.Status), exact.
	Status string
	// Limit caps the page (0: DefaultSearchLimit; at most MaxSearchLimit).
	Limit int
	// After is the token of the previous page's end (SearchPage.Next).
	After string
}

// SearchPage is one page of SearchOrders.
type SearchPage struct {
	Orders []OrderSummary `json:"orders"`
	// Next is the token of the next page; "" when this page is the last.
	Next string `json:"next,omitempty"`
}

// OrderSummary is a stored order's header: what a search lists, without
// the raw order, the canonical one or lines (orders get reads those).
type OrderSummary struct {
	Platform   string    `json:"platform"`
	ID         string    `json:"id"`
	Number     string    `json:"number,omitempty"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Currency   string    `json:"currency"`
	Total      string    `json:"total"`
	LineCount  int       `json:"line_count"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

// searchKey is where a page ended, in the search's order (updated_at
// descending, then platform, then order id, both descending).
type searchKey struct {
	UpdatedAt int64  `json:"u"` // Unix microseconds
	Platform  string `json:"p"`
	ID        string `json:"i"`
}

// maxSearchToken bounds a token a caller hands back: a key holds a
// platform name and an order id (at most MaxOrderIDBytes).
const maxSearchToken = 4 * MaxOrderIDBytes

func (k searchKey) token() string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseSearchToken(tok string) (*searchKey, error) {
	if tok == "" {
		return nil, nil
	}
	bad := fmt.Errorf("the page token is not one a search returned: %w", ErrBadQuery)
	if len(tok) > maxSearchToken {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, bad
	}
	var k searchKey
	if json.Unmarshal(b, &k) != nil || k.Platform == "" || k.ID == "" {
		return nil, bad
	}
	return &k, nil
}

// checkSearch validates q and fills in its defaults; it returns the
// numbers to match (Number, and "#"+Number when it has no "#") and the
// decoded page key.
func checkSearch(q SearchQuery) (SearchQuery, []string, *searchKey, error) {
	switch {
	case q.Limit < 0:
		return q, nil, nil, fmt.Errorf("limit %d is negative: %w", q.Limit, ErrBadQuery)
	case q.Limit == 0:
		q.Limit = DefaultSearchLimit
	case q.Limit > MaxSearchLimit:
		return q, nil, nil, fmt.Errorf("limit %d is more than %d: %w", q.Limit, MaxSearchLimit, ErrBadQuery)
	}
	if !q.UpdatedFrom.IsZero() && !q.UpdatedTo.IsZero() && !q.UpdatedFrom.Before(q.UpdatedTo) {
		return q, nil, nil, fmt.Errorf("updated from %s is not before to %s: %w",
			q.UpdatedFrom.UTC().Format(time.RFC3339Nano), q.UpdatedTo.UTC().Format(time.RFC3339Nano), ErrBadQuery)
	}
	for _, s := range []struct{ name, v string }{{"platform", q.Platform}, {"number", q.Number}, {"status", q.Status}} {
		if len(s.v) > MaxOrderIDBytes || strings.IndexByte(s.v, 0) >= 0 {
			return q, nil, nil, fmt.Errorf("%s is longer than %d bytes or holds a NUL byte: %w", s.name, MaxOrderIDBytes, ErrBadQuery)
		}
	}
	var numbers []string
	if q.Number != "" {
		numbers = []string{q.Number}
		if !strings.HasPrefix(q.Number, "#") {
			numbers = append(numbers, "#"+q.Number)
		}
	}
	key, err := parseSearchToken(q.After)
	return q, numbers, key, err
}

// searchSQL builds the WHERE clause and arguments of a search; ph returns
// the dialect's n-th placeholder (1-based) and ts a time's column value.
func searchSQL(q SearchQuery, numbers []string, key *searchKey, ph func(int) string, ts func(time.Time) any) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, vals ...any) {
		for range vals {
			cond = strings.Replace(cond, "?", ph(len(args)+1), 1)
			args = append(args, vals[0])
			vals = vals[1:]
		}
		where = append(where, cond)
	}
	if q.Platform != "" {
		add("platform = ?", q.Platform)
	}
	switch len(numbers) {
	case 1:
		add("number = ?", numbers[0])
	case 2:
		add("number IN (?, ?)", numbers[0], numbers[1])
	}
	if q.Status != "" {
		add("status = ?", q.Status)
	}
	if !q.UpdatedFrom.IsZero() {
		add("updated_at >= ?", ts(q.UpdatedFrom))
	}
	if !q.UpdatedTo.IsZero() {
		add("updated_at < ?", ts(q.UpdatedTo))
	}
	if key != nil {
		add("(updated_at, platform, order_id) < (?, ?, ?)", ts(time.UnixMicro(key.UpdatedAt)), key.Platform, key.ID)
	}
	sql := ""
	if len(where) > 0 {
		sql = " WHERE " + strings.Join(where, " AND ")
	}
	return sql, args
}

// finishPage cuts the limit+1 rows read to a page and its next token.
func finishPage(rows []OrderSummary, limit int) SearchPage {
	if len(rows) <= limit {
		return SearchPage{Orders: rows}
	}
	last := rows[limit-1]
	return SearchPage{Orders: rows[:limit], Next: searchKey{UpdatedAt: last.UpdatedAt.UnixMicro(), Platform: last.Platform, ID: last.ID}.token()}
}
