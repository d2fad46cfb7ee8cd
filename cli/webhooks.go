package cli

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

// webhooksURLEnv is the public base URL platforms reach serve at, the
// default of --url.
const webhooksURLEnv = "ORDERSYNC_WEBHOOKS_URL"

func newWebhooksCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Keep the platforms' webhook subscriptions (the fast path) and show whether they are live",
		Long: `Platform webhooks are ordersync's fast path: ` + "`ordersync serve`" + ` takes them at
/webhooks/<kind>/<platform>, checks their HMAC signature and queues a refetch
of the order, so a change is stored seconds after it happened. Polling stays
the guarantee. See docs/webhooks.md.`,
	}
	cmd.AddCommand(newWebhooksSyncCommand(app), newWebhooksStatusCommand(app))
	return cmd
}

func newWebhooksSyncCommand(app *App) *cobra.Command {
	var platform, base string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Create the webhook subscriptions that are missing (Shopify orders/create, updated, cancelled; WooCommerce order.created, updated)",
		Long: `For each active Shopify platform (or --platform), lists the app's webhook
subscriptions through the Admin GraphQL API (webhookSubscriptions) and creates
those of ORDERS_CREATE, ORDERS_UPDATED and ORDERS_CANCELLED that do not point
at the platform's intake URL, <--url>/webhooks/shopify/<platform>
(webhookSubscriptionCreate). Shopify deletes a subscription after 8
consecutive failed deliveries: run sync on a schedule (e.g. every 15 minutes)
and it recreates them. --dry-run only reports.

For each active WooCommerce platform, lists the store's webhooks (GET
/wp-json/wc/v3/webhooks) and creates order.created and order.updated to
<--url>/webhooks/woocommerce/<platform> with the stored secret
webhooks-<platform> (POST), or activates one WooCommerce disabled (PUT).

--url is the public base URL the platforms reach serve at, behind the TLS
proxy (default $ORDERSYNC_WEBHOOKS_URL). The platform's own credential
authenticates (a stored one needs ORDERSYNC_CREDENTIAL_KEYS, as does the
WooCommerce secret), sent only to its endpoint.`,
		Example: "  ordersync webhooks sync --url https://ordersync.example.com\n" +
			"  ordersync webhooks sync --platform shopify-acme --dry-run",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if base == "" {
				base = os.Getenv(webhooksURLEnv)
			}
			if err := checkWebhooksURL(base); err != nil {
				return Usage(err)
			}
			ctx := cmd.Context()
			ps, done, err := app.webhookPlatforms(ctx, platform)
			if err != nil {
				return err
			}
			defer done()
			m, closeM, err := app.credentialManager(ctx, false)
			if err != nil {
				return err
			}
			defer closeM()
			var reps []webhookSyncRow
			failed := 0
			for _, p := range ps {
				row := webhookSyncRow{Platform: p.Name, Kind: p.Kind}
				row.Report, err = syncPlatform(ctx, p, m, webhooks.IntakeURL(base, p.Kind, p.Name), dryRun)
				if err != nil {
					failed++
					row.Error = textclip.Message(err.Error())
				}
				reps = append(reps, row)
			}
			if app.Output == "json" {
				if reps == nil {
					reps = []webhookSyncRow{}
				}
				if err := writeJSON(app, reps); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PLATFORM\tPRESENT\tCREATED\tMISSING\tURL\tNOTE")
				for _, r := range reps {
					note := r.Note
					if r.Error != "" {
						note = "error: " + r.Error
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", term(r.Platform), len(r.Report.Present), len(r.Report.Created),
						strings.Join(r.Report.Missing, ","), term(r.Report.URI), clipText(note, 200))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("webhooks sync: %d of %d platforms failed", failed, len(ps))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&platform, "platform", "", "only this platform")
	cmd.Flags().StringVar(&base, "url", "", "public base URL of serve, as the platform reaches it (default $"+webhooksURLEnv+")")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what is missing, create nothing")
	return cmd
}

type webhookSyncRow struct {
	Platform string              `json:"platform"`
	Kind     string              `json:"kind"`
	Report   webhooks.SyncReport `json:"report"`
	Note     string              `json:"note,omitempty"`
	Error    string              `json:"error,omitempty"`
}

func checkWebhooksURL(base string) error {
	if base == "" {
		return fmt.Errorf("--url (or $%s) is required: the public base URL the platforms reach serve at, e.g. https://ordersync.example.com", webhooksURLEnv)
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" {
		return fmt.Errorf("--url %q: want an absolute http(s) URL without a query", clipText(base, 100))
	}
	return nil
}

// webhookStatusRow is one platform's fast path.
type webhookStatusRow struct {
	Platform string `json:"platform"`
	Kind     string `json:"kind"`
	// Subscriptions are the Topics subscribed to this platform's intake
	// (Shopify; -1 when they could not be listed).
	Subscriptions int        `json:"subscriptions"`
	LastEventAt   *time.Time `json:"last_event_at,omitempty"`
	Events        int64      `json:"events"`
	Live          bool       `json:"live"`
	Error         string     `json:"error,omitempty"`
}

func newWebhooksStatusCommand(app *App) *cobra.Command {
	var platform string
	var within time.Duration
	var noList bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show per platform its webhook subscriptions, last event and whether the fast path is live",
		Long: `Shows, per active Shopify and WooCommerce platform (or --platform): how many of
the subscriptions sync keeps point at its intake (Shopify ORDERS_CREATE,
ORDERS_UPDATED, ORDERS_CANCELLED; WooCommerce order.created, order.updated,
active), listed through the platform's API unless --no-list, when serve last
accepted one of its events and how many it accepted. The fast path is live
when an event was accepted within --live-within (default 1h) and every
subscription is in place.`,
		Example: "  ordersync webhooks status\n  ordersync webhooks status --platform shopify-acme -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer func() { _ = st.Close() }()
			ps, done, err := app.webhookPlatforms(ctx, platform)
			if err != nil {
				return err
			}
			defer done()
			var m *credentials.Manager
			if !noList {
				mm, closeM, err := app.credentialManager(ctx, false)
				if err != nil {
					return err
				}
				defer closeM()
				m = mm
			}
			now := time.Now()
			rows := make([]webhookStatusRow, 0, len(ps))
			for _, p := range ps {
				row := webhookStatusRow{Platform: p.Name, Kind: p.Kind, Subscriptions: -1}
				a, ok, err := st.WebhookActivity(ctx, p.Name)
				if err != nil {
					return err
				}
				if ok {
					t := a.LastEventAt
					row.LastEventAt, row.Events = &t, a.Events
				}
				subsOK := true
				if !noList {
					row.Subscriptions, err = countSubscriptions(ctx, p, m)
					if err != nil {
						row.Error = textclip.Message(err.Error())
					}
					subsOK = row.Subscriptions == len(topicsOf(p))
				}
				row.Live = ok && now.Sub(a.LastEventAt) <= within && subsOK
				rows = append(rows, row)
			}
			if app.Output == "json" {
				return writeJSON(app, rows)
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tKIND\tSUBSCRIPTIONS\tLAST EVENT\tEVENTS\tLIVE\tERROR")
			for _, r := range rows {
				subs := "-"
				if r.Subscriptions >= 0 {
					n := len(webhooks.Topics)
					if r.Kind == webhooks.KindWooCommerce {
						n = len(webhooks.WooTopics)
					}
					subs = fmt.Sprintf("%d/%d", r.Subscriptions, n)
				}
				last := "never"
				if r.LastEventAt != nil {
					last = r.LastEventAt.UTC().Format(time.RFC3339) + " (" + now.Sub(*r.LastEventAt).Round(time.Second).String() + " ago)"
				}
				live := "no"
				if r.Live {
					live = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", term(r.Platform), r.Kind, subs, last, r.Events, live, clipText(r.Error, 160))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&platform, "platform", "", "only this platform")
	cmd.Flags().DurationVar(&within, "live-within", time.Hour, "live: an event accepted within this time")
	cmd.Flags().BoolVar(&noList, "no-list", false, "do not ask the platforms for their subscriptions (no credentials needed)")
	return cmd
}

// syncPlatform keeps p's subscriptions to intake.
func syncPlatform(ctx context.Context, p config.Platform, m *credentials.Manager, intake string, dryRun bool) (webhooks.SyncReport, error) {
	if p.Kind == webhooks.KindWooCommerce {
		admin, err := wooAdmin(p)
		if err != nil {
			return webhooks.SyncReport{URI: intake}, err
		}
		secret := ""
		if !dryRun {
			if secret, err = (&webhooks.StoredSecrets{Manager: m}).WebhookSecret(ctx, p); err != nil {
				return webhooks.SyncReport{URI: intake}, err
			}
		}
		return webhooks.SyncWoo(ctx, admin, intake, secret, dryRun)
	}
	admin, err := shopifyAdmin(ctx, p, m)
	if err != nil {
		return webhooks.SyncReport{URI: intake}, err
	}
	return webhooks.Sync(ctx, admin, intake, dryRun)
}

// topicsOf are the subscriptions sync keeps for p's kind.
func topicsOf(p config.Platform) []string {
	if p.Kind == webhooks.KindWooCommerce {
		return webhooks.WooTopics
	}
	return webhooks.Topics
}

// countSubscriptions counts the topics subscribed (and, for WooCommerce,
// active) to p's intake: a subscription whose URL path is the intake's,
// whatever host it names.
func countSubscriptions(ctx context.Context, p config.Platform, m *credentials.Manager) (int, error) {
	var subs []webhooks.Subscription
	if p.Kind == webhooks.KindWooCommerce {
		admin, err := wooAdmin(p)
		if err != nil {
			return -1, err
		}
		hooks, err := admin.List(ctx)
		if err != nil {
			return -1, err
		}
		for _, h := range hooks {
			if h.Status == "active" {
				subs = append(subs, webhooks.Subscription{Topic: h.Topic, URI: h.DeliveryURL})
			}
		}
	} else {
		admin, err := shopifyAdmin(ctx, p, m)
		if err != nil {
			return -1, err
		}
		if subs, err = admin.List(ctx); err != nil {
			return -1, err
		}
	}
	path := webhooks.Prefix + p.Kind + "/" + p.Name
	n := 0
	for _, t := range topicsOf(p) {
		if slices.ContainsFunc(subs, func(s webhooks.Subscription) bool {
			u, err := url.Parse(s.URI)
			return s.Topic == t && err == nil && u.Path == path
		}) {
			n++
		}
	}
	return n, nil
}

// wooAdmin is p's REST client for webhooks with p's consumer key and
// secret (a JSON credential, as the connector reads it).
func wooAdmin(p config.Platform) (*webhooks.WooAdmin, error) {
	raw, err := p.Credentials.Resolve()
	if err != nil {
		return nil, fmt.Errorf("platform %s: %w", p.Name, err)
	}
	var keys struct {
		Key    string `json:"consumer_key"`
		Secret string `json:"consumer_secret"`
	}
	if json.Unmarshal([]byte(raw), &keys) != nil || keys.Key == "" || keys.Secret == "" {
		return nil, fmt.Errorf("platform %s: credentials %s: the secret must be a JSON object with consumer_key, consumer_secret", p.Name, p.Credentials)
	}
	o, err := config.KindOptions[connectors.WooCommerceOptions](p)
	if err != nil {
		return nil, fmt.Errorf("platform %s: %w", p.Name, err)
	}
	return &webhooks.WooAdmin{Endpoint: p.Endpoint, ConsumerKey: keys.Key, ConsumerSecret: keys.Secret, InQuery: o.Auth == "query"}, nil
}

// webhookPlatforms are the active Shopify and WooCommerce platforms, or
// the one named (an error when it is not one of them).
func (a *App) webhookPlatforms(ctx context.Context, name string) ([]config.Platform, func(), error) {
	reg, done, err := a.openRegistry(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []config.Platform
	if name != "" {
		e, ok, err := reg.Get(ctx, accounts.ClassPlatform, name)
		if err != nil {
			done()
			return nil, nil, err
		}
		if !ok || e.State == accounts.Removed {
			done()
			return nil, nil, Usage(fmt.Errorf("--platform %s: no such platform (ordersync platform list)", clipText(name, 100)))
		}
		p, err := accounts.DecodePlatform(e)
		if err != nil {
			done()
			return nil, nil, err
		}
		if p.Kind != webhooks.KindShopify && p.Kind != webhooks.KindWooCommerce {
			done()
			return nil, nil, Usage(fmt.Errorf("--platform %s is of kind %s: webhooks are taken from shopify and woocommerce platforms", p.Name, p.Kind))
		}
		return []config.Platform{p}, done, nil
	}
	for _, kind := range []string{webhooks.KindShopify, webhooks.KindWooCommerce} {
		after := ""
		for {
			es, err := reg.List(ctx, accounts.Filter{Class: accounts.ClassPlatform, State: accounts.Active, Kind: kind, After: after})
			if err != nil {
				done()
				return nil, nil, err
			}
			for _, e := range es {
				p, err := accounts.DecodePlatform(e)
				if err != nil {
					done()
					return nil, nil, err
				}
				out = append(out, p)
			}
			if len(es) < accounts.MaxPage {
				break
			}
			after = es[len(es)-1].Name
		}
	}
	return out, done, nil
}

// shopifyAdmin is p's Admin API client with p's own access token.
func shopifyAdmin(ctx context.Context, p config.Platform, m *credentials.Manager) (*webhooks.ShopifyAdmin, error) {
	// The registry holds validated platforms: plain http only to loopback
	// or with allow_plaintext (config/plaintext.go), as the connector.
	var token string
	var err error
	if p.Credentials.Stored != "" {
		if m == nil {
			return nil, fmt.Errorf("platform %s: its credential is stored: ORDERSYNC_CREDENTIAL_KEYS is needed", p.Name)
		}
		src, err := m.Source(p.Credentials.Stored)
		if err != nil {
			return nil, fmt.Errorf("platform %s: %w", p.Name, err)
		}
		if token, err = src.Secret(ctx); err != nil {
			return nil, fmt.Errorf("platform %s: %w", p.Name, err)
		}
	} else if token, err = p.Credentials.Resolve(); err != nil {
		return nil, fmt.Errorf("platform %s: %w", p.Name, err)
	}
	o, err := config.KindOptions[connectors.ShopifyOptions](p)
	if err != nil {
		return nil, fmt.Errorf("platform %s: %w", p.Name, err)
	}
	return &webhooks.ShopifyAdmin{Endpoint: p.Endpoint, APIVersion: o.APIVersion, Token: token}, nil
}

// webhookIntake is serve's intake: the registry and the webhook log of
// the order service's store, secrets from the credential store, refetches
// through the order service. It returns the intake and the metrics
// handler serve exposes (behind the bearer token) at /metrics.
func (a *App) webhookIntake(ctx context.Context, ops *orderops.Service) (*webhooks.Handler, http.Handler, func(), error) {
	if ops.Registry == nil {
		return nil, nil, nil, errors.New("serve: the store keeps no account registry, which the webhook intake needs")
	}
	m, closeM, err := a.credentialManager(ctx, false)
	if err != nil {
		return nil, nil, nil, err
	}
	reg, mh := metrics.ServeRegistry()
	h, err := webhooks.New(webhooks.Options{Registry: ops.Registry, Log: ops.Store, Secrets: &webhooks.StoredSecrets{Manager: m},
		Refetch: ops, Metrics: metrics.NewWebhooks(reg), Logger: a.Logger.With("component", "webhooks")})
	if err != nil {
		closeM()
		return nil, nil, nil, err
	}
	return h, mh, closeM, nil
}

// bearerOnly serves h to requests carrying the API token only.
func bearerOnly(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ordersync"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
