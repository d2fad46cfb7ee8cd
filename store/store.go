package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync/order"
)

// DefaultSQLitePath is where the product keeps its SQLite store when no DSN
// is configured.
const DefaultSQLitePath = ".ordersync/orders.db"

// DefaultDSN is DefaultSQLitePath in DSN form, suitable for Open.
const DefaultDSN = "sqlite://" + DefaultSQLitePath

// ErrInvalidOrder is wrapped by UpsertOrders when an order in the batch
// cannot be stored (CheckOrder: empty platform or id, zero updated_at, an
// id too long, text with a NUL byte or not UTF-8, lines that CheckLines
// refuses).
var ErrInvalidOrder = errors.New("invalid order")

// Store persists the newest known version of every order.
type Store interface {
	// UpsertOrders applies one batch in one transaction.
	UpsertOrders(ctx context.Context, orders []order.Order) (UpsertResult, error)
	// GetOrder returns the stored order with its lines in position order
	// (HasLines when a version with lines was stored); ok is false when
	// the order is unknown.
	GetOrder(ctx context.Context, platform, id string) (StoredOrder, bool, error)
	// OrderVersions returns id -> stored updated_at for one platform (for verify).
	OrderVersions(ctx context.Context, platform string) (map[string]time.Time, error)
	// OrderLines returns every order of one platform with its stored
	// updated_at and lines, read in one statement so each order's lines
	// belong to the version beside them (for verify).
	OrderLines(ctx context.Context, platform string) (map[string]StoredLines, error)
	// CountOrders counts the orders of one platform, or of all platforms
	// when platform is empty.
	CountOrders(ctx context.Context, platform string) (int, error)
	// Reconciliation counts windows for count reconciliation (reconcile.go).
	Reconciliation
	// Feed is the change feed UpsertOrders appends to.
	Feed
	// OrderSearch finds orders and an order's changes (search.go).
	OrderSearch
	// Webhooks logs the platform webhooks serve accepted (webhooks.go).
	Webhooks
	// Close releases the database handle.
	Close() error
}

// UpsertResult counts what one UpsertOrders call did. Every order in the
// batch lands in exactly one bucket, so Inserted, Updated, Unchanged and
// len(Rejected) always sum to the batch length.
type UpsertResult struct {
	Inserted, Updated, Unchanged int
	// Rejected are orders the database refused alone although CheckOrder
	// passed them (PostgreSQL only, a backstop: CheckOrder is meant to
	// catch everything first); the rest of the batch is stored.
	Rejected []RejectedOrder
}

// RejectedOrder is one order the database refused, and why (the
// database's code and message, never the order's content).
type RejectedOrder struct {
	Platform, ID, Reason string
}

// StoredOrder is an order as stored, with the store's own bookkeeping.
type StoredOrder struct {
	order.Order
	// FirstSeenAt is when the store first received the order (set once).
	FirstSeenAt time.Time
	// LastSeenAt is when any version of the order was last received, even
	// one that changed nothing.
	LastSeenAt time.Time
}

// Open opens (creating if needed) the store named by dsn and applies pending
// schema migrations:
//
//	sqlite:///abs/path/orders.db, sqlite://rel/path.db, or a plain path ending in .db -> SQLite
//	postgres://... or postgresql://...                                          -> PostgreSQL
func Open(ctx context.Context, dsn string, opts ...Option) (Store, error) {
	backend, target, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	o := options{futureSkew: DefaultFutureSkew}
	for _, opt := range opts {
		opt(&o)
	}
	if backend == BackendSQLite {
		return openSQLite(ctx, target, o)
	}
	return openPostgres(ctx, target, o)
}

// DefaultFutureSkew is how far ahead of the store's clock a stored
// updated_at may lie and still count as the newest version.
const DefaultFutureSkew = 5 * time.Minute

// Option adjusts a store at Open.
type Option func(*options)

type options struct {
	futureSkew time.Duration
}

// WithFutureSkew sets how far ahead of now a stored version may be stamped
// and still block older incoming versions. A version stamped further ahead
// is a platform's clock gone wrong (an updated_at in 2999), and it must not
// pin the order forever: any incoming version replaces it. Zero or negative
// keeps DefaultFutureSkew. Give the FetchPage activity the same value.
func WithFutureSkew(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.futureSkew = d
		}
	}
}

