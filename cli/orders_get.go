package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/orderops"
)

func newOrdersGetCommand(app *App) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "get PLATFORM ORDER_ID",
		Short: "Show one stored order: canonical form, lines, versions seen, delivery per destination",
		Long: `Shows one stored order: its header, the canonical order (none for a version
stored before there was one: refetch the order to fill it in), its lines,
the versions the change feed still holds (seq, updated_at, committed_at,
kind; compaction removes the ones every destination acknowledged), and
for every destination of the registry whether the current version was

  delivered         the destination acknowledged the seq of the order's
                    latest change (or that change is compacted)
  set_aside         the latest change is on the destination's poison list
                    (ordersync deliveries retry|skip DEST)
  pending           not acknowledged yet
  not_for_platform  the destination takes other platforms' changes only

--raw adds the platform's own order (JSON) to the output. -o json prints
everything as one JSON object.

Exit status 1 when the store does not know the order.`,
		Example: "  ordersync orders get shopify-acme 5123456789\n" +
			"  ordersync orders get sim-acme 1000000042 -o json --raw",
		Args: ordersArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			svc, done, err := app.orderService(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			o, found, err := svc.Get(ctx, args[0], args[1], orderops.GetOptions{Raw: raw})
			if err != nil {
				return err
			}
			if !found {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("order %s of %s is not in the store (ordersync orders refetch %s %s fetches it now)",
					clipText(args[1], 80), clipText(args[0], 80), clipText(args[0], 80), clipText(args[1], 80))}
			}
			if app.Output == "json" {
				enc := json.NewEncoder(app.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(o)
			}
			return printOrder(app.Out, o)
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "include the platform's own order (JSON)")
	return cmd
}

func printOrder(w io.Writer, o orderops.Order) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, term(clipText(v, 200))) }
	row("platform", o.Platform)
	row("order", o.ID)
	row("number", o.Number)
	row("status", o.Status)
	row("total", o.Total+" "+o.Currency)
	row("created at", ts(o.CreatedAt))
	row("updated at", ts(o.UpdatedAt))
	row("first seen", ts(o.FirstSeenAt))
	row("last seen", ts(o.LastSeenAt))
	if c := o.Canonical; c != nil {
		row("canonical", fmt.Sprintf("%s: status %s, financial %s, fulfilment %s", c.Schema, c.Status, c.FinancialStatus, c.FulfillmentStatus))
	} else {
		row("canonical", "none (stored before the canonical order; refetch the order to fill it in)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nLINES (%d)\n", len(o.Lines))
	if !o.HasLines {
		fmt.Fprintln(w, "  the platform listed none with this order")
	} else {
		fmt.Fprintln(tw, "ID\tSKU\tQTY\tUNIT PRICE\tTITLE")
		for _, l := range o.Lines {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", term(clipText(l.ID, 40)), term(clipText(l.SKU, 40)), l.Quantity, term(clipText(l.UnitPrice+" "+l.Currency, 30)), term(clipText(l.Title, 60)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nVERSIONS (%d retained in the change feed)\n", len(o.Versions))
	fmt.Fprintln(tw, "SEQ\tKIND\tUPDATED AT\tCOMMITTED AT")
	for _, v := range o.Versions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.Seq, v.Kind, ts(v.UpdatedAt), ts(v.CommittedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nDELIVERIES (%d destinations)\n", len(o.Deliveries))
	fmt.Fprintln(tw, "DESTINATION\tSTATE\tCHANGE SEQ\tACKED\tNOTE")
	for _, d := range o.Deliveries {
		note := d.Reason
		if d.Paused {
			note = "paused " + note
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", term(d.Destination), d.State, d.Seq, d.Acked, term(clipText(note, 100)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(o.Raw) > 0 {
		fmt.Fprintf(w, "\nRAW\n%s\n", term(string(o.Raw)))
	}
	return nil
}
