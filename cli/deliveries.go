package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

func newDeliveriesCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "Add, remove, start, inspect and steer destinations and their Delivery workflows",
		Long: `Each destination has one Delivery workflow (ID delivery/<destination>) that
sends it the change feed, from its acknowledged sequence number on.
Destinations are registry data: add, edit and remove them at runtime
(deliveries add|edit|remove, or platform apply -f with a destinations
block); the running workers follow. A platforms file's destinations not
registered yet are used too.`,
	}
	cmd.AddCommand(newDeliveriesAddCommand(app), newDeliveriesEditCommand(app), newDeliveriesRemoveCommand(app),
		newDeliveriesStartCommand(app), newDeliveriesListCommand(app), newDeliveriesStatusCommand(app),
		newDeliveriesMessageCommand(app, api.SignalDeliveryPause), newDeliveriesMessageCommand(app, api.SignalDeliveryResume),
		newDeliveriesMessageCommand(app, api.SignalDeliveryRetry), newDeliveriesMessageCommand(app, api.SignalDeliverySkip))
	return cmd
}

// selectDestinations returns the named destinations, all when names is
// empty: from the registry (its settings win), else from the platforms
// file (one not registered yet). A removed destination is not selected.
func (a *App) selectDestinations(ctx context.Context, names []string) ([]config.Destination, error) {
	f, err := a.loadPlatformsIfAny()
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = &config.File{}
	}
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return nil, err
	}
	defer closeReg()
	if len(names) == 0 {
		var out []config.Destination
		seen := map[string]bool{}
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassDestination}, func(e accounts.Entry) error {
			d, err := accounts.DecodeDestination(e)
			if err != nil {
				return err
			}
			out, seen[d.Name] = append(out, d), true
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, d := range f.Destinations {
			if seen[d.Name] {
				continue
			}
			if e, found, err := reg.Get(ctx, accounts.ClassDestination, d.Name); err != nil {
				return nil, err
			} else if !found || e.State != accounts.Removed {
				out = append(out, d)
			}
		}
		return out, nil
	}
	var out []config.Destination
	for _, n := range names {
		e, found, err := reg.Get(ctx, accounts.ClassDestination, n)
		if err != nil {
			return nil, err
		}
		switch {
		case found && e.State == accounts.Removed:
			return nil, Usage(fmt.Errorf("destination %s was removed at revision %d", term(n), e.Revision))
		case found:
			d, err := accounts.DecodeDestination(e)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
			continue
		}
		d, ok := f.Destination(n)
		if !ok {
			return nil, Usage(fmt.Errorf("unknown destination %q: not registered (ordersync deliveries add) and not in a platforms file (%s)",
				clipText(n, 100), joinOrNone(f.DestinationNames())))
		}
		out = append(out, d)
	}
	return out, nil
}

func newDeliveriesStartCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:     "start [DESTINATION...]",
		Short:   "Start the Delivery workflows of the named destinations (all without names) that are not running",
		Example: "  ordersync deliveries start\n  ordersync deliveries start oms",
		RunE: func(cmd *cobra.Command, args []string) error {
			dests, err := app.selectDestinations(cmd.Context(), args)
			if err != nil {
				return err
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			for _, d := range dests {
				r, err := starter.EnsureDelivery(cmd.Context(), c, d)
				if err != nil {
					return err
				}
				fmt.Fprintf(app.Out, "%s: %s\n", d.Name, map[bool]string{true: "started", false: "already running"}[r.Started])
			}
			return nil
		},
	}
}

func deliveryStatus(ctx context.Context, c client.Client, name string) (api.DeliveryStatus, bool, error) {
	var st api.DeliveryStatus
	v, err := c.QueryWorkflow(ctx, api.DeliveryWorkflowID(name), "", api.QueryDeliveryStatus)
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), "workflow execution already completed") {
			return st, false, nil
		}
		return st, false, fmt.Errorf("query %s: %w", api.DeliveryWorkflowID(name), err)
	}
	if err := v.Get(&st); err != nil {
		return st, false, fmt.Errorf("decode status of %s: %w", name, err)
	}
	return st, true, nil
}

