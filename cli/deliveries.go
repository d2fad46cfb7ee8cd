package cli

import (
	"context"
	"encoding/json"
	"errors"
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

// selectedDestination is a destination as the registry holds it, at the
// revision read (0: one only a platforms file declares).
type selectedDestination struct {
	config.Destination
	Revision int64
}

// selectDestinations returns the named destinations, all when names is
// empty: from the registry (its settings win), else from the platforms
// file (one not registered yet). A removed destination is not selected.
func (a *App) selectDestinations(ctx context.Context, names []string) ([]selectedDestination, error) {
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
		var out []selectedDestination
		seen := map[string]bool{}
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassDestination}, func(e accounts.Entry) error {
			d, err := accounts.DecodeDestination(e)
			if err != nil {
				return err
			}
			out, seen[d.Name] = append(out, selectedDestination{d, e.Revision}), true
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
				out = append(out, selectedDestination{Destination: d})
			}
		}
		return out, nil
	}
	var out []selectedDestination
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
			out = append(out, selectedDestination{d, e.Revision})
			continue
		}
		d, ok := f.Destination(n)
		if !ok {
			return nil, Usage(fmt.Errorf("unknown destination %q: not registered (ordersync deliveries add) and not in a platforms file (%s)",
				clipText(n, 100), joinOrNone(f.DestinationNames())))
		}
		out = append(out, selectedDestination{Destination: d})
	}
	return out, nil
}

func newDeliveriesStartCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
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
				r, err := starter.EnsureDeliveryAt(cmd.Context(), c, d.Destination, d.Revision)
				if err != nil {
					return err
				}
				fmt.Fprintf(app.Out, "%s: %s\n", d.Name, map[bool]string{true: "started", false: "already running"}[r.Started])
			}
			return nil
		},
	}
	namesFlag(cmd, "destination", "", "destination", 0, 0)
	return cmd
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
	Pending int64 `json:"pending"`
	// Overdue counts the pending changes committed longer than
	// deliveries status --stuck-after ago: what a healthy destination
	// would have received by now.
	Overdue int64               `json:"overdue"`
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

func buildReport(ctx context.Context, c client.Client, st store.Store, d config.Destination, overdueBefore time.Time) (deliveryReport, error) {
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
		if pending > 0 && !overdueBefore.IsZero() {
			overdue, err := st.CountChangesCommittedBefore(ctx, p, acked, overdueBefore)
			if err != nil {
				return r, err
			}
			r.Overdue += overdue
		}
	}
	return r, nil
}

func newDeliveriesListCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List destinations with delivered vs accepted changes",
		Long: `Lists every destination (registered, and the platforms file's not yet
registered) with its Delivery workflow's state, the sequence number it
acknowledged, the feed's head, the changes accepted for it, how many are
pending and how many are set aside (poison). It always exits 0 when it
could read them; deliveries status judges them.`,
		Example: "  ordersync deliveries list\n  ordersync deliveries list -o json | jq '.[] | {destination, pending}'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.printDeliveryReports(cmd.Context(), nil, deliveryCheck{})
		},
	}
}

// deliveryCheck is what deliveries status counts as a failure (exit 1).
type deliveryCheck struct {
	strict bool
	// stuckAfter: pending changes committed longer ago are overdue.
	stuckAfter time.Duration
	// drained: anything pending fails too (scripts that wait for "all
	// delivered").
	drained bool
}

// DefaultStuckAfter is deliveries status's default --stuck-after: far
// beyond a healthy destination's delay (a batch every few seconds), short
// enough to be noticed.
const DefaultStuckAfter = 15 * time.Minute

