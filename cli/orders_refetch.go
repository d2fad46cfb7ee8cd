package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/orderops"
)

func newOrdersRefetchCommand(app *App) *cobra.Command {
	var priority int
	var noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "refetch PLATFORM ORDER_ID...",
		Short: "Fetch orders now through the platform's get-one-order call, ahead of backfill",
		Long: `Fetches each order now through its platform's get-one-order call (Shopify
order(id:), Amazon getOrder, eBay getOrder, WooCommerce GET /orders/<id>,
http options.get.path, the simulator's GET /orders/<id>) and stores it like
any fetched version: the newest version wins, the change feed gets a change
when it is new, and every destination receives it. No watermark moves, and a
paused platform can be refetched (pausing stops polling, not requests).

Each order is one Refetch workflow, ID refetch/<platform>/<order id>: a
refetch of an order already in flight joins it instead of calling the
platform again. It runs on the platform's task queue with Temporal task
priority --priority (1 first .. 5 last; backfill and every other task run
at 3, so the default 2 passes queued backfill work), and books the
platform's request slots (and Shopify's query points) like every page, so
it never exceeds the account's rate limit; when the rate is booked out it
waits on a timer, up to the platform's rate_limit_wait.

By default it waits for the results (at most --timeout) and prints per
order: stored new version (created or updated), unchanged, not found
(the platform has no such order), rejected (the platform's order cannot be
stored), or failed with the reason. --no-wait prints the workflow IDs and
returns at once; the workflows run on.

Exit status 1 when an order was not found, rejected, failed, or still
running when --timeout ended.`,
		Example: "  ordersync orders refetch shopify-acme 5123456789\n" +
			"  ordersync orders refetch amazon-eu 028-1234567-1234567 028-7654321-7654321 --priority 1\n" +
			"  ordersync orders refetch sim-acme 1000000042 --no-wait -o json",
		Args: ordersArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if priority < api.RefetchMinPriority || priority > api.RefetchMaxPriority {
				return Usage(fmt.Errorf("--priority %d: want %d (first) to %d (last); backfill runs at %d", priority, api.RefetchMinPriority, api.RefetchMaxPriority, api.BackfillPriority))
			}
			if len(args)-1 > orderops.MaxRefetchIDs {
				return Usage(fmt.Errorf("%d order ids: at most %d in one refetch", len(args)-1, orderops.MaxRefetchIDs))
			}
			ctx := cmd.Context()
			svc, done, err := app.orderService(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			rs, err := svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: args[0], IDs: args[1:], Priority: priority})
			if errors.Is(err, orderops.ErrBadRequest) || errors.Is(err, orderops.ErrUnknownPlatform) {
				return Usage(err)
			}
			if err != nil {
				return err
			}
			if !noWait {
				wctx, cancel := context.WithTimeout(ctx, timeout)
				svc.Wait(wctx, rs)
				cancel()
			}
			if err := printRefetches(app, args[0], rs); err != nil {
				return err
			}
			if bad := refetchTrouble(rs, !noWait); bad > 0 {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d of %d order(s) not refetched (see above)", bad, len(rs))}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&priority, "priority", api.RefetchDefaultPriority, "Temporal task priority, 1 (first) to 5 (last); backfill runs at 3")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "start the refetches and return without waiting for their results")
	durationDaysVar(cmd.Flags(), &timeout, "timeout", 2*time.Minute, "how long to wait for the results")
	return cmd
}

// refetchText is what a person reads for an outcome.
func refetchText(r orderops.Refetch) string {
	switch r.Outcome {
	case api.RefetchCreated:
		return "stored new version (new order)"
	case api.RefetchUpdated:
		return "stored new version"
	case api.RefetchUnchanged:
		return "unchanged (the stored version is the platform's)"
	case api.RefetchNotFound:
		return "not found: the platform has no order with this id"
	case api.RefetchRejected:
		return "rejected: " + r.Error
	case api.RefetchFutureStamped:
		return "not stored: the platform's version is stamped in the future"
	case orderops.Failed:
		return "failed: " + r.Error
	}
	return "running (workflow " + r.WorkflowID + ")"
}

// refetchTrouble counts the orders that did not end stored or unchanged;
// running ones count only when the caller waited.
func refetchTrouble(rs []orderops.Refetch, waited bool) int {
	n := 0
	for _, r := range rs {
		switch r.Outcome {
		case api.RefetchCreated, api.RefetchUpdated, api.RefetchUnchanged:
		case orderops.Running:
			if waited {
				n++
			}
		default:
			n++
		}
	}
	return n
}

func printRefetches(app *App, platform string, rs []orderops.Refetch) error {
	if app.Output == "json" {
		enc := json.NewEncoder(app.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"platform": platform, "orders": rs})
	}
	tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tRESULT")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\n", term(clipText(r.OrderID, 80)), term(clipText(refetchText(r), 200)))
	}
	return tw.Flush()
}
