// Package feed reads the store's change feed from Go: every order version
// the store accepted, in commit order, each with its order and lines.
//
// A reader keeps the Seq of the last change it handled and resumes after
// it; the store hands out Seqs in commit order on both backends, so a
// reader that resumes never skips a change committed later under a smaller
// Seq (see store/doc.go, "Change feed"). Delivery is therefore
// at-least-once from the reader's point of view: a reader that crashes
// after handling a change but before saving its Seq sees the change again.
//
//	err := feed.Follow(ctx, st, feed.Options{After: saved}, func(c store.Change) error {
//		process(c)
//		saved = c.Seq
//		return nil
//	})
package feed

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/store"
)

// DefaultPoll is how long Follow waits before asking again when the feed
// had nothing new.
const DefaultPoll = time.Second

// Options say where to start and how to read.
type Options struct {
	// After is the last Seq already handled; 0 reads from the beginning of
	// what is retained.
	After int64
	// Platform keeps one platform's changes; "" keeps all.
	Platform string
	// Batch is how many changes one read fetches; 0: store.DefaultChangeLimit.
	Batch int
	// Follow keeps waiting for new changes once the feed is drained;
	// without it Follow returns nil at the end of the feed.
	Follow bool
	// Poll is the wait between reads of a drained feed; 0: DefaultPoll.
	Poll time.Duration
}

// Follow calls handle for every change after opts.After, in Seq order,
// until the feed is drained (or, with opts.Follow, until ctx ends or
// handle fails). An error from handle stops it and is returned as is.
func Follow(ctx context.Context, src store.Feed, opts Options, handle func(store.Change) error) error {
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	after := opts.After
	for {
		page, err := src.Changes(ctx, store.ChangeQuery{After: after, Limit: opts.Batch, Platform: opts.Platform})
		if err != nil {
			return fmt.Errorf("follow the change feed after %d: %w", after, err)
		}
		for _, c := range page {
			if err := handle(c); err != nil {
				return err
			}
			after = c.Seq
		}
		if len(page) > 0 {
			continue
		}
		if !opts.Follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
