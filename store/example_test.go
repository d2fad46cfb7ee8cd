package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// An older version arriving after a newer one is counted as Unchanged and
// never overwrites it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ordersync-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	newer := connectors.Order{
		Platform:  "shopify",
		ID:        "1001",
		Status:    "shipped",
		CreatedAt: time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2024, 5, 2, 9, 0, 0, 0, time.UTC),
		Currency:  "EUR",
		Total:     "19.90",
		LineCount: 2,
	}
	older := newer
	older.Status = "paid"
	older.UpdatedAt = time.Date(2024, 5, 1, 9, 5, 0, 0, time.UTC)

	for _, o := range []connectors.Order{newer, older} {
		res, err := s.UpsertOrders(ctx, []connectors.Order{o})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("upsert %s: %+v\n", o.Status, res)
	}
	got, _, err := s.GetOrder(ctx, "shopify", "1001")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", got.Status, got.Total, got.UpdatedAt.Format(time.RFC3339))
	// Output:
	// upsert shipped: {Inserted:1 Updated:0 Unchanged:0 Rejected:[]}
	// upsert paid: {Inserted:0 Updated:0 Unchanged:1 Rejected:[]}
	// stored: shipped 19.90 2024-05-02T09:00:00Z
}

// Lines follow their order's version: a newer version with lines replaces
// them all, and a newer version listed without lines (HasLines false)
// keeps the stored ones.
func ExampleOpen_lines() {
	dir, err := os.MkdirTemp("", "ordersync-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	placed := connectors.Order{Platform: "shopify", ID: "1001", Status: "paid", UpdatedAt: at, Currency: "EUR", Total: "25.00",
		LineCount: 2, HasLines: true, Lines: []connectors.OrderLine{
			{ID: "11", SKU: "MUG", Title: "Espresso Cup", Quantity: 2, UnitPrice: "7.50", Currency: "EUR"},
			{ID: "12", SKU: "TEA", Title: "Tea Sampler", Quantity: 1, UnitPrice: "10.00", Currency: "EUR"},
		}}
	edited := placed
	edited.UpdatedAt, edited.Total, edited.LineCount = at.Add(time.Hour), "15.00", 1
	edited.Lines = placed.Lines[:1]
	shipped := edited
	shipped.UpdatedAt, shipped.Status, shipped.HasLines, shipped.Lines = at.Add(2*time.Hour), "shipped", false, nil

	for _, o := range []connectors.Order{placed, edited, shipped} {
		if _, err := s.UpsertOrders(ctx, []connectors.Order{o}); err != nil {
			log.Fatal(err)
		}
		got, _, err := s.GetOrder(ctx, "shopify", "1001")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s: %d lines\n", got.Status, got.Total, len(got.Lines))
	}
	// Output:
	// paid 25.00: 2 lines
	// paid 15.00: 1 lines
	// shipped 15.00: 1 lines
}
