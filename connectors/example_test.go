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

// Example lists one page of a simulated shop through the "sim" connector.
// The simulator's seed and clock are fixed, so the page is always the same.
func Example() {
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.Config{
		Seed:          42,
		Shops:         []sim.ShopConfig{{Name: "acme", Token: "acme-secret"}},
		History:       7 * 24 * time.Hour,
		HistoryOrders: 100,
		MaxUpdates:    3,
		UpdateSpread:  48 * time.Hour,
		Late:          2 * time.Minute,
		Clock:         func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	srv, err := s.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// The platform config names the variable holding the token, never the token.
	os.Setenv("EXAMPLE_SIM_ACME_TOKEN", "acme-secret")
	conn, err := connectors.New(config.Platform{
		Name:        "sim-acme",
		Kind:        "sim",
		Endpoint:    srv.ShopURL("acme"),
		Credentials: config.CredentialRef{Env: "EXAMPLE_SIM_ACME_TOKEN"},
		Timeout:     config.Duration(10 * time.Second),
		PageSize:    25,
	})
	if err != nil {
		panic(err)
	}

	page, err := conn.ListOrders(context.Background(), connectors.PageRequest{
		From: now.Add(-24 * time.Hour), To: now, Page: 1,
	})
	if err != nil {
		panic(err)
	}
	first := page.Orders[0]
	fmt.Println("orders on the page:", len(page.Orders))
	fmt.Println("more pages:", page.NextToken != "")
	fmt.Println("first:", first.ID, first.Status, first.Total, first.Currency)
	fmt.Println("updated at:", first.UpdatedAt.Format(time.RFC3339))
	// Output:
	// orders on the page: 25
	// more pages: true
	// first: 1000000079 pending 638.43 GBP
	// updated at: 2026-01-14T12:36:29Z
}
