// Package connectors talks to e-commerce platforms. Every platform kind
// implements one small interface: list the orders updated in [From, To), one
// page at a time. Errors are classified so workflows can act on them: rate
// limits wait, transient failures retry, permanent ones go to the dead-letter
// workflow at once.
//
// # Adding a kind
//
// A kind is one spec and one connector, both here:
//
//  1. spec_<kind>.go: a Spec with the kind's name, the defaults its
//     platform documents (page size and its maximum, rate, interval,
//     settle and its minimum), its options type (a struct with yaml tags
//     and a Finish method that fills in defaults and reports problems),
//     its checks, derived tuning and warnings, and its constructor, which
//     gets the options decoded. specs.go registers it: config's kind list,
//     the defaults at load and the checks at load all come from it
//     (config.RegisterKind).
//  2. <kind>.go: the connector.
//
// TestKindsAgree (kinds_test.go) fails unless both agree, and loads a
// platform of every kind through config to build its connector: add the
// kind's fixture to kindFixtures (kindfixtures_test.go) and the shared
// origin, decoding and redaction tests cover it too. docs/connectors.md,
// "Adding a kind", says the same for readers of the docs.
//
// # Shared helpers
//
// By concern: httpclient.go builds a platform's HTTP client and requests,
// httperrors.go classifies failures and statuses into the error types
// below, jsondecode.go decodes pages and orders with byte offsets in
// errors, timewindow.go turns windows and timestamps into a platform's
// formats, order.go holds the Order every kind returns.
package connectors

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// PageRequest asks for one page of orders updated in [From, To).
type PageRequest struct {
	From, To time.Time
	// Token is the opaque next-page token from the previous page; "" for the first.
	Token string
	// PageSize is the number of orders wanted per page.
	PageSize int
	// Page is the 1-based page number, for error messages.
	Page int
	// Meter, when set, paces the requests of platforms that meter them by
	// cost (Shopify's GraphQL Admin API) across every worker; nil paces
	// nothing. The activity supplies it; connectors of other kinds ignore it.
	Meter Meter
	// Progress, when set, keeps this page's partial work between attempts
	// (outside Temporal history: it holds order data), so a retry resumes
	// the page instead of fetching it again. The activity supplies it,
	// keyed by platform, slice, window and token; nil keeps nothing.
	Progress PageProgress
}

// PageProgress is one page's durable scratch space. Load returns nil when
// nothing (or only something expired) is kept.
type PageProgress interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
	Clear(ctx context.Context) error
}

// Meter books a platform's budget of points. A connector books each
// request's estimated cost before sending it, and settles the booking when
// the platform says what the request cost and how full its bucket is.
type Meter interface {
	// Book waits until cost points of budget may be spent, and books them.
	Book(ctx context.Context, budget CostBudget, cost float64) error
	// Settle corrects the bookings: delta points more were spent
	// (negative: refunded), and at least deficit points are missing from
	// the platform's bucket now. It never waits.
	Settle(ctx context.Context, budget CostBudget, delta, deficit float64) error
}

// CostBudget is a platform's bucket of points: at most Capacity, restored
// at Rate points a second.
type CostBudget struct {
	Rate     float64
	Capacity float64
	// UnstatedRate and UnstatedCapacity, when set, bound the bucket until
	// the platform has stated its own to any worker (Shopify's standard
	// bucket until a shop's throttleStatus says otherwise).
	UnstatedRate, UnstatedCapacity float64
}

// Page is one page of results. An empty NextToken means the window is done.
type Page struct {
	Orders    []Order
	NextToken string
	// RateLimit, when the platform reported one (e.g. x-amzn-RateLimit-Limit),
	// is its current requests/s limit; 0 means not reported.
	RateLimit float64
}

// Connector lists one platform account's orders.
type Connector interface {
	ListOrders(ctx context.Context, req PageRequest) (Page, error)
}

// OrderRequest asks for one order by the platform's id for it (the Order.ID
// a page returned), now: `orders refetch`.
type OrderRequest struct {
	ID string
	// Meter paces cost-metered platforms as in PageRequest; nil paces nothing.
	Meter Meter
}

// OrderGetter is a connector that can fetch one order through its
// platform's get-one-order call. The order it returns is the platform's
// current version, in the same form ListOrders returns it.
type OrderGetter interface {
	GetOrder(ctx context.Context, req OrderRequest) (Order, error)
}

// ErrOrderNotFound is wrapped by GetOrder when the platform answers that no
// order has the id (HTTP 404, a null order): retrying cannot find it.
var ErrOrderNotFound = errors.New("no such order")