// deliveryReport is delivered vs accepted for one destination.
type deliveryReport struct {
	Destination string `json:"destination"`
	Running     bool   `json:"running"`
	// Accepted counts the retained changes meant for the destination
	// (its platforms), up to the feed's head.
	Accepted int64 `json:"accepted"`
	// Pending counts those after its acknowledged seq; Poison those set aside.
	Pending int64               `json:"pending"`
	Poison  int                 `json:"poison"`
	Head    int64               `json:"head"`
	Status  *api.DeliveryStatus `json:"status,omitempty"`
}

func (r deliveryReport) state() string {
	switch {
	case !r.Running:
		return "not running"
	case r.Status.Waiting != "":
		return r.Status.Waiting
	}
	return "delivering"
}

func buildReport(ctx context.Context, c client.Client, st store.Store, d config.Destination) (deliveryReport, error) {
	r := deliveryReport{Destination: d.Name}
	status, running, err := deliveryStatus(ctx, c, d.Name)
	if err != nil {
		return r, err
	}
	head, err := st.Head(ctx)
	if err != nil {
		return r, err
	}
	r.Head, r.Running = head.LastSeq, running
	var acked int64
	if running {
		r.Status, acked, r.Poison = &status, status.State.Acked, len(status.State.Poison)
	}
	platforms := d.Platforms
	if len(platforms) == 0 {
		platforms = []string{""}
	}
	for _, p := range platforms {
		all, err := st.CountChanges(ctx, p, 0, head.LastSeq)
		if err != nil {
			return r, err
		}
		pending, err := st.CountChanges(ctx, p, acked, head.LastSeq)
		if err != nil {
			return r, err
		}
		r.Accepted += all
		r.Pending += pending
	}
	return r, nil
}

func newDeliveriesListCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List destinations with delivered vs accepted changes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.printDeliveryReports(cmd.Context(), nil, false)
		},
	}
}

func newDeliveriesStatusCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "status [DESTINATION...]",
		Short: "Show each destination's acknowledged seq, pending and set-aside (poison) changes; exit 1 while any is pending",
		Long: `Shows, per destination, the changes accepted for it (retained in the feed),
how many are still pending after its acknowledged sequence number, and the
poison changes set aside. Exits 1 when a change is pending or set aside, so
a script can wait for "all delivered".`,
		Example: "  ordersync deliveries status oms -o json",
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.printDeliveryReports(cmd.Context(), args, true)
		},
	}
}

