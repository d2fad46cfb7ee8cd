package connectors_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// Example_httpKind adds a platform without writing Go: the declarative
// "http" kind, told in YAML how the simulator's API works, lists the same
// page as the "sim" connector in Example.
func Example_httpKind() {
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.Config{
		Seed: 42, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-secret"}},
		History: 7 * 24 * time.Hour, HistoryOrders: 100, MaxUpdates: 3, UpdateSpread: 48 * time.Hour,
		Late: 2 * time.Minute, Clock: func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	srv, err := s.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	os.Setenv("EXAMPLE_HTTP_ACME_TOKEN", "acme-secret")
	file, err := config.Parse(fmt.Appendf(nil, `
platforms:
  acme-api:
    kind: http
    endpoint: %s
    credentials: {env: EXAMPLE_HTTP_ACME_TOKEN}
    page_size: 25
    options:
      path: /orders
      auth: {type: bearer}
      window: {from_param: updated_from, to_param: updated_to, format: rfc3339nano}
      page_size_param: limit
      pagination: {style: cursor, token_param: page_token, token_path: next_page_token}
      records_path: orders
      fields: {id: id, updated_at: updated_at, status: status, currency: currency, total: total}
      lines: {path: line_items, sku: sku, title: title, quantity: qty, unit_price: price}
`, srv.ShopURL("acme")))
	if err != nil {
		panic(err)
	}
	p, _ := file.Get("acme-api")
	conn, err := connectors.New(p)
	if err != nil {
		panic(err)
	}
	page, err := conn.ListOrders(context.Background(), connectors.PageRequest{From: now.Add(-24 * time.Hour), To: now, Page: 1})
	if err != nil {
		panic(err)
	}
	first := page.Orders[0]
	fmt.Println("orders on the page:", len(page.Orders))
	fmt.Println("more pages:", page.NextToken != "")
	fmt.Println("first:", first.ID, first.Status, first.Total, first.Currency)
	fmt.Println("updated at:", first.UpdatedAt.Format(time.RFC3339))
	for _, l := range first.Lines {
		fmt.Printf("line %s: %d x %s %s at %s %s\n", l.ID, l.Quantity, l.SKU, l.Title, l.UnitPrice, l.Currency)
	}
	// Output:
	// orders on the page: 25
	// more pages: true
	// first: 1000000079 pending 638.43 GBP
	// updated at: 2026-01-14T12:36:29Z
	// line 1: 2 x SKU-3563 Trail Shoes at 165.79 GBP
	// line 2: 3 x SKU-6538 Water Bottle at 49.74 GBP
	// line 3: 1 x SKU-7864 Desk Lamp at 157.63 GBP
}
