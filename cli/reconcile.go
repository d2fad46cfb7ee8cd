package cli

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

func newReconcileCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Count reconciliation: the platforms' own counts of closed windows against the store",
		Long: `For each closed window of reconcile_window (a day by default) a platform's
Reconcile workflow (reconcile/<platform>) compares the platform's count of
orders whose current update time falls in the window (Shopify ordersCount,
WooCommerce X-WP-Total, eBay total) with the store's count of current
versions in it, once the window settled and the cursor passed it, and again
reconcile_recheck later (3 days by default). When the platform counts more,
the cursor reprocesses exactly that window; a difference that stays after
the reprocess raises a "reconcile" alert. Amazon and the http kind have no
count call: they are not reconciled. See docs/reconcile.md.`,
	}
	cmd.AddCommand(newReconcileReportCommand(app), newReconcileRunCommand(app))
	return cmd
}

func newReconcileRunCommand(app *App) *cobra.Command {
	var platform, from, to string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Check one window now: the platform's count against the store's, reprocessed if they differ",
		Long: `Asks the platform's Reconcile workflow to check [from, to) now, beside its
windows (its "check" signal): the same count, reprocess and recount as a
scheduled check, within the platform's rate limit, once the cursor has
passed the window's end. The window must have ended and be at most 7 days
long; at most 20 requests wait. The result shows in ` + "`reconcile report`" + `
(check "manual").`,
		Example: "  ordersync reconcile run --platform shopify-acme --from 2026-11-20T00:00:00Z --to 2026-11-21T00:00:00Z\n" +
			"  ordersync reconcile run --platform shopify-acme --from -2d --to -1d",
		Args: ordersArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platform == "" || from == "" || to == "" {
				return Usage(fmt.Errorf("--platform, --from and --to are required"))
			}
			now := time.Now()
			fromT, toT, err := parseRange(from, to, now)
			if err != nil {
				return err
			}
			switch {
			case toT.After(now):
				return Usage(fmt.Errorf("--to %s has not passed yet: only a closed window can be counted", toT.Format(time.RFC3339)))
			case toT.Sub(fromT) > api.MaxReconcileCheckSpan:
				return Usage(fmt.Errorf("[--from, --to) is %s long; at most %s", toT.Sub(fromT), api.MaxReconcileCheckSpan))
			}
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			selected, err := app.selectKnown(cmd.Context(), f, []string{platform})
			if err != nil {
				return err
			}
			p := selected[0]
			if !connectors.CountSupported(p) {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("platform %s (kind %s) is not reconciled: its API has no order count call", p.Name, p.Kind)}
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			id := api.ReconcileWorkflowID(p.Name)
			err = c.SignalWorkflow(cmd.Context(), id, "", api.SignalReconcileCheck, api.Range{Start: fromT.UTC(), End: toT.UTC()})
			if isNotFound(err) {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s is not running (reconcile: false, or the platform is not started: ordersync platform start %s)", id, p.Name)}
			}
			if err != nil {
				return fmt.Errorf("signal check to %s: %w", id, err)
			}
			if app.Output == "json" {
				return writeJSON(app, map[string]any{"platform": p.Name, "from": fromT.UTC(), "to": toT.UTC(), "workflow_id": id})
			}
			fmt.Fprintf(app.Out, "%s: check of %s .. %s asked; see ordersync reconcile report --platform %s\n", p.Name,
				fromT.UTC().Format(time.RFC3339), toT.UTC().Format(time.RFC3339), p.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&platform, "platform", "p", "", "the platform")
	cmd.Flags().StringVar(&from, "from", "", "window start: RFC3339 or relative (-2d)")
	cmd.Flags().StringVar(&to, "to", "", "window end (exclusive): RFC3339 or relative (-1d)")
	return cmd
}

// reconcileReport is what `reconcile report -o json` prints.
type reconcileReport struct {
	Results []store.ReconcileResult `json:"results"`
	// Platforms says per known platform whether it is reconciled, and why
	// not.
	Platforms []reconcilePlatform `json:"platforms,omitempty"`
}

type reconcilePlatform struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Reconciled bool   `json:"reconciled"`
	Why        string `json:"why,omitempty"`
	Window     string `json:"window,omitempty"`
	Recheck    string `json:"recheck,omitempty"`
}

