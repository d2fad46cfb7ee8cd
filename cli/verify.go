package cli

import (
	"context"
	"fmt"
	"github.com/ordersync/ordersync/accounts"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// DefaultSimAdminToken is the admin token of `ordersync dev`'s simulator.
const DefaultSimAdminToken = "demo-admin-token"

func newVerifyCommand(app *App) *cobra.Command {
	var platform, destination, until, adminToken string
	settle := DefaultDeliverySettle
	lines := true
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare the store with a platform (missing, stale, extra orders, lines that differ), or a destination with the store (delivered vs accepted)",
		Long: `Compares what the store holds for a platform with what the platform shows,
for every order updated before --until (default: the cursor's watermark, so
work not yet due is not reported). For the simulator the comparison is with
its ground truth; for other kinds verify lists the platform's orders itself
through the connector, from the platform's start.

  missing       the platform shows the order at a version updated before
                --until, and the store does not have it
  stale         the store holds an older version than that one (a newer
                stored version is fine: the cursor already fetched it)
  lines differ  the store holds the platform's version, but not its lines:
                a line is missing, extra, changed or out of place, or the
                store has no lines for it
  extra         the store holds an order, stored at a version updated before
                --until, that the platform does not show at all

Platforms list orders by their current update time, so an order updated
again after --until is judged later, at its new version: it is neither
missing (during a backfill its old window no longer lists it) nor extra
(the platform still shows it). For the simulator "shows" is its ground
truth now; other kinds are listed through the connector by update time,
where an order that moved past --until cannot be told from one the
platform dropped, so there it can show as extra (never as missing or
stale).

Lines are compared where the platform lists them (every kind but amazon
with api_version v0, and http without options.lines) and the store holds
the version the platform shows; a newer stored version is not compared.
Orders stored before lines were kept have none until fetched again:
reprocess their period. --lines=false skips the lines check.

Exits 1 when anything is missing, stale or has other lines. Orders of
dead-lettered slices count as missing until the slices are reprocessed.

With --destination D instead, verify compares what the destination has
with what the store accepted for it (the changes of its platforms): the
acknowledged seq comes from its Delivery workflow (the status query, as
in deliveries status; when it is not running, from the store's record,
which trails it by up to a batch). For each platform and in total:

  accepted   changes retained in the feed up to its head
  delivered  at or below the acknowledged seq and not set aside (changes
             an operator skipped count here)
  set aside  the poison list: refused by the destination, kept for
             deliveries retry or skip
  pending    after the acknowledged seq
  overdue    pending, and accepted before the cutoff

The cutoff is --until, by default now minus --settle (1m); for a
destination with work windows that are closed now, the end of its last
open period minus --settle. Exits 1 when a change is overdue: accepted
before the cutoff and neither delivered nor set aside (paused, breaker
open, a receiver that keeps failing, or no Delivery workflow). Changes
accepted after the cutoff are pending but never make it fail, and set-aside
changes are listed but do not either (they are accounted for, visible in
deliveries status). Compacted changes, which every destination had
acknowledged, are not counted.`,
		Example: "  ordersync verify --platform sim-acme\n  ordersync verify --platform sim-acme --until -10m -o json\n" +
			"  ordersync verify --destination demo-receiver\n  ordersync verify --destination oms --settle 5m -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			switch {
			case platform != "" && destination != "":
				return Usage(fmt.Errorf("give --platform or --destination, not both"))
			case destination != "":
				return app.verifyDestination(ctx, destination, until, settle)
			case platform == "":
				return Usage(fmt.Errorf("--platform or --destination is required"))
			case cmd.Flags().Changed("settle"):
				return Usage(fmt.Errorf("--settle is for --destination; a platform's cutoff is --until (default the watermark)"))
			}
			p, err := app.verifySettings(ctx, platform)
			if err != nil {
				return err
			}
			cutoff, err := app.verifyCutoff(ctx, platform, until)
			if err != nil {
				return err
			}
			expected, shown, err := expectedOrders(ctx, p, cutoff, adminToken, lines)
			if err != nil {
				return err
			}
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			r, err := compareStored(ctx, st, platform, expected, cutoff, shown, lines)
			if err != nil {
				return err
			}
			if app.Output == "json" {
				if err := writeJSON(app, map[string]any{"report": r, "until": cutoff}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(app.Out, "%s: %d orders updated before %s checked: %d missing, %d stale, %d lines differ, %d extra\n",
					platform, r.Checked, cutoff.Format(time.RFC3339), len(r.Missing), len(r.Stale), len(r.LinesDiffer), len(r.Extra))
				listIDs(app.Out, "missing", r.Missing)
				listIDs(app.Out, "stale", r.Stale)
				listIDs(app.Out, "lines differ", r.LinesDiffer)
			}
			if !r.OK() {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %d missing, %d stale, %d lines differ",
					platform, len(r.Missing), len(r.Stale), len(r.LinesDiffer))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&platform, "platform", "p", "", "platform name (or --destination)")
	cmd.Flags().StringVar(&destination, "destination", "", "destination name: delivered vs accepted (see above)")
	durationDaysVar(cmd.Flags(), &settle, "settle", settle, "with --destination: changes accepted this recently are not yet expected delivered")
	cmd.Flags().BoolVar(&lines, "lines", true, "compare the lines of each order too (one query for all of the platform's lines)")
	cmd.Flags().StringVar(&until, "until", "", "check orders updated (with --destination: changes accepted) before this time: RFC3339 or relative (-10m); default the watermark (now minus --settle)")
	cmd.Flags().StringVar(&adminToken, "sim-admin-token", "", "simulator admin token (default $ORDERSYNC_SIM_ADMIN_TOKEN or the dev demo token)")
	return cmd
}

