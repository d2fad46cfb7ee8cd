package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/tsetup"
)

func newSetupCommand(app *App) *cobra.Command {
	var check bool
	var retention time.Duration
	var cloud string
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Prepare a Temporal namespace for ordersync (namespace, retention, search attributes)",
		Long: `Makes the namespace ready for ordersync, on any Temporal frontend (the
address, namespace, TLS and API key come from ORDERSYNC_TEMPORAL_* or the
--address, --namespace, --tls* and --api-key flags):

  - creates the namespace when it is missing (where this identity may);
  - raises its retention to at least --retention (never lowers a longer one),
    so failed slices stay visible in the Web UI for weeks;
  - adds the search attributes ordersync's workflows write: ` + attributeList() + `.

It changes only what is missing, so running it again changes nothing.
--check changes nothing: it reports what a run would do and exits 1 when
anything is missing. ` + "`ordersync worker`" + ` refuses to start (exit 2) while a
search attribute is missing.

On Temporal Cloud (an address ending in .tmprl.cloud or .api.temporal.io,
or --cloud=true) namespaces and retention are managed by the Cloud control
plane: setup never creates or changes them there. It checks them, adds
missing search attributes through the operator service where the account
permits it, and prints the tcld command for anything left, exiting 1 until
the namespace is complete.`,
		Example: "  ordersync setup --address temporal.internal:7233 --namespace orders\n" +
			"  ordersync setup --check -o json\n" +
			"  ordersync setup --address orders.a1b2c.tmprl.cloud:7233 -n orders.a1b2c --tls-cert-path c.pem --tls-key-path c.key",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retention < 24*time.Hour {
				return Usage(fmt.Errorf("--retention %s: must be at least 24h", retention))
			}
			opts := tsetup.Options{Namespace: app.Process.TemporalNamespace, MinRetention: retention, DryRun: check,
				Cloud: tsetup.IsCloudAddress(app.Process.TemporalAddress)}
			switch cloud {
			case "auto":
			case "true", "false":
				opts.Cloud = cloud == "true"
			default:
				return Usage(fmt.Errorf("--cloud %q: want auto, true or false", cloud))
			}
			return app.RunSetup(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "only report what would change; exit 1 if anything is missing")
	durationDaysVar(cmd.Flags(), &retention, "retention", tsetup.DefaultRetention, "least retention of closed workflows, e.g. 720h or 30d (a longer one is kept)")
	cmd.Flags().StringVar(&cloud, "cloud", "auto", "the frontend is Temporal Cloud: auto (from the address), true or false")
	return cmd
}

// RunSetup prepares (or, with DryRun, checks) the namespace and prints
// what it found and did.
func (a *App) RunSetup(ctx context.Context, opts tsetup.Options) error {
	c, err := a.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	report, err := tsetup.Run(ctx, tsetup.Services{Workflow: c.WorkflowService(), Operator: c.OperatorService()}, opts)
	if a.Output == "json" {
		if werr := writeJSON(a, report); werr != nil {
			return werr
		}
	} else {
		a.printSetup(report, opts)
	}
	switch {
	case err != nil:
		return err
	case report.Complete():
		return nil
	case opts.Cloud && !opts.DryRun:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("namespace %s is not complete: make the changes listed above in Temporal Cloud, then run `ordersync setup --check`", opts.Namespace)}
	default:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("namespace %s is not ready for ordersync: run `ordersync setup` to make the changes listed above", opts.Namespace)}
	}
}

func (a *App) printSetup(r tsetup.Report, opts tsetup.Options) {
	mode := ""
	if opts.DryRun {
		mode = " (check only: nothing changed)"
	}
	fmt.Fprintf(a.Out, "Namespace %s on %s%s\n", r.Namespace, a.Process.TemporalAddress, mode)
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Item, s.State, s.Detail)
		if s.Manual != "" {
			fmt.Fprintf(tw, "  \t\trun: %s\n", s.Manual)
		}
	}
	_ = tw.Flush()
	switch {
	case r.Changed():
		fmt.Fprintln(a.Out, "Done: the namespace is ready for ordersync.")
	case r.Complete():
		fmt.Fprintln(a.Out, "Nothing to change: the namespace is ready for ordersync.")
	}
}

// checkNamespaceReady stops a worker whose namespace lacks what the
// workflows need: without the search attributes every cursor and slice
// start would be refused, one confusing error at a time.
func (a *App) checkNamespaceReady(ctx context.Context, c client.Client) error {
	ns, addr := a.Process.TemporalNamespace, a.Process.TemporalAddress
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	missing, err := tsetup.MissingAttributes(ctx, c.OperatorService(), ns, searchattr.All)
	switch {
	case errors.Is(err, tsetup.ErrNoNamespace):
		return Usage(fmt.Errorf("namespace %s does not exist on %s: run `ordersync setup` first (it creates the namespace and its search attributes)", ns, addr))
	case tsetup.IsRefused(err):
		// A worker identity may lack the operator role (Temporal Cloud):
		// it can still work; setup --check by an operator covers it.
		a.Logger.Warn("search attributes not checked: this identity may not list them", "namespace", ns, "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("check the search attributes of namespace %s on %s: %w", ns, addr, err)
	case len(missing) > 0:
		names := make([]string, len(missing))
		for i, d := range missing {
			names[i] = fmt.Sprintf("%s (%s)", d.Name, d.Type)
		}
		return Usage(fmt.Errorf("namespace %s on %s lacks the search attribute(s) %s that ordersync's workflows write: run `ordersync setup` first",
			ns, addr, strings.Join(names, ", ")))
	}
	return nil
}

func attributeList() string {
	names := make([]string, len(searchattr.All))
	for i, d := range searchattr.All {
		names[i] = fmt.Sprintf("%s (%s)", d.Name, d.Type)
	}
	return strings.Join(names, ", ")
}