func newReconcileReportCommand(app *App) *cobra.Command {
	var platform string
	var limit int
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Show the reconciliation's latest checks, newest first, and which platforms are reconciled",
		Long: `Shows the latest checks of count reconciliation from the store, newest first:
the window, the check (first or recheck), the platform's count and the
store's, and the outcome: match; closed (the platform counted more, the
window was reprocessed, and the counts agree now); open (they still differ:
alerted); store_ahead (the store holds more current versions in the window
than the platform counts: orders updated again since, or deleted on the
platform; reprocessing cannot change that). A check still waiting for its
reprocess is not in the store yet. Below, each known platform and whether
it is reconciled (kinds without a count call are not).

Exit status 1 when a shown check is open.`,
		Example: "  ordersync reconcile report\n  ordersync reconcile report --platform shopify-acme -o json",
		Args:    ordersArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > store.MaxReconcileResults {
				return Usage(fmt.Errorf("--limit %d: want 1 to %d", limit, store.MaxReconcileResults))
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			var rep reconcileReport
			if rep.Results, err = st.ReconcileResults(ctx, platform, limit); err != nil {
				return err
			}
			if rep.Platforms, err = app.reconcilePlatforms(ctx, st, platform); err != nil {
				return err
			}
			if err := printReconcileReport(app, rep); err != nil {
				return err
			}
			for _, r := range rep.Results {
				if r.Outcome == api.ReconcileOpen {
					return &ExitError{Code: ExitFailure, Err: fmt.Errorf("a window's count still differs after its reprocess (outcome open, see above)")}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&platform, "platform", "p", "", "only this platform's checks")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many checks to show, newest first")
	return cmd
}

// reconcilePlatforms lists the known platforms (the registry's, else the
// platforms file's) and whether each is reconciled.
func (a *App) reconcilePlatforms(ctx context.Context, st store.Store, only string) ([]reconcilePlatform, error) {
	var platforms []config.Platform
	if reg, ok := registryOf(st); ok {
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassPlatform}, func(e accounts.Entry) error {
			if p, err := accounts.DecodePlatform(e); err == nil && e.State != accounts.Removed {
				platforms = append(platforms, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list the registered platforms: %w", err)
		}
	}
	if len(platforms) == 0 {
		f, err := a.loadPlatformsIfAny()
		if err != nil {
			return nil, err
		}
		if f != nil {
			platforms = f.Platforms
		}
	}
	var out []reconcilePlatform
	for _, p := range platforms {
		if only != "" && p.Name != only {
			continue
		}
		s := p.Settings()
		rp := reconcilePlatform{Name: p.Name, Kind: p.Kind, Reconciled: true,
			Window: s.ReconcileWindowOrDefault().String(), Recheck: s.ReconcileRecheckOrDefault().String()}
		switch {
		case !connectors.CountSupported(p):
			rp.Reconciled, rp.Why, rp.Window, rp.Recheck = false, "unsupported: "+p.Kind+" has no order count call", "", ""
			if p.Kind == "shopify" {
				rp.Why = "unsupported: Shopify's REST API (options.api: rest) is not counted; the GraphQL API is"
			}
		case !s.ReconcileOn():
			rp.Reconciled, rp.Why, rp.Window, rp.Recheck = false, "off (reconcile: false)", "", ""
		}
		out = append(out, rp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func printReconcileReport(app *App, rep reconcileReport) error {
	if app.Output == "json" {
		if rep.Results == nil {
			rep.Results = []store.ReconcileResult{}
		}
		return writeJSON(app, rep)
	}
	tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tWINDOW\tCHECK\tPLATFORM COUNT\tSTORE COUNT\tAFTER REPROCESS\tOUTCOME\tCHECKED")
	for _, r := range rep.Results {
		count := fmt.Sprint(r.PlatformCount)
		if r.Precision == connectors.CountAtLeast {
			count = "≥" + count
		}
		after := "-"
		if r.Reprocessed {
			after = fmt.Sprintf("%d / %d", r.RecountPlatform, r.RecountStore)
		}
		fmt.Fprintf(tw, "%s\t%s .. %s\t%s\t%s\t%d\t%s\t%s\t%s\n", term(clipText(r.Platform, 80)), fmtTime(r.From), fmtTime(r.To),
			term(r.Check), count, r.StoreCount, after, term(r.Outcome), fmtTime(r.CheckedAt))
	}
	if len(rep.Results) == 0 {
		fmt.Fprintln(tw, "(no checks yet)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Platforms) == 0 {
		return nil
	}
	fmt.Fprintln(app.Out)
	tw = tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tKIND\tRECONCILED")
	for _, p := range rep.Platforms {
		what := "yes, windows of " + p.Window + ", recheck " + p.Recheck
		if p.Recheck == "0s" {
			what = "yes, windows of " + p.Window + ", no recheck"
		}
		if !p.Reconciled {
			what = "no: " + p.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", term(clipText(p.Name, 80)), term(p.Kind), term(what))
	}
	return tw.Flush()
}