func newDeliveriesStatusCommand(app *App) *cobra.Command {
	check := deliveryCheck{strict: true}
	cmd := &cobra.Command{
		Use:   "status [DESTINATION...]",
		Short: "Show each destination's acknowledged seq, pending and set-aside (poison) changes; exit 1 when one fails or is stuck",
		Long: `Shows, per destination, the changes accepted for it (retained in the feed),
how many are still pending after its acknowledged sequence number, how many
of those are overdue (committed more than --stuck-after ago), and the
poison changes set aside.

Pending changes are normal while orders flow: the exit status is 0 with
changes pending. It is 1 when a destination needs someone:
  - its Delivery workflow is not running (deliveries start),
  - changes are set aside (deliveries retry|skip),
  - its breaker is open (the destination keeps failing), or
  - changes are overdue: pending and committed more than --stuck-after ago
    (default 15m), unless the destination is paused on purpose.
With --drained it is also 1 while any change is pending or set aside, so a
script can wait for "all delivered":
  until ordersync deliveries status --drained >/dev/null; do sleep 5; done`,
		Example: "  ordersync deliveries status\n  ordersync deliveries status oms -o json\n  ordersync deliveries status --stuck-after 1h\n  ordersync deliveries status oms --drained",
		RunE: func(cmd *cobra.Command, args []string) error {
			if check.stuckAfter <= 0 {
				return Usage(fmt.Errorf("--stuck-after must be positive, got %s", check.stuckAfter))
			}
			return app.printDeliveryReports(cmd.Context(), args, check)
		},
	}
	durationDaysVar(cmd.Flags(), &check.stuckAfter, "stuck-after", DefaultStuckAfter, "pending changes committed longer ago than this are overdue (exit 1)")
	namesFlag(cmd, "destination", "", "destination", 0, 0)
	cmd.Flags().BoolVar(&check.drained, "drained", false, "exit 1 also while any change is pending (wait for \"all delivered\")")
	return cmd
}

// problem says why r fails check, nil when it does not.
func (check deliveryCheck) problem(r deliveryReport) error {
	var why string
	switch {
	case !check.strict:
		return nil
	case !r.Running:
		why = "its Delivery workflow is not running (ordersync deliveries start " + r.Destination + ")"
	case r.Poison > 0:
		why = fmt.Sprintf("%d change(s) set aside (ordersync deliveries retry|skip %s --all)", r.Poison, r.Destination)
	case r.Status != nil && (r.Status.State.BreakerOpen || r.Status.Waiting == "breaker open"):
		why = "its breaker is open: the destination keeps failing"
		if e := r.Status.State.LastError; e != "" {
			why += ": " + clipText(e, 120)
		}
	case r.Overdue > 0 && (r.Status == nil || !r.Status.State.Paused):
		why = fmt.Sprintf("%d pending change(s) committed more than %s ago (%s)", r.Overdue, check.stuckAfter, r.state())
	case check.drained && r.Pending > 0:
		why = fmt.Sprintf("%d change(s) pending (--drained)", r.Pending)
	default:
		return nil
	}
	return fmt.Errorf("%s: %s", r.Destination, why)
}

func (a *App) printDeliveryReports(ctx context.Context, names []string, check deliveryCheck) error {
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
	var overdueBefore time.Time
	if check.strict {
		overdueBefore = time.Now().Add(-check.stuckAfter)
	}
	for _, d := range dests {
		r, err := buildReport(ctx, c, st, d.Destination, overdueBefore)
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
	var failed []error
	for _, r := range reports {
		if err := check.problem(r); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return &ExitError{Code: ExitFailure, Err: errors.Join(failed...)}
	}
	return nil
}

// writeDeliveryTable prints a line per destination and, for destinations
// delivering in lanes (max_in_flight > 1), a line per lane of the pending
// range not yet confirmed: its seqs and whether it is in flight or waits.
func writeDeliveryTable(w io.Writer, reports []deliveryReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tSTATE\tACKED\tHEAD\tACCEPTED\tPENDING\tOVERDUE\tPOISON\tLAST ERROR")
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", term(r.Destination), term(r.state()), acked, r.Head, r.Accepted, r.Pending, r.Overdue, r.Poison, clipText(lastErr, 80))
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
		Example: "  ordersync deliveries " + name + " oms\n  ordersync deliveries " + name + " --destination oms   # the same",
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
	namesFlag(cmd, "destination", "", "destination", 1, 1)
	return cmd
}