func (a *App) printDeliveryReports(ctx context.Context, names []string, strict bool) error {
	dests, err := a.selectDestinations(ctx, names)
	if err != nil {
		return err
	}
	c, err := a.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	reports := []deliveryReport{}
	for _, d := range dests {
		r, err := buildReport(ctx, c, st, d)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if a.Output == "json" {
		if err := writeJSON(a, reports); err != nil {
			return err
		}
	} else if err := writeDeliveryTable(a.Out, reports); err != nil {
		return err
	}
	if strict {
		for _, r := range reports {
			if !r.Running || r.Pending > 0 || r.Poison > 0 {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %d pending, %d set aside (%s)", r.Destination, r.Pending, r.Poison, r.state())}
			}
		}
	}
	return nil
}

// writeDeliveryTable prints a line per destination and, for destinations
// delivering in lanes (max_in_flight > 1), a line per lane of the pending
// range not yet confirmed: its seqs and whether it is in flight or waits.
func writeDeliveryTable(w io.Writer, reports []deliveryReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tSTATE\tACKED\tHEAD\tACCEPTED\tPENDING\tPOISON\tLAST ERROR")
	var lanes []deliveryReport
	for _, r := range reports {
		var acked int64
		lastErr := ""
		if r.Status != nil {
			acked, lastErr = r.Status.State.Acked, r.Status.State.LastError
			if r.Status.State.Pending != nil {
				lanes = append(lanes, r)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", term(r.Destination), term(r.state()), acked, r.Head, r.Accepted, r.Pending, r.Poison, clipText(lastErr, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(lanes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tPENDING RANGE\tLANE\tSEQS\tCHANGES\tSTATE")
	for _, r := range lanes {
		p := r.Status.State.Pending
		state := "waiting: " + r.state()
		switch {
		case r.Status.InFlight != nil && *r.Status.InFlight == p.SeqRange:
			state = "in flight"
		case r.Status.Waiting == "":
			state = "next"
		}
		for _, l := range p.Left {
			seqs := "-"
			if len(l.Seqs) > 0 {
				seqs = fmt.Sprintf("%d..%d", l.Seqs[0], l.Seqs[len(l.Seqs)-1])
			}
			fmt.Fprintf(tw, "%s\t%d..%d\t%d/%d\t%s\t%d\t%s\n", term(r.Destination), p.After+1, p.To, l.Lane+1, p.Lanes, seqs, len(l.Seqs), term(state))
		}
	}
	return tw.Flush()
}

// newDeliveriesMessageCommand sends one of the Delivery workflow's
// messages as an update, so a refused one is reported.
func newDeliveriesMessageCommand(app *App, name string) *cobra.Command {
	var reason string
	var seq int64
	var all bool
	var timeout time.Duration
	shorts := map[string]string{
		api.SignalDeliveryPause:  "Stop delivering to a destination after the batch in flight",
		api.SignalDeliveryResume: "Continue delivering to a paused destination (closes a tripped breaker)",
		api.SignalDeliveryRetry:  "Deliver set-aside (poison) changes again: --seq N or --all",
		api.SignalDeliverySkip:   "Drop set-aside (poison) changes without delivering them: --seq N or --all",
	}
	cmd := &cobra.Command{
		Use:     name + " DESTINATION",
		Short:   shorts[name],
		Example: "  ordersync deliveries " + name + " oms",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var payload any
			switch name {
			case api.SignalDeliveryPause:
				payload = api.PauseRequest{Reason: reason}
			case api.SignalDeliveryRetry, api.SignalDeliverySkip:
				if (seq == 0) == !all {
					return Usage(fmt.Errorf("give --seq N or --all"))
				}
				payload = api.DeliverySelector{Seq: seq, All: all}
			default:
				payload = json.RawMessage(`{}`)
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			uctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: api.DeliveryWorkflowID(args[0]), UpdateName: name,
				Args: []any{payload}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				if isNotFound(err) {
					return fmt.Errorf("%s is not running: ordersync deliveries start %s", api.DeliveryWorkflowID(args[0]), args[0])
				}
				return fmt.Errorf("%s %s: %w", name, api.DeliveryWorkflowID(args[0]), err)
			}
			var st api.DeliveryStatus
			if err := h.Get(uctx, &st); err != nil {
				if uctx.Err() != nil {
					return fmt.Errorf("%s %s: no worker answered within %s (is an ordersync worker serving task queue deliveries running?)", name, api.DeliveryWorkflowID(args[0]), timeout)
				}
				return Usage(fmt.Errorf("%s %s rejected: %w", name, api.DeliveryWorkflowID(args[0]), err))
			}
			if app.Output == "json" {
				return writeJSON(app, st)
			}
			state := "delivering"
			if st.Waiting != "" {
				state = st.Waiting
			}
			fmt.Fprintf(app.Out, "%s: %s, acked %d, %d set aside\n", term(args[0]), term(state), st.State.Acked, len(st.State.Poison))
			return nil
		},
	}
	switch name {
	case api.SignalDeliveryPause:
		cmd.Flags().StringVar(&reason, "reason", "", "why, shown in status")
	case api.SignalDeliveryRetry, api.SignalDeliverySkip:
		cmd.Flags().Int64Var(&seq, "seq", 0, "the set-aside change's sequence number")
		cmd.Flags().BoolVar(&all, "all", false, "every set-aside change")
	}
	addTimeoutFlag(cmd, &timeout)
	return cmd
}
