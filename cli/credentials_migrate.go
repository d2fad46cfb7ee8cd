package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Migration results, one per platform.
const (
	migrated      = "migrated"
	alreadyStored = "already stored"
	wouldMigrate  = "would migrate"
	migrateFailed = "failed"
)

// migration is what migrate-shopify did to one platform.
type migration struct {
	Platform string `json:"platform"`
	Result   string `json:"result"`
	// From is the reference before (env:X, file:F), To after (stored:P).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Resumed: the stored credential was there from an earlier run that
	// stopped before the platform was edited; only the edit was made.
	Resumed  bool   `json:"resumed,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	Note     string `json:"note,omitempty"`
	Error    string `json:"error,omitempty"`
}

func newCredentialsMigrateShopifyCommand(app *App) *cobra.Command {
	var appName string
	var all, dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate-shopify PLATFORM... --app APP",
		Short: "Move shopify platforms off static tokens onto expiring offline tokens (token exchange)",
		Long: `Shopify rejects the non-expiring offline tokens of public apps from
2027-01-01. For each named shopify platform whose credentials are {env} or
{file}, this reads the static token on this machine, exchanges it at the
shop's /admin/oauth/access_token for an expiring offline token and its
refresh token (Shopify's token exchange, with the stored app's client id
and secret and expiring=1), stores the pair as the stored credential named
like the platform, and then points the platform at it
(credentials: {stored: PLATFORM}), guarded by the revision read. The
workers use it from their next request; nothing restarts. The static
token stops opening the Admin API at the exchange.

The pair is stored before the platform is edited. If the edit fails (or
the run stops in between), running the command again finds the stored
credential and only edits the platform. If the exchange's answer is lost,
running it again within 7 days gets the same pair from Shopify.

Tokens of custom apps (created in the shop's admin) are not migrated:
they are exempt and keep working.

--all migrates every registered shopify platform still on a static
token; --dry-run lists what would be migrated and changes nothing.
One line per platform; the exit status is 1 if any failed.`,
		Example: "  ordersync credentials migrate-shopify shopify-acme --app shopify-app\n" +
			"  ordersync credentials migrate-shopify --all --app shopify-app --dry-run",
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return Usage(fmt.Errorf("give platform names or --all, not both"))
			case !all && len(args) == 0:
				return Usage(fmt.Errorf("give the shopify platforms to migrate, or --all"))
			case strings.TrimSpace(appName) == "":
				return Usage(fmt.Errorf("--app is required: the stored app (ordersync credentials app set) whose client id and secret the tokens were issued to"))
			}
			return runMigrateShopify(cmd.Context(), app, args, appName, all, dryRun)
		},
	}
	cmd.Flags().StringVar(&appName, "app", "", "the stored app (credentials app set) the shops' tokens belong to; it refreshes the new tokens")
	cmd.Flags().BoolVar(&all, "all", false, "every registered shopify platform still on an {env} or {file} token")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be migrated; change nothing")
	return cmd
}

// runMigrateShopify migrates each platform in turn; one's failure does
// not stop the others.
func runMigrateShopify(ctx context.Context, app *App, names []string, appName string, all, dryRun bool) error {
	m, doneCreds, err := app.credentialManager(ctx, !dryRun)
	if err != nil {
		return err
	}
	defer doneCreds()
	var svc *accounts.Service
	var reg accounts.Registry
	if dryRun {
		r, done, err := app.openRegistry(ctx)
		if err != nil {
			return err
		}
		defer done()
		reg = r
	} else {
		// Dialled before anything is exchanged: the edit signals the
		// cursor (its settings name the registry revision).
		s, _, done, err := app.accountService(ctx)
		if err != nil {
			return err
		}
		defer done()
		svc, reg = s, s.Registry
	}
	if err := checkMigrationApp(ctx, m, appName); err != nil {
		return Usage(err)
	}
	if all {
		names = nil
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassPlatform, Kind: "shopify"}, func(e accounts.Entry) error {
			p, err := accounts.DecodePlatform(e)
			if err != nil || p.Credentials.Env != "" || p.Credentials.File != "" {
				names = append(names, e.Name) // undecodable: reported as failed
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	mg := migrator{m: m, svc: svc, reg: reg, app: appName, dryRun: dryRun}
	var results []migration
	failed := 0
	for _, name := range names {
		r := mg.one(ctx, name)
		if r.Result == migrateFailed {
			failed++
		}
		results = append(results, r)
		if app.Output != "json" {
			printMigration(app, r)
		}
	}
	if app.Output == "json" {
		if results == nil {
			results = []migration{}
		}
		if err := writeJSON(app, results); err != nil {
			return err
		}
	} else if len(names) == 0 {
		fmt.Fprintln(app.Out, "no registered shopify platform is on a static token")
	}
	if failed > 0 {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d of %d shopify platform(s) not migrated", failed, len(names))}
	}
	return nil
}

// checkMigrationApp refuses an app that is not stored (metadata only, so
// a dry run needs no keys).
func checkMigrationApp(ctx context.Context, m *credentials.Manager, name string) error {
	s, ok, err := m.Show(ctx, name)
	switch {
	case err != nil:
		return err
	case !ok || s.Kind != credentials.KindApp:
		return fmt.Errorf("--app %s is not a stored app: store its client id and secret first (ordersync credentials app set %s --client-id ... --client-secret-env ...)", term(name), term(name))
	}
	return nil
}

func printMigration(app *App, r migration) {
	line := term(r.Platform) + ": " + r.Result
	switch {
	case r.Result == migrateFailed:
		line += ": " + r.Error
	case r.From != "" && r.To != "":
		line += " (" + term(r.From) + " -> " + term(r.To)
		if r.Revision != 0 {
			line += fmt.Sprintf(", revision %d", r.Revision)
		}
		line += ")"
	case r.To != "":
		line += " (" + term(r.To) + ")"
	}
	if r.Resumed {
		line += "; resumed: the stored credential was there from an earlier run"
	}
	if r.Note != "" {
		line += "; " + r.Note
	}
	fmt.Fprintln(app.Out, line)
}

// migrator migrates one platform at a time.
type migrator struct {
	m      *credentials.Manager
	svc    *accounts.Service // nil on a dry run
	reg    accounts.Registry
	app    string
	dryRun bool
}

// one migrates the platform name. The result's error names the platform
// and the reason, never a token.
func (g migrator) one(ctx context.Context, name string) migration {
	r := migration{Platform: name}
	var static string
	fail := func(format string, args ...any) migration {
		msg := fmt.Sprintf(format, args...)
		if static != "" {
			msg = strings.ReplaceAll(msg, static, "[redacted]") // never expected; never printed either
		}
		r.Result, r.Error = migrateFailed, term(textclip.Message(msg))
		return r
	}
	e, found, err := g.reg.Get(ctx, accounts.ClassPlatform, name)
	switch {
	case err != nil:
		return fail("read the registry: %v", err)
	case !found:
		return fail("no platform %s is registered", name)
	case e.State == accounts.Removed:
		return fail("platform %s was removed (revision %d)", name, e.Revision)
	case e.Kind != "shopify":
		return fail("platform %s is of kind %s, not shopify: only shopify tokens are exchanged", name, e.Kind)
	}
	p, err := accounts.DecodePlatform(e)
	if err != nil {
		return fail("platform %s: the registered settings do not decode: %v", name, err)
	}
	ref := p.Credentials
	if ref.Stored != "" {
		r.Result, r.To = alreadyStored, ref.String()
		return r
	}
	r.From, r.To = ref.String(), config.CredentialRef{Stored: name}.String()
	target, err := credentials.ShopifyTokenURL(p.Endpoint)
	if err != nil {
		return fail("platform %s: endpoint: %v", name, err)
	}
	if err := credentials.CheckName(name); err != nil {
		return fail("platform %s: its name cannot name a stored credential: %v", name, err)
	}
	// A stored credential of this name: an earlier run stored the pair
	// and stopped before the edit, which is all that is left to do. Its
	// metadata says whether it is one (the token URL is checked below,
	// with the keys).
	st, stored, err := g.m.Show(ctx, name)
	if err != nil {
		return fail("platform %s: read stored credential %s: %v", name, name, err)
	}
	if stored && (st.Kind != credentials.KindShopify || st.App != g.app) {
		return fail("platform %s: stored credential %s exists and is a %s token of app %q, not this migration's (app %s); remove it or migrate by hand",
			name, name, st.Kind, st.App, g.app)
	}
	if !stored {
		static, err = ref.Resolve()
		if err != nil {
			return fail("platform %s: read its static token on this machine: %v", name, err)
		}
	}
	if g.dryRun {
		r.Result = wouldMigrate
		r.Resumed = stored
		return r
	}
	if stored {
		kind, _, tokenURL, ok, err := g.m.StoredTokenTarget(ctx, name)
		switch {
		case err != nil:
			return fail("platform %s: open stored credential %s: %v", name, name, err)
		case !ok || kind != credentials.KindShopify || tokenURL != target:
			return fail("platform %s: stored credential %s refreshes at another shop's token URL; remove it or migrate by hand", name, name)
		}
		r.Resumed = true
	} else {
		if _, err := g.m.ExchangeShopifyOffline(ctx, name, g.app, p.Endpoint, static); err != nil {
			return fail("%v", err) // it names the credential, which is named like the platform
		}
	}
	// The pair is committed: now the platform may name it. Guarded by the
	// revision read above, so an edit made meanwhile is not overwritten.
	out, err := g.svc.EditPlatform(ctx, name, e.Revision, func(p *config.Platform) error {
		p.Credentials = config.CredentialRef{Stored: name}
		return nil
	})
	var ee *accounts.EngineError
	switch {
	case errors.As(err, &ee):
		// The registry holds the edit, which is what the workers read;
		// only the cursor's settings signal failed.
		r.Note = "the registry is edited, but " + term(textclip.Message(ee.Error()))
		out = ee.Entry
	case err != nil:
		return fail("platform %s: the token is stored as %s, but the platform was not edited: %v; run this again to edit it", name, name, err)
	}
	r.Result, r.Revision = migrated, out.Revision
	return r
}
