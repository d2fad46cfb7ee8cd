package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
)

func newOrdersCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "orders",
		Short: "Order operations: get one order, search stored orders, refetch orders now",
		Long: `Order operations on the store and the platforms:

  get P ID        one stored order: canonical form, lines, the versions the
                  change feed still holds, and per destination whether the
                  current version was delivered, set aside or is pending
  search          stored orders by platform, number, status and updated range,
                  newest first, a page at a time
  refetch P ID... fetch orders now through the platform's get-one-order call,
                  ahead of backfill work and inside the platform's rate limit

The same operations are served by ` + "`ordersync serve`" + ` under /v1/orders
(docs/openapi.yaml). docs/orders.md, "Order operations", has the details.`,
		Example: "  ordersync orders get shopify-acme 5123456789\n" +
			"  ordersync orders search --platform shopify-acme --number 1001\n" +
			"  ordersync orders refetch shopify-acme 5123456789 5123456790",
	}
	cmd.AddCommand(newOrdersGetCommand(app), newOrdersSearchCommand(app), newOrdersRefetchCommand(app))
	return cmd
}

// serveOrders is the order operations of `serve`: its own store handle,
// the Temporal connection serve already holds.
func (a *App) serveOrders(ctx context.Context, c client.Client) (*orderops.Service, func(), error) {
	svc, done, err := a.orderService(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	svc.Temporal = c
	return svc, done, nil
}

// orderService opens what the order operations read: the store (orders,
// feed, registry) and, when withTemporal, a Temporal connection.
func (a *App) orderService(ctx context.Context, withTemporal bool) (*orderops.Service, func(), error) {
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	svc := &orderops.Service{Store: st}
	if reg, ok := registryOf(st); ok {
		svc.Registry = reg
	}
	if !withTemporal {
		return svc, func() { _ = st.Close() }, nil
	}
	c, err := a.Dial(ctx)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	svc.Temporal = c
	return svc, func() { c.Close(); _ = st.Close() }, nil
}

// ordersArgs makes a wrong number of arguments a usage error (exit 2),
// as the exit codes footer says.
func ordersArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return Usage(err)
		}
		return nil
	}
}
