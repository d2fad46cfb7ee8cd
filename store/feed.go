package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/order"
)

// ChangeKind says whether a change created an order or replaced its version.
type ChangeKind string

// The kinds of change the feed records.
const (
	// ChangeCreated: the store did not know the order.
	ChangeCreated ChangeKind = "created"
	// ChangeUpdated: a newer version, or one with the same updated_at and
	// other content (lines included), replaced the stored one.
	ChangeUpdated ChangeKind = "updated"
)

// Change is one entry of the change feed: an order version the store
// accepted, numbered in commit order.
type Change struct {
	// Seq only grows; a reader resumes after the last Seq it handled.
	Seq      int64      `json:"seq"`
	Platform string     `json:"platform"`
	OrderID  string     `json:"order_id"`
	Kind     ChangeKind `json:"kind"`
	// UpdatedAt is the updated_at of the version this change accepted.
	UpdatedAt time.Time `json:"updated_at"`
	// CommittedAt is when the store accepted it.
	CommittedAt time.Time `json:"committed_at"`
	// Order is the order as stored when the change was read, with its
	// lines: the version this change accepted or, when a newer one has been
	// accepted since (a later change), that newer one. A reader therefore
	// never sees an order go back to an older version.
	Order StoredOrder `json:"order"`
}

// ChangeQuery selects changes from the feed.
type ChangeQuery struct {
	// After is the last Seq already handled; 0 reads from the start.
	After int64
	// Limit caps how many changes one call returns; 0 or less means
	// DefaultChangeLimit.
	Limit int
	// Platform keeps only one platform's changes; "" keeps all.
	Platform string
	// Seqs, when not empty, keeps only these seqs (a delivery lane's
	// batch, which skips the other lanes' changes of its range).
	Seqs []int64
	// KeysOnly leaves each change's Order empty: listing what to deliver
	// needs seqs and order ids, not the orders.
	KeysOnly bool
}

// DefaultChangeLimit is how many changes Changes returns when the query
// does not say.
const DefaultChangeLimit = 500

// maxQuerySeqs bounds ChangeQuery.Seqs: a delivery batch holds at most
// 1,000 changes.
const maxQuerySeqs = 10000

// FeedHead says where the feed stands.
type FeedHead struct {
	// LastSeq is the newest Seq ever handed out (0 for an empty feed); it
	// does not go back when compaction removes changes.
	LastSeq int64 `json:"last_seq"`
	// Retained counts the changes still held.
	Retained int64 `json:"retained"`
}

// Feed is the change feed every Store keeps: UpsertOrders appends to it in
// the same transaction and nothing else writes it. See the package doc.
type Feed interface {
	// Changes returns changes with Seq > q.After in Seq order, at most
	// q.Limit of them, each with its order and lines.
	Changes(ctx context.Context, q ChangeQuery) ([]Change, error)
	// CountChanges counts the retained changes with after < Seq <= upTo of
	// one platform ("" for all).
	CountChanges(ctx context.Context, platform string, after, upTo int64) (int64, error)
	// CountChangesCommittedBefore counts the retained changes of one
	// platform ("" for all) with Seq > after that the store committed
	// before before: what a consumer at after has overdue by a cutoff.
	CountChangesCommittedBefore(ctx context.Context, platform string, after int64, before time.Time) (int64, error)
	// Head reports the newest Seq and how many changes are retained.
	Head(ctx context.Context) (FeedHead, error)
	// AckChanges records that consumer (a destination) has every change up
	// to seq; an older seq than the recorded one changes nothing.
	AckChanges(ctx context.Context, consumer string, seq int64) error
	// Acks returns each known consumer's acknowledged Seq.
	Acks(ctx context.Context) (map[string]int64, error)
	// ReleaseConsumer forgets a consumer (a removed destination): its
	// acknowledged Seq no longer holds compaction back. It reports whether
	// the consumer was known. An AckChanges afterwards records it anew.
	ReleaseConsumer(ctx context.Context, consumer string) (bool, error)
	// CompactChanges removes changes committed before c.Before that every
	// consumer has acknowledged, and returns how many it removed.
	CompactChanges(ctx context.Context, c Compaction) (int64, error)
}

// Compaction says which changes CompactChanges may remove.
type Compaction struct {
	// Before: only changes committed earlier than this go (now minus the
	// retention).
	Before time.Time
	// Consumers are the configured destinations. One that has never
	// acknowledged anything holds every change: its Delivery workflow may
	// not have started yet.
	Consumers []string
}

// ErrBadQuery is wrapped by feed calls given an impossible argument.
var ErrBadQuery = errors.New("bad feed query")

func (q ChangeQuery) check() (ChangeQuery, error) {
	if q.After < 0 {
		return q, fmt.Errorf("after %d is negative: %w", q.After, ErrBadQuery)
	}
	if q.Limit <= 0 {
		q.Limit = DefaultChangeLimit
	}
	if len(q.Seqs) > maxQuerySeqs {
		return q, fmt.Errorf("%d seqs in one query, at most %d: %w", len(q.Seqs), maxQuerySeqs, ErrBadQuery)
	}
	return q, nil
}

// compactUpTo is the highest Seq compaction may remove: the lowest
// acknowledged Seq among the consumers, 0 when one has acknowledged
// nothing. With no consumer at all, retention alone decides.
func compactUpTo(acks map[string]int64, consumers []string, head int64) int64 {
	upTo := head
	for _, name := range consumers {
		upTo = min(upTo, acks[name]) // absent: 0
	}
	for _, seq := range acks {
		upTo = min(upTo, seq)
	}
	return upTo
}

// changeRows gathers the rows of the changes-orders-lines join (in seq,
// position order) into changes.
type changeRows struct{ out []Change }

func (c *changeRows) add(ch Change, line *order.Line) {
	if n := len(c.out); n == 0 || c.out[n-1].Seq != ch.Seq {
		c.out = append(c.out, ch)
	}
	if line != nil {
		last := &c.out[len(c.out)-1]
		last.Order.Lines = append(last.Order.Lines, *line)
	}
}