// GetOrder fetches one order through c's get-one-order call; a connector
// without one is a PermanentError naming its kind.
func GetOrder(ctx context.Context, c Connector, req OrderRequest) (Order, error) {
	if g, ok := c.(OrderGetter); ok {
		return g.GetOrder(ctx, req)
	}
	return Order{}, &PermanentError{Msg: fmt.Sprintf("%T cannot fetch one order", c)}
}

// factory builds a connector for a platform's settings. src serves the
// platform's secret, which the connector asks for per request (source.go),
// so secrets never leave the process that uses them.
type factory func(p config.Platform, src credentials.Source) (Connector, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]factory{}
)

// register makes a connector kind available. It is called from init
// functions; registering a kind twice panics, as that is a programming error.
func register(kind string, f factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("connectors: kind registered twice: " + kind)
	}
	registry[kind] = f
}

// New builds the connector for a platform by its kind. Its errors never
// carry the platform's secret (see redact.go): they end up in Temporal
// history. An {env} or {file} credential is read per request
// (credentials.Static); a {stored} one needs WithStoredCredentials.
func New(p config.Platform, opts ...Option) (Connector, error) {
	registryMu.RLock()
	f, ok := registry[p.Kind]
	registryMu.RUnlock()
	if !ok {
		return nil, &PermanentError{Platform: p.Name, Msg: fmt.Sprintf("no connector for kind %q (have %v)", p.Kind, RegisteredKinds())}
	}
	var o newOptions
	for _, opt := range opts {
		opt(&o)
	}
	src, err := sourceOf(p, o)
	if err != nil {
		return nil, err
	}
	c, err := f(p, src)
	if err != nil {
		return c, redactError(err, secretsReplacer(src.Recent(), nil))
	}
	return redactingConnector{inner: c, src: src, platform: p}, nil
}

// RegisteredKinds lists the kinds with a connector, sorted.
func RegisteredKinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	kinds := make([]string, 0, len(registry))
	for k := range registry {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// RateLimitError is a 429, or a platform's own way of saying the same
// (Shopify GraphQL's THROTTLED): wait RetryAfter (0: unknown) before asking
// again.
type RateLimitError struct {
	Platform   string
	RetryAfter time.Duration
	// Limit is the platform's reported requests/s limit, if any.
	Limit float64
	// Msg says why when it was not a 429.
	Msg string
}

func (e *RateLimitError) Error() string {
	if e.Msg != "" {
		return textclip.Message(fmt.Sprintf("%s: rate limited: %s, retry after %s", e.Platform, e.Msg, e.RetryAfter))
	}
	return textclip.Message(fmt.Sprintf("%s: rate limited (429), retry after %s", e.Platform, e.RetryAfter))
}

// TransientError is a failure worth retrying: 5xx, timeouts, broken connections.
type TransientError struct {
	Platform string
	Msg      string
	Err      error
}

func (e *TransientError) Error() string {
	if e.Err != nil {
		return textclip.Message(fmt.Sprintf("%s: %s: %v", e.Platform, e.Msg, e.Err))
	}
	return textclip.Message(fmt.Sprintf("%s: %s", e.Platform, e.Msg))
}

func (e *TransientError) Unwrap() error { return e.Err }

// PermanentError will not go away by retrying: bad credentials, a rejected
// request (4xx other than 429). Msg carries the platform's own message.
type PermanentError struct {
	Platform string
	Status   int
	Msg      string
}

func (e *PermanentError) Error() string {
	if e.Status != 0 {
		return textclip.Message(fmt.Sprintf("%s: HTTP %d: %s", e.Platform, e.Status, e.Msg))
	}
	return textclip.Message(fmt.Sprintf("%s: %s", e.Platform, e.Msg))
}

// MalformedError is a response that could not be understood. It names the
// platform, the page and where in the body parsing failed. Retrying may help
// (a truncated body), so workflows retry it like a transient error.
type MalformedError struct {
	Platform string
	Page     int
	Offset   int64 // byte offset in the body, -1 if unknown
	Err      error
}

func (e *MalformedError) Error() string {
	if e.Offset >= 0 {
		return textclip.Message(fmt.Sprintf("%s: malformed response on page %d at byte %d: %v", e.Platform, e.Page, e.Offset, e.Err))
	}
	return textclip.Message(fmt.Sprintf("%s: malformed response on page %d: %v", e.Platform, e.Page, e.Err))
}

func (e *MalformedError) Unwrap() error { return e.Err }

// IsPermanent reports whether err must not be retried.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
