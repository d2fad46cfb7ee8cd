package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
)

func newOrdersSearchCommand(app *App) *cobra.Command {
	var q store.SearchQuery
	var from, to string
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Search stored orders by platform, number, status and updated range, a page at a time",
		Long: `Lists stored orders, newest updated_at first, a page at a time (--limit,
default 50, at most 500). Every flag narrows the search:

  --platform   one platform's orders
  --number     the order's number or name as the canonical order has it
               (Shopify's "#1001"; 1001 finds #1001 too)
  --status     the platform's status as stored, exactly (the STATUS column)
  --from/--to  updated_at in [from, to): RFC3339, or relative to now with
               Go's units and days (-6h, -2d)

When more orders match, the last line says so with the token of the next
page: pass it as --after. Pages are cut by a key (updated_at, platform, id),
not an offset, so orders stored between two pages shift nothing.`,
		Example: "  ordersync orders search --platform shopify-acme --number 1001\n" +
			"  ordersync orders search --platform sim-acme --from -2d --status paid\n" +
			"  ordersync orders search --from 2026-11-20T00:00:00Z --to 2026-11-21T00:00:00Z -o json --after eyJ1Ijo...",
		Args: ordersArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			var err error
			if from != "" {
				if q.UpdatedFrom, err = parseTime("from", from, now); err != nil {
					return err
				}
			}
			if to != "" {
				if q.UpdatedTo, err = parseTime("to", to, now); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			svc, done, err := app.orderService(ctx, false)
			if err != nil {
				return err
			}
			defer done()
			page, err := svc.Search(ctx, q)
			if errors.Is(err, orderops.ErrBadRequest) {
				return Usage(err)
			}
			if err != nil {
				return err
			}
			if app.Output == "json" {
				enc := json.NewEncoder(app.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(page)
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tORDER\tNUMBER\tSTATUS\tTOTAL\tUPDATED AT")
			for _, o := range page.Orders {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", term(o.Platform), term(clipText(o.ID, 60)), term(clipText(o.Number, 30)),
					term(clipText(o.Status, 30)), term(clipText(o.Total+" "+o.Currency, 30)), o.UpdatedAt.UTC().Format(time.RFC3339Nano))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(app.Out, "more: --after %s\n", page.Next)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&q.Platform, "platform", "p", "", "only this platform's orders")
	cmd.Flags().StringVar(&q.Number, "number", "", "the order's number or name (#1001; 1001 finds #1001 too)")
	cmd.Flags().StringVar(&q.Status, "status", "", "the platform's status as stored, exactly")
	cmd.Flags().StringVar(&from, "from", "", "updated at or after: RFC3339 or relative (-2d)")
	cmd.Flags().StringVar(&to, "to", "", "updated before: RFC3339 or relative (-1h)")
	cmd.Flags().IntVar(&q.Limit, "limit", store.DefaultSearchLimit, fmt.Sprintf("orders per page, at most %d", store.MaxSearchLimit))
	cmd.Flags().StringVar(&q.After, "after", "", "the page token a previous search printed (more: --after ...)")
	return cmd
}