// Backends a DSN can name.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// ParseDSN says which backend a DSN names and what to open: the file path
// for SQLite, the whole DSN for PostgreSQL. Other packages that keep tables
// in the same database (the request slots) use it too.
func ParseDSN(dsn string) (backend, target string, err error) {
	scheme, rest, hasScheme := strings.Cut(dsn, "://")
	switch {
	case hasScheme && strings.EqualFold(scheme, "sqlite"):
		return BackendSQLite, rest, nil
	case hasScheme && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")):
		return BackendPostgres, dsn, nil
	case !hasScheme && strings.HasSuffix(dsn, ".db"):
		return BackendSQLite, dsn, nil
	case !hasScheme:
		return "", "", fmt.Errorf("DSN %q has no scheme and is not a path ending in .db (want sqlite://PATH, PATH.db, postgres://... or postgresql://...)", dsn)
	default:
		// Name only the scheme: the rest may hold a password.
		return "", "", fmt.Errorf("unsupported DSN scheme %q (want sqlite://, postgres:// or postgresql://, or a path ending in .db)", scheme)
	}
}

// normalize puts an order in the form both backends store: UTC times cut
// to microseconds (PostgreSQL's precision, so both backends compare alike)
// and nil for empty Raw and empty Lines.
func normalize(o order.Order) order.Order {
	o.CreatedAt = toMicros(o.CreatedAt)
	o.UpdatedAt = toMicros(o.UpdatedAt)
	if len(o.Raw) == 0 {
		o.Raw = nil
	}
	if len(o.Lines) == 0 {
		o.Lines = nil
	}
	return o
}