// verifySettings are the platform's settings from the platforms file or,
// without one, from the account registry: verify asks the platform
// itself, so it needs the identity (endpoint, credentials, options),
// which only the registry holds (a cursor's status shows its tuning).
func (a *App) verifySettings(ctx context.Context, platform string) (config.Platform, error) {
	f, err := a.loadPlatformsIfAny()
	if err != nil {
		return config.Platform{}, err
	}
	if f != nil {
		p, ok := f.Get(platform)
		if !ok {
			return config.Platform{}, Usage(fmt.Errorf("unknown platform %q (configured: %s)", platform, strings.Join(f.Names(), ", ")))
		}
		return p, nil
	}
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return config.Platform{}, fmt.Errorf("%w (or pass --platforms FILE)", err)
	}
	defer closeReg()
	e, found, err := reg.Get(ctx, accounts.ClassPlatform, platform)
	if err != nil {
		return config.Platform{}, fmt.Errorf("read platform %s from the registry: %w", platform, err)
	}
	if !found || e.State == accounts.Removed {
		return config.Platform{}, Usage(fmt.Errorf("platform %q is not registered (ordersync platform list)", platform))
	}
	return accounts.DecodePlatform(e)
}

func (a *App) verifyCutoff(ctx context.Context, platform, until string) (time.Time, error) {
	if until != "" {
		return parseTime("until", until, time.Now())
	}
	c, err := a.Dial(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	st, found, err := cursorStatus(ctx, c, platform)
	if err != nil {
		return time.Time{}, err
	}
	if !found {
		return time.Time{}, Usage(fmt.Errorf("the cursor of %s is not running, so it has no watermark; pass --until", platform))
	}
	return st.Watermark, nil
}

// compareStored reads what the store holds for platform, in one query
// (with the lines when asked), and compares it with expected, the
// platform's versions as of cutoff (verify.TrimExtra says what is extra).
func compareStored(ctx context.Context, st store.Store, platform string, expected []verify.Expected, cutoff time.Time, shown map[string]bool, lines bool) (verify.Report, error) {
	if !lines {
		stored, err := st.OrderVersions(ctx, platform)
		if err != nil {
			return verify.Report{}, err
		}
		return verify.CompareAsOf(platform, expected, stored, cutoff, shown), nil
	}
	stored, err := st.OrderLines(ctx, platform)
	if err != nil {
		return verify.Report{}, err
	}
	versions := make(map[string]time.Time, len(stored))
	for id, s := range stored {
		versions[id] = s.UpdatedAt
	}
	return verify.TrimExtra(verify.CompareLines(platform, expected, stored), versions, cutoff, shown), nil
}

// expectedOrders is what the platform showed as of cutoff for orders updated
// before it (with each version's lines when asked and the platform lists
// them), and which order ids the platform shows at all (nil: only the
// expected ones are known).
func expectedOrders(ctx context.Context, p config.Platform, cutoff time.Time, adminToken string, lines bool) ([]verify.Expected, map[string]bool, error) {
	if p.Kind == "sim" {
		u, err := url.Parse(p.Endpoint)
		if err != nil {
			return nil, nil, fmt.Errorf("platform %s endpoint: %w", p.Name, err)
		}
		if adminToken == "" {
			adminToken = os.Getenv("ORDERSYNC_SIM_ADMIN_TOKEN")
		}
		if adminToken == "" {
			adminToken = DefaultSimAdminToken
		}
		admin := &sim.AdminClient{BaseURL: u.Scheme + "://" + u.Host, Token: adminToken}
		shop := path.Base(u.Path)
		// The truth as the platform shows it now, filtered by each order's
		// current updated_at, as the platform's own listing is: an order
		// updated since the cutoff is listed (and fetched) at its new time,
		// so it is not expected yet. The truth as of the cutoff would expect
		// its older version, which no listing returns any more.
		now, err := admin.TruthAsOf(ctx, shop, time.Time{})
		if lines {
			now, err = admin.TruthWithLines(ctx, shop, time.Time{})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("simulator ground truth of %s: %w", p.Name, err)
		}
		var out []verify.Expected
		shown := make(map[string]bool, len(now.Orders))
		for _, o := range now.Orders {
			shown[o.ID] = true
			if o.UpdatedAt.Before(cutoff) {
				out = append(out, verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt, HasLines: lines, Lines: simLines(o.Lines)})
			}
		}
		return out, shown, nil
	}
	out, err := listThroughConnector(ctx, p, cutoff, lines)
	return out, nil, err
}

