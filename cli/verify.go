package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// DefaultSimAdminToken is the admin token of `ordersync dev`'s simulator.
const DefaultSimAdminToken = "demo-admin-token"

// ExitIncomplete is verify's exit status when it judged only part of the
// range it was asked for (interrupted, --timeout, or the platform could not
// be read further) and found no loss in that part.
const ExitIncomplete = 3

func newVerifyCommand(app *App) *cobra.Command {
	var platform, destination, from, until, adminToken string
	var timeout time.Duration
	settle := DefaultDeliverySettle
	lines := true
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare the store with a platform (missing, stale, extra orders, lines that differ), or a destination with the store (delivered vs accepted)",
		Long: `Compares what the store holds for a platform with what the platform shows,
for the orders updated in the judged range: from the cursor's start (the
start of its first window; --from) to its watermark (before it, the cursor
says every window is fetched; --until). An order the platform shows at a
version from before the start is not the cursor's to fetch, and one from
the watermark on is not due yet: neither is judged. Without a running
cursor, give --until; the start is then the platform's configured start
(a relative one resolved now, so later than the cursor's: fewer orders are
judged, never more). The output names the range judged and where each end
came from. For the simulator the comparison is with its ground truth; for
other kinds verify lists the platform's orders itself through the
connector, in windows of one interval that double while each fits in one
page (up to backfill_max_span).

  missing       the platform shows the order at a version updated in the
                range, and the store does not have it
  stale         the store holds an older version than that one (a newer
                stored version is fine: the cursor already fetched it)
  lines differ  the store holds the platform's version, but not its lines:
                a line is missing, extra, changed or out of place, or the
                store has no lines for it
  extra         the store holds an order, stored at a version updated in
                the range, that the platform does not show at all

Listing paces itself inside the account's rate limit, with the workers:
every request books a slot in the store's shared request slots (and
Shopify's GraphQL queries their points), the same the workers book, so
verify and the fleet together never exceed the platform's limit; verify
takes its share while they run. A 429 (after its Retry-After) or a
THROTTLED (after the time Shopify's bucket needs) is waited out, never a
failure, up to the platform's rate_limit_wait per page; a transient
failure (5xx, a timeout, a broken answer) is retried max(retries, 3)
times with the platform's retry_interval and retry_backoff. On a
terminal, a progress line on stderr shows the window reached, pages,
orders and waits.

Platforms list orders by their current update time, so an order updated
again after the watermark is judged later, at its new version: it is
neither missing (during a backfill its old window no longer lists it) nor
extra (the platform still shows it). For the simulator "shows" is its
ground truth now; other kinds are listed through the connector by update
time, where an order that moved past the range cannot be told from one
the platform dropped, so there it can show as extra (never as missing or
stale).

Lines are compared where the platform lists them (every kind but amazon
with api_version v0, and http without options.lines) and the store holds
the version the platform shows; a newer stored version is not compared.
Orders stored before lines were kept have none until fetched again:
reprocess their period. --lines=false skips the lines check.

Exits 1 when anything in the judged range is missing, stale or has other
lines. Orders of dead-lettered slices count as missing until the slices
are reprocessed. Ctrl-C, --timeout, or a platform that cannot be read
further (a permanent error, retries spent) end the listing early: verify
then judges the windows listed completely, prints that result with the
range it covered, and exits 3 (incomplete) when it found nothing missing
there, 1 when it did.

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
			"  ordersync verify --platform shop-eu --from -7d --timeout 30m\n" +
			"  ordersync verify --destination demo-receiver\n  ordersync verify --destination oms --settle 5m -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			switch {
			case platform != "" && destination != "":
				return Usage(fmt.Errorf("give --platform or --destination, not both"))
			case destination != "" && (from != "" || cmd.Flags().Changed("timeout")):
				return Usage(fmt.Errorf("--from and --timeout are for --platform"))
			case destination != "":
				return app.verifyDestination(ctx, destination, until, settle)
			case platform == "":
				return Usage(fmt.Errorf("--platform or --destination is required"))
			case cmd.Flags().Changed("settle"):
				return Usage(fmt.Errorf("--settle is for --destination; a platform's cutoff is --until (default the watermark)"))
			case timeout < 0:
				return Usage(fmt.Errorf("--timeout must not be negative, got %s", timeout))
			}
			return app.verifyPlatform(ctx, verifyArgs{platform: platform, from: from, until: until, adminToken: adminToken, lines: lines, timeout: timeout})
		},
	}
	cmd.Flags().StringVarP(&platform, "platform", "p", "", "platform name (or --destination)")
	cmd.Flags().StringVar(&destination, "destination", "", "destination name: delivered vs accepted (see above)")
	durationDaysVar(cmd.Flags(), &settle, "settle", settle, "with --destination: changes accepted this recently are not yet expected delivered")
	cmd.Flags().BoolVar(&lines, "lines", true, "compare the lines of each order too (one query for all of the platform's lines)")
	cmd.Flags().StringVar(&from, "from", "", "with --platform: judge orders updated from this time: RFC3339 or relative (-7d); default the cursor's start")
	cmd.Flags().StringVar(&until, "until", "", "judge orders updated (with --destination: changes accepted) before this time: RFC3339 or relative (-10m); default the watermark (now minus --settle)")
	durationDaysVar(cmd.Flags(), &timeout, "timeout", 0, "with --platform: stop listing after this long and report the range judged so far (exit 3); 0: no limit")
	cmd.Flags().StringVar(&adminToken, "sim-admin-token", "", "simulator admin token (default $ORDERSYNC_SIM_ADMIN_TOKEN or the dev demo token)")
	return cmd
}

type verifyArgs struct {
	platform, from, until, adminToken string
	lines                             bool
	timeout                           time.Duration
}

// verifyOutcome is verify --platform's result: the report over the range
// judged, the range asked for, and how far the listing got.
type verifyOutcome struct {
	Report verify.Report `json:"report"`
	// Until is the end of the range asked for (kept from before ranges).
	Until time.Time `json:"until"`
	// Asked is the range asked for, FromIs and UntilIs where its ends
	// came from; Report.Judged is the part judged.
	Asked    verify.Range `json:"asked"`
	FromIs   string       `json:"from_is"`
	UntilIs  string       `json:"until_is"`
	Complete bool         `json:"complete"`
	// Stopped says why the listing ended early (empty when complete).
	Stopped  string           `json:"stopped,omitempty"`
	Progress *verify.Progress `json:"progress,omitempty"`
}

func (a *App) verifyPlatform(ctx context.Context, args verifyArgs) error {
	p, err := a.verifySettings(ctx, args.platform)
	if err != nil {
		return err
	}
	asked, err := a.verifyRange(ctx, p, args.from, args.until)
	if err != nil {
		return err
	}
	rng := asked.Range
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()

	out := verifyOutcome{Until: rng.To, Asked: rng, FromIs: asked.fromIs, UntilIs: asked.untilIs}
	judged := verify.Range{From: rng.From, To: rng.From}
	var expected []verify.Expected
	var shown map[string]bool
	var stop error
	if rng.From.Before(rng.To) {
		lctx, cancel := signalContext(ctx)
		defer cancel()
		if args.timeout > 0 {
			var cancelT context.CancelFunc
			lctx, cancelT = context.WithTimeout(lctx, args.timeout)
			defer cancelT()
		}
		if p.Kind == "sim" {
			expected, shown, stop = simExpected(lctx, p, args.adminToken, args.lines)
			if stop == nil {
				judged = rng
			} else if lctx.Err() == nil {
				return stop // nothing judged, and not interrupted: a plain failure
			}
		} else {
			var listed verify.Listed
			listed, stop = a.listPaced(lctx, p, rng, asked.statedRate, args.lines)
			expected, judged, out.Progress = listed.Expected, listed.Covered, &listed.Progress
		}
		if stop != nil {
			out.Stopped = stopReason(lctx, stop)
		}
		cancel() // a second Ctrl-C while the store is read ends the process
	} else {
		judged = verify.Range{From: rng.From, To: rng.From} // empty: the watermark has not passed the start
	}
	// The store is read even when the listing was interrupted: the
	// partial result is the point of stopping early.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	out.Report, err = compareStored(sctx, st, args.platform, expected, judged, shown, args.lines)
	if err != nil {
		return err
	}
	out.Complete = stop == nil
	if err := a.printVerify(out); err != nil {
		return err
	}
	r := out.Report
	if !r.OK() {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %d missing, %d stale, %d lines differ in %s",
			args.platform, len(r.Missing), len(r.Stale), len(r.LinesDiffer), r.Judged)}
	}
	if !out.Complete {
		return &ExitError{Code: ExitIncomplete, Err: fmt.Errorf("%s: incomplete: judged %s of %s (%s)",
			args.platform, r.Judged, rng, out.Stopped)}
	}
	return nil
}

// stopReason says in a line why the listing ended early: the listing's
// context (Ctrl-C, --timeout), else the error (a request's own timeout is
// an error like any other).
func stopReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return "interrupted"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "--timeout reached"
	}
	return verify.Clip(err)
}

func (a *App) printVerify(out verifyOutcome) error {
	if a.Output == "json" {
		return writeJSON(a, out)
	}
	r := out.Report
	fmt.Fprintf(a.Out, "%s: judged orders updated in %s: from %s, until %s\n", r.Platform, out.Asked, out.FromIs, out.UntilIs)
	if !out.Asked.From.Before(out.Asked.To) {
		fmt.Fprintf(a.Out, "%s: nothing to judge yet: the end is not after the start (a cursor whose watermark has not left its start)\n", r.Platform)
	}
	if !out.Complete {
		fmt.Fprintf(a.Out, "%s: INCOMPLETE (%s): judged %s only\n", r.Platform, term(out.Stopped), r.Judged)
	}
	if pr := out.Progress; pr != nil {
		fmt.Fprintf(a.Out, "%s: listed %d windows, %d pages (%d requests, paced at %g/s with the workers), %d orders; waited out %d rate-limit answers and %d booked-out slots, retried %d failures\n",
			r.Platform, pr.Windows, pr.Pages, pr.Requests, pr.Pace, pr.Orders, pr.RateLimited, pr.SlotWaits, pr.Retries)
	}
	fmt.Fprintf(a.Out, "%s: %d orders updated before %s (since %s) checked: %d missing, %d stale, %d lines differ, %d extra\n",
		r.Platform, r.Checked, r.Judged.To.Format(time.RFC3339), r.Judged.From.Format(time.RFC3339), len(r.Missing), len(r.Stale), len(r.LinesDiffer), len(r.Extra))
	listIDs(a.Out, "missing", r.Missing)
	listIDs(a.Out, "stale", r.Stale)
	listIDs(a.Out, "lines differ", r.LinesDiffer)
	return nil
}

// listPaced lists the platform through its connector inside the account's
// rate limit: the request slots (and points) the workers book, in the
// store's database, so verify and the fleet share one budget, at the
// rate the platform last stated to the cursor when that is lower.
func (a *App) listPaced(ctx context.Context, p config.Platform, rng verify.Range, statedRate float64, lines bool) (verify.Listed, error) {
	none := verify.Listed{Covered: verify.Range{From: rng.From, To: rng.From}}
	conn, err := connectors.New(p)
	if err != nil {
		return none, err
	}
	slots, err := quota.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return none, fmt.Errorf("the account's rate limit: %w", err)
	}
	defer slots.Close()
	lim := activities.NewLimiters()
	lim.Shared = slots
	lim.Report(p.Name, statedRate) // a lower rate the platform stated to the fleet holds for verify too
	l := &verify.Lister{Conn: conn, Settings: p.Settings(), Pacer: lim, Lines: lines}
	progress := newProgressLine(a.Err, p.Name)
	defer progress.done()
	l.OnPage = progress.show
	return l.List(ctx, rng)
}

// progressLine shows a listing's progress on one line of a terminal
// (stderr); nothing when stderr is not one.
type progressLine struct {
	w        io.Writer
	platform string
	shown    bool
}

func newProgressLine(w io.Writer, platform string) *progressLine {
	f, ok := w.(*os.File)
	if !ok {
		return &progressLine{}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return &progressLine{}
	}
	return &progressLine{w: w, platform: platform}
}

func (p *progressLine) show(pr verify.Progress) {
	if p.w == nil {
		return
	}
	p.shown = true
	fmt.Fprintf(p.w, "\r\x1b[K%s: listed to %s: %d windows, %d pages, %d orders, %d rate-limit waits",
		term(p.platform), pr.Reached.UTC().Format(time.RFC3339), pr.Windows, pr.Pages, pr.Orders, pr.RateLimited+pr.SlotWaits)
}

func (p *progressLine) done() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
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

// verifyRange is the range of update times to judge, and where each end
// came from: from --from, else the cursor's start; until --until, else the
// cursor's watermark. The cursor is asked only when a flag is missing;
// without one, --until is required and the start falls back to the
// platform's configured start (a relative one resolved now: later than
// the cursor's, so fewer orders are judged, never more).
func (a *App) verifyRange(ctx context.Context, p config.Platform, from, until string) (judgedRange, error) {
	now := time.Now()
	j := judgedRange{fromIs: "--from", untilIs: "--until"}
	var err error
	if until != "" {
		if j.To, err = parseTime("until", until, now); err != nil {
			return j, err
		}
	}
	if from != "" {
		if j.From, err = parseTime("from", from, now); err != nil {
			return j, err
		}
	}
	var cursor api.CursorStatus
	found, why := false, ""
	if from == "" || until == "" {
		cursor, found, why, err = a.verifyCursor(ctx, p.Name)
		if err != nil && until == "" {
			return j, err
		}
	}
	if found {
		j.statedRate = cursor.StatedRate
	}
	if until == "" {
		if !found {
			return j, Usage(fmt.Errorf("the cursor of %s is not running, so it has no watermark; pass --until", p.Name))
		}
		j.To, j.untilIs = cursor.Watermark.UTC(), "the cursor's watermark"
	}
	if from == "" {
		if found && !cursor.Start.IsZero() {
			j.From, j.fromIs = cursor.Start.UTC(), "the cursor's start"
		} else {
			if j.From, err = p.ResolveStart(now); err != nil {
				return j, fmt.Errorf("platform %s start: %w", p.Name, err)
			}
			j.fromIs = fmt.Sprintf("the configured start %q (%s)", p.Start, why)
		}
	}
	return j, nil
}

// judgedRange is the range asked for, where its ends came from, and the
// request rate the platform last stated to the cursor (0: none known).
type judgedRange struct {
	verify.Range
	fromIs, untilIs string
	statedRate      float64
}

// verifyCursor asks the platform's cursor for its status. why says, when
// it was not found or could not be asked, what happened.
func (a *App) verifyCursor(ctx context.Context, platform string) (api.CursorStatus, bool, string, error) {
	c, err := a.Dial(ctx)
	if err != nil {
		return api.CursorStatus{}, false, "the cursor could not be asked: " + clipText(err.Error(), 200), err
	}
	defer c.Close()
	st, found, err := cursorStatus(ctx, c, platform)
	switch {
	case err != nil:
		return st, false, "the cursor could not be asked: " + clipText(err.Error(), 200), err
	case !found:
		return st, false, "no cursor runs", nil
	}
	return st, true, "", nil
}

// compareStored reads what the store holds for platform, in one query
// (with the lines when asked), and compares it with the platform's
// versions in the range judged (verify.TrimExtraIn says what is extra).
func compareStored(ctx context.Context, st store.Store, platform string, expected []verify.Expected, judged verify.Range, shown map[string]bool, lines bool) (verify.Report, error) {
	expected = verify.InRange(expected, judged)
	if !lines {
		stored, err := st.OrderVersions(ctx, platform)
		if err != nil {
			return verify.Report{}, err
		}
		return verify.TrimExtraIn(verify.Compare(platform, expected, stored), stored, judged, shown), nil
	}
	stored, err := st.OrderLines(ctx, platform)
	if err != nil {
		return verify.Report{}, err
	}
	versions := make(map[string]time.Time, len(stored))
	for id, s := range stored {
		versions[id] = s.UpdatedAt
	}
	return verify.TrimExtraIn(verify.CompareLines(platform, expected, stored), versions, judged, shown), nil
}

// simExpected is the simulator's ground truth as the platform shows it now
// (with each version's lines when asked), and which order ids it shows at
// all. The caller keeps the versions in the range judged.
func simExpected(ctx context.Context, p config.Platform, adminToken string, lines bool) ([]verify.Expected, map[string]bool, error) {
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
	// The truth as the platform shows it now, judged by each order's
	// current updated_at, as the platform's own listing is: an order
	// updated since the watermark is listed (and fetched) at its new time,
	// so it is not expected yet. The truth as of the watermark would expect
	// its older version, which no listing returns any more.
	var now *sim.Truth
	if lines {
		now, err = admin.TruthWithLines(ctx, shop, time.Time{})
	} else {
		now, err = admin.TruthAsOf(ctx, shop, time.Time{})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("simulator ground truth of %s: %w", p.Name, err)
	}
	out := make([]verify.Expected, 0, len(now.Orders))
	shown := make(map[string]bool, len(now.Orders))
	for _, o := range now.Orders {
		shown[o.ID] = true
		out = append(out, verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt, HasLines: lines, Lines: simLines(o.Lines)})
	}
	return out, shown, nil
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
