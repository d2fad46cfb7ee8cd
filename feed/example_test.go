package feed_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/feed"
	"github.com/ordersync/ordersync/store"
)

// A reader handles every accepted change once, then resumes after the last
// Seq it saved: an older version arriving late appends nothing.
func ExampleFollow() {
	dir, err := os.MkdirTemp("", "ordersync-feed-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	order := func(status string, day int) connectors.Order {
		return connectors.Order{Platform: "shopify", ID: "1001", Status: status, Currency: "EUR", Total: "19.90",
			CreatedAt: time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2024, 5, day, 9, 0, 0, 0, time.UTC)}
	}
	var saved int64
	print := func(c store.Change) error {
		fmt.Printf("%d %s %s/%s %s\n", c.Seq, c.Kind, c.Platform, c.OrderID, c.Order.Status)
		saved = c.Seq
		return nil
	}
	for _, o := range []connectors.Order{order("paid", 1), order("shipped", 2)} {
		if _, err := st.UpsertOrders(ctx, []connectors.Order{o}); err != nil {
			log.Fatal(err)
		}
	}
	if err := feed.Follow(ctx, st, feed.Options{After: saved}, print); err != nil {
		log.Fatal(err)
	}
	// A late, older copy is not a change; a newer one is.
	for _, o := range []connectors.Order{order("paid", 1), order("delivered", 3)} {
		if _, err := st.UpsertOrders(ctx, []connectors.Order{o}); err != nil {
			log.Fatal(err)
		}
	}
	if err := feed.Follow(ctx, st, feed.Options{After: saved}, print); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 created shopify/1001 shipped
	// 2 updated shopify/1001 shipped
	// 3 updated shopify/1001 delivered
}