func toMicros(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// validate rejects the whole batch if any order cannot be stored
// (CheckOrder). The FetchPage activity screens each order with CheckOrder
// first, so a bad order is rejected alone there and never reaches here.
func validate(orders []order.Order) error {
	for i, o := range orders {
		if err := CheckOrder(o); err != nil {
			return fmt.Errorf("order %d (platform %q, id %q): %v: %w", i, clipID(o.Platform), clipID(o.ID), err, ErrInvalidOrder)
		}
	}
	return nil
}

// row is one order of a batch as the store writes it: normalized, with
// the digest of its lines (nil when the version carries none).
type row struct {
	order.Order
	digest []byte
	// canonical is Order.Canonical as stored (JSON; nil without one) and
	// number its Number.
	canonical []byte
	number    string
}

// sameContent reports whether the incoming version carries the same data
// as the stored one apart from updated_at. Lines count only when the
// incoming version has them: one without lines keeps the stored lines, so
// it changes nothing there.
func sameContent(stored claimResult, in row) bool {
	a, b := stored.stored, in.Order
	return a.Status == b.Status &&
		a.Total == b.Total &&
		a.Currency == b.Currency &&
		a.LineCount == b.LineCount &&
		a.CreatedAt.Equal(b.CreatedAt) &&
		string(a.Raw) == string(b.Raw) &&
		sameLines(stored.digest, in.digest)
}

// decide applies the no-regression rule to one incoming version against
// the stored one: whether to overwrite, and which bucket it counts in. A
// stored version stamped after horizon (now plus the allowed skew) claims a
// time that has not come yet; it is not trusted to be newest, so any
// different incoming version replaces it and a pinned order heals.
func decide(stored claimResult, in row, horizon time.Time) (overwrite bool, updated bool) {
	s, incoming := stored.stored, in.Order
	switch {
	case s.UpdatedAt.After(horizon) && !(incoming.UpdatedAt.Equal(s.UpdatedAt) && sameContent(stored, in)):
		return true, true
	case incoming.UpdatedAt.Before(s.UpdatedAt):
		return false, false // older: ignored, never overwrites
	case incoming.UpdatedAt.After(s.UpdatedAt):
		return true, true
	case sameContent(stored, in):
		return false, false
	default:
		return true, true // same updated_at, different data (or lines): the platform changed it without bumping the clock
	}
}

// claimResult is what a backend reports for one order of a round.
type claimResult struct {
	inserted bool        // the key was new and the order was inserted as is
	stored   order.Order // the version stored before this order (when !inserted), without lines
	digest   []byte      // its lines_digest: nil when no version with lines was stored
}

// batchOps is what a backend implements so applyBatch can run the shared
// counting logic. Every call happens inside the batch's transaction.
type batchOps interface {
	// claim inserts each order whose key is absent (with its lines_digest,
	// not its lines); for the others it bumps last_seen_at, locks the row
	// and returns the stored version and digest. Orders in one call have
	// distinct keys and come sorted by key, so every transaction locks rows
	// in the same order and cannot deadlock.
	claim(ctx context.Context, orders []row, now time.Time) ([]claimResult, error)
	// overwrite replaces the content of rows that claim already locked;
	// lines_digest only where the incoming version has lines.
	overwrite(ctx context.Context, orders []row, now time.Time) error
	// replaceLines deletes all stored lines of each order (all of them have
	// lines, and claim locked their rows) and inserts the order's lines.
	replaceLines(ctx context.Context, orders []row) error
	// appendChanges appends the batch's accepted versions to the change
	// feed, numbered in slice order. It is the transaction's last step, so
	// PostgreSQL's counter lock is held only until the commit that follows.
	appendChanges(ctx context.Context, changes []pendingChange, now time.Time) error
}

// pendingChange is one accepted version, before the feed numbers it.
type pendingChange struct {
	platform, orderID string
	updatedAt         time.Time
	kind              ChangeKind
}

// applyBatch runs the no-regression upsert of a validated batch; horizon is
// passed on to decide.
//
// Duplicates of one key inside a batch are applied in batch order, each
// counted on its own against the state left by the previous one: the same
// new order sent twice counts 1 Inserted + 1 Unchanged, a new order followed
// by a newer version of it 1 Inserted + 1 Updated. To keep this while
// processing in key order, the batch is split into rounds: round r holds the
// r-th occurrence of every key, and rounds run one after another.
//
// Lines follow their order's version: a version that is inserted or wins
// and has lines replaces all stored lines of its order; one that does not
// win leaves them untouched, and one that wins without lines keeps them.
func applyBatch(ctx context.Context, ops batchOps, orders []order.Order, now, horizon time.Time) (UpsertResult, error) {
	var res UpsertResult
	var changes []pendingChange
	accept := func(o row, kind ChangeKind) {
		changes = append(changes, pendingChange{platform: o.Platform, orderID: o.ID, updatedAt: o.UpdatedAt, kind: kind})
	}
	for r, round := range splitRounds(orders) {
		claims, err := ops.claim(ctx, round, now)
		if err != nil {
			return UpsertResult{}, err
		}
		var toWrite, linesToWrite []row
		for i, c := range claims {
			if c.inserted && r == 0 {
				res.Inserted++
				accept(round[i], ChangeCreated)
				if round[i].HasLines {
					linesToWrite = append(linesToWrite, round[i])
				}
				continue
			}
			overwrite, updated := decide(c, round[i], horizon)
			if overwrite {
				accept(round[i], ChangeUpdated)
				toWrite = append(toWrite, round[i])
				if round[i].HasLines {
					linesToWrite = append(linesToWrite, round[i])
				}
			}
			if updated {
				res.Updated++
			} else {
				res.Unchanged++
			}
		}
		if len(toWrite) > 0 {
			if err := ops.overwrite(ctx, toWrite, now); err != nil {
				return UpsertResult{}, err
			}
		}
		if len(linesToWrite) > 0 {
			if err := ops.replaceLines(ctx, linesToWrite); err != nil {
				return UpsertResult{}, err
			}
		}
	}
	if len(changes) > 0 {
		if err := ops.appendChanges(ctx, changes, now); err != nil {
			return UpsertResult{}, err
		}
	}
	return res, nil
}

// splitRounds normalizes the orders and groups them as applyBatch needs:
// round r holds the r-th occurrence of each key, sorted by key (byte order).
func splitRounds(orders []order.Order) [][]row {
	type key struct{ platform, id string }
	seen := make(map[key]int, len(orders))
	var rounds [][]row
	for _, o := range orders {
		k := key{o.Platform, o.ID}
		r := seen[k]
		seen[k] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		canonical, number := canonicalColumns(o)
		rounds[r] = append(rounds[r], row{Order: normalize(o), digest: linesDigest(o), canonical: canonical, number: number})
	}
	for _, round := range rounds {
		sortByKey(round)
	}
	return rounds
}

// sortByKey orders by (platform, id) in byte order, the lock order shared by
// all transactions.
func sortByKey(orders []row) {
	slices.SortFunc(orders, func(a, b row) int {
		return cmp.Or(strings.Compare(a.Platform, b.Platform), strings.Compare(a.ID, b.ID))
	})
}

// addStoredLine records one row of the join of orders and order_lines
// that OrderLines reads in (order, position) order: the order's version,
// whether it has lines, and one line (nil for an order without any).
func addStoredLine(out map[string]StoredLines, id string, updated time.Time, hasLines bool, line *order.Line) {
	sl, ok := out[id]
	if !ok {
		sl = StoredLines{UpdatedAt: updated, HasLines: hasLines}
	}
	if line != nil {
		sl.Lines = append(sl.Lines, *line)
	}
	out[id] = sl
}

// canonicalColumns encodes an order's canonical form for its column, and
// its number for the index. An order whose canonical form cannot be
// encoded is stored without one rather than refused: the raw order is the
// record.
func canonicalColumns(o order.Order) ([]byte, string) {
	if o.Canonical == nil {
		return nil, ""
	}
	b, err := json.Marshal(o.Canonical)
	if err != nil {
		return nil, ""
	}
	return b, o.Canonical.Number
}

// decodeCanonical reads a canonical column; a value that does not decode
// (written by hand, or by a newer version) reads as none.
func decodeCanonical(b []byte) *order.Canonical {
	if len(b) == 0 {
		return nil
	}
	var c order.Canonical
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return &c
}