// simLines are the truth's line items as the sim connector stores them:
// ids by position.
func simLines(items []sim.TruthLine) []connectors.OrderLine {
	if len(items) == 0 {
		return nil
	}
	out := make([]connectors.OrderLine, len(items))
	for i, it := range items {
		out[i] = connectors.OrderLine{ID: connectors.PositionLineID(i), SKU: it.SKU, Title: it.Title, Quantity: it.Quantity,
			UnitPrice: it.UnitPrice, Currency: it.Currency}
	}
	return out
}

// listThroughConnector pages through the platform from its start to cutoff,
// one interval at a time, keeping each order's newest version (and its
// lines, when asked and listed).
func listThroughConnector(ctx context.Context, p config.Platform, cutoff time.Time, lines bool) ([]verify.Expected, error) {
	conn, err := connectors.New(p)
	if err != nil {
		return nil, err
	}
	start, err := p.ResolveStart(time.Now())
	if err != nil {
		return nil, err
	}
	latest := map[string]verify.Expected{}
	for from := start; from.Before(cutoff); from = from.Add(p.Interval.D()) {
		to := from.Add(p.Interval.D())
		if to.After(cutoff) {
			to = cutoff
		}
		token := ""
		for page := 1; ; page++ {
			pg, err := conn.ListOrders(ctx, connectors.PageRequest{From: from, To: to, Token: token, PageSize: p.PageSize, Page: page})
			if err != nil {
				return nil, fmt.Errorf("list %s [%s, %s): %w", p.Name, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
			}
			for _, o := range pg.Orders {
				if e, ok := latest[o.ID]; !ok || o.UpdatedAt.After(e.UpdatedAt) {
					e = verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt}
					if lines && o.HasLines {
						e.HasLines, e.Lines = true, o.Lines
					}
					latest[o.ID] = e
				}
			}
			if pg.NextToken == "" {
				break
			}
			token = pg.NextToken
		}
	}
	return slices.Collect(maps.Values(latest)), nil
}

// listIDs prints the first ids of a category; -o json has them all.
func listIDs(w io.Writer, what string, ids []string) {
	const shown = 20
	for i, id := range ids {
		if i == shown {
			fmt.Fprintf(w, "  ... and %d more %s (all of them with -o json)\n", len(ids)-shown, what)
			return
		}
		fmt.Fprintf(w, "  %-7s %s\n", what, term(id))
	}
}
