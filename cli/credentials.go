package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

func newCredentialsCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Stored OAuth credentials: keys, apps, tokens, rotation",
		Long: `Stored credentials are OAuth tokens that rotate (Shopify expiring offline
tokens, Login with Amazon), kept in the store sealed with AES-256-GCM under
keys the operator holds outside it (` + credentials.KeysEnv + ` or
` + credentials.KeysFileEnv + `). A platform names one with
credentials: {stored: NAME}; the workers refresh it before it expires, once
per account across all workers. Secrets are read from an environment
variable or a file, never from a flag's value, and never printed.`,
		Example: "  ordersync credentials new-key\n" +
			"  ordersync credentials app set shopify-app --client-id abc --client-secret-env SHOPIFY_APP_SECRET\n" +
			"  ordersync credentials import shop-a --kind shopify --app shopify-app \\\n" +
			"      --token-url https://acme.myshopify.com/admin/oauth/access_token --refresh-token-env SHOP_A_REFRESH\n" +
			"  ordersync credentials list",
	}
	app2 := &cobra.Command{Use: "app", Short: "OAuth apps (client id and secret) that refresh stored tokens"}
	app2.AddCommand(newCredentialsAppSetCommand(app))
	cmd.AddCommand(newCredentialsNewKeyCommand(app), app2, newCredentialsImportCommand(app),
		newCredentialsListCommand(app), newCredentialsShowCommand(app), newCredentialsRotateKeyCommand(app),
		newCredentialsRemoveCommand(app))
	cmd.AddCommand(newCredentialsMigrateShopifyCommand(app))
	return cmd
}

// credentialManager opens the store's stored credentials with the keys of
// this process; without keys only the metadata commands work (needKeys).
func (a *App) credentialManager(ctx context.Context, needKeys bool) (*credentials.Manager, func(), error) {
	keys, err := credentials.LoadKeyring(nil)
	if err != nil && (needKeys || !errors.Is(err, credentials.ErrNoKeys)) {
		return nil, nil, Usage(err)
	}
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	cs, ok := store.CredentialsOf(st)
	if !ok {
		_ = st.Close()
		return nil, nil, fmt.Errorf("this store keeps no stored credentials")
	}
	return credentials.NewManager(cs, keys, nil, credentials.Options{}), func() { _ = st.Close() }, nil
}

// storedCredentials serves {stored: name} credentials from st to this
// worker's connectors, and reads their health for the worker's alerts and
// metrics (refreshes are counted in rec): nil, nil without
// ORDERSYNC_CREDENTIAL_KEYS (such a platform's fetches then fail naming the
// missing keys), an error for a keyring that does not parse.
func (a *App) storedCredentials(st store.Store, rec *metrics.Recorder) (*credentials.Manager, error) {
	keys, err := credentials.LoadKeyring(nil)
	switch {
	case errors.Is(err, credentials.ErrNoKeys):
		return nil, nil
	case err != nil:
		return nil, Usage(err)
	}
	cs, ok := store.CredentialsOf(st)
	if !ok {
		return nil, fmt.Errorf("this store keeps no stored credentials")
	}
	m := credentials.NewManager(cs, keys, nil, credentials.Options{Logger: a.Logger.With("component", "credentials"),
		OnRefresh: rec.CredentialRefreshed})
	a.Logger.Info("stored credentials enabled", "current_key", keys.CurrentID(), "keys", len(keys.IDs()))
	return m, nil
}

// maxSecretFile bounds a secret read from a file.
const maxSecretFile = 64 << 10

// readSecret reads a secret from the environment variable env or the file
// path (exactly one, unless optional and both empty). Errors name the
// variable or file, never the value.
func readSecret(what, env, path string, optional bool) (string, error) {
	switch {
	case env != "" && path != "":
		return "", Usage(fmt.Errorf("%s: give --%s-env or --%s-file, not both", what, what, what))
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || strings.TrimSpace(v) == "" {
			return "", Usage(fmt.Errorf("%s: environment variable %s is not set or empty", what, env))
		}
		return strings.TrimSpace(v), nil
	case path != "":
		f, err := os.Open(path)
		if err != nil {
			return "", Usage(fmt.Errorf("%s: %w", what, err))
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
		if err != nil {
			return "", Usage(fmt.Errorf("%s: read %s: %w", what, path, err))
		}
		if len(b) > maxSecretFile {
			return "", Usage(fmt.Errorf("%s: %s is longer than %d bytes", what, path, maxSecretFile))
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", Usage(fmt.Errorf("%s: %s is empty", what, path))
		}
		return strings.TrimSpace(string(b)), nil
	case optional:
		return "", nil
	}
	return "", Usage(fmt.Errorf("%s: give --%s-env VAR or --%s-file PATH (a secret is never a flag's value)", what, what, what))
}

func newCredentialsNewKeyCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "new-key",
		Short: "Print a new credential key entry (id:base64) for " + credentials.KeysEnv,
		Long: `Prints a new random AES-256 key as one entry id:base64. Put it FIRST in
` + credentials.KeysEnv + ` (or the file ` + credentials.KeysFileEnv + ` names), keeping the
old keys after it, restart or roll the workers, then run
ordersync credentials rotate-key; the old keys can then be removed.
The key is printed once and stored nowhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := credentials.NewKeyEntry(time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(app.Out, e)
			return nil
		},
	}
}

func newCredentialsAppSetCommand(app *App) *cobra.Command {
	var clientID, secretEnv, secretFile string
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Store or replace an OAuth app's client id and secret",
		Example: "  ordersync credentials app set shopify-app --client-id abc --client-secret-env SHOPIFY_APP_SECRET\n" +
			"  ordersync credentials app set lwa-app --client-id amzn1.application-oa2-client.x --client-secret-file /run/secrets/lwa",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(clientID) == "" {
				return Usage(fmt.Errorf("--client-id is required"))
			}
			secret, err := readSecret("client-secret", secretEnv, secretFile, false)
			if err != nil {
				return err
			}
			return app.withCredentialManager(cmd.Context(), true, func(m *credentials.Manager) error {
				st, err := m.PutApp(cmd.Context(), args[0], clientID, secret)
				if err != nil {
					return err
				}
				return printCredential(app, "stored", st)
			})
		},
	}
	cmd.Flags().StringVar(&clientID, "client-id", "", "the app's client id (not secret)")
	cmd.Flags().StringVar(&secretEnv, "client-secret-env", "", "environment variable holding the client secret")
	cmd.Flags().StringVar(&secretFile, "client-secret-file", "", "file holding the client secret")
	return cmd
}

func newCredentialsImportCommand(app *App) *cobra.Command {
	var kind, appName, tokenURL, shop, scope, sellerID string
	var refreshEnv, refreshFile, accessEnv, accessFile string
	var expiresIn, refreshExpiresIn time.Duration
	cmd := &cobra.Command{
		Use:   "import NAME",
		Short: "Store or replace a token credential obtained outside ordersync",
		Long: `Stores a refresh token (and optionally a current access token) obtained
outside ordersync under NAME, for platforms that name it with
credentials: {stored: NAME}. Replacing one (after the merchant re-authorized)
clears its last error; the workers use it from their next request.
Without an access token the first request refreshes.`,
		Example: "  ordersync credentials import shop-a --kind shopify --app shopify-app \\\n" +
			"      --token-url https://acme.myshopify.com/admin/oauth/access_token \\\n" +
			"      --refresh-token-env SHOP_A_REFRESH --access-token-env SHOP_A_ACCESS --expires-in 1h\n" +
			"  ordersync credentials import amazon-eu --kind lwa --app lwa-app \\\n" +
			"      --token-url https://api.amazon.com/auth/o2/token --refresh-token-file /run/secrets/amazon-eu",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			refresh, err := readSecret("refresh-token", refreshEnv, refreshFile, false)
			if err != nil {
				return err
			}
			access, err := readSecret("access-token", accessEnv, accessFile, true)
			if err != nil {
				return err
			}
			if access != "" && expiresIn <= 0 {
				return Usage(fmt.Errorf("--expires-in is required with an access token (how long it stays valid from now)"))
			}
			now := time.Now()
			t := credentials.Token{Kind: credentials.Kind(kind), App: appName, AccessToken: access, RefreshToken: refresh,
				TokenURL: tokenURL, Shop: shop, Scope: scope, SellingPartnerID: sellerID, ObtainedAt: now}
			if access != "" {
				t.AccessExpiresAt = now.Add(expiresIn)
			}
			if refreshExpiresIn > 0 {
				t.RefreshExpiresAt = now.Add(refreshExpiresIn)
			}
			return app.withCredentialManager(cmd.Context(), true, func(m *credentials.Manager) error {
				st, err := m.PutToken(cmd.Context(), args[0], t)
				if err != nil {
					if errors.Is(err, credentials.ErrInvalid) {
						return Usage(err)
					}
					return err
				}
				return printCredential(app, "stored", st)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kind, "kind", "", "shopify (expiring offline token) or lwa (Login with Amazon)")
	f.StringVar(&appName, "app", "", "the stored app (credentials app set) whose client id and secret refresh it")
	f.StringVar(&tokenURL, "token-url", "", "where the refresh grant is posted (Shopify: https://SHOP.myshopify.com/admin/oauth/access_token)")
	f.StringVar(&shop, "shop", "", "Shopify: the shop's myshopify.com host (gives the token URL when --token-url is not set)")
	f.StringVar(&scope, "scope", "", "the granted scopes, for the record")
	f.StringVar(&sellerID, "selling-partner-id", "", "Amazon: the selling partner id, for the record")
	f.StringVar(&refreshEnv, "refresh-token-env", "", "environment variable holding the refresh token")
	f.StringVar(&refreshFile, "refresh-token-file", "", "file holding the refresh token")
	f.StringVar(&accessEnv, "access-token-env", "", "environment variable holding a current access token (optional)")
	f.StringVar(&accessFile, "access-token-file", "", "file holding a current access token (optional)")
	durationDaysVar(f, &expiresIn, "expires-in", 0, "how long the access token stays valid from now (e.g. 1h)")
	durationDaysVar(f, &refreshExpiresIn, "refresh-expires-in", 0, "how long the refresh token stays valid from now (0: unknown)")
	return cmd
}

func newCredentialsListCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List stored credentials (metadata only: kind, app, expiries, last refresh and error)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.withCredentialManager(cmd.Context(), false, func(m *credentials.Manager) error {
				all, err := m.Health(cmd.Context())
				if err != nil {
					return err
				}
				if app.Output == "json" {
					if all == nil {
						all = []credentials.Status{}
					}
					return writeJSON(app, all)
				}
				tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tAPP\tACCESS EXPIRES\tREFRESH EXPIRES\tLAST REFRESH\tKEY\tLAST ERROR")
				for _, s := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", term(s.Name), s.Kind, term(s.App), when(s.AccessExpiresAt),
						when(s.RefreshExpiresAt), when(s.LastRefreshAt), term(s.KeyID), term(textclip.Clip(s.LastError, 120)))
				}
				return tw.Flush()
			})
		},
	}
}

func newCredentialsShowCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show one stored credential's metadata (never its secrets)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.withCredentialManager(cmd.Context(), false, func(m *credentials.Manager) error {
				s, ok, err := m.Show(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !ok {
					return notStored(args[0])
				}
				if app.Output == "json" {
					return writeJSON(app, s)
				}
				tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
				for _, row := range [][2]string{
					{"name", term(s.Name)}, {"kind", string(s.Kind)}, {"app", term(s.App)},
					{"access expires", when(s.AccessExpiresAt)}, {"refresh expires", when(s.RefreshExpiresAt)},
					{"last refresh", when(s.LastRefreshAt)}, {"last error", term(s.LastError)},
					{"needs re-authorization", fmt.Sprint(s.NeedsReauthorization)}, {"refreshing now", fmt.Sprint(s.Refreshing)},
					{"generation", fmt.Sprint(s.Generation)}, {"key", term(s.KeyID)}, {"updated", when(s.UpdatedAt)},
				} {
					fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
				}
				return tw.Flush()
			})
		},
	}
}

func newCredentialsRotateKeyCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-seal every stored credential with the current (first) key",
		Long: `Re-seals every stored credential not sealed with the first key of
` + credentials.KeysEnv + `, one at a time under its refresh lease, so running
workers keep refreshing meanwhile. When it reports no failures, the old
keys can be removed from the setting. Safe to run again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.withCredentialManager(cmd.Context(), true, func(m *credentials.Manager) error {
				rep, err := m.RotateKey(cmd.Context())
				if app.Output == "json" {
					if jerr := writeJSON(app, rep); jerr != nil {
						return jerr
					}
				} else {
					fmt.Fprintf(app.Out, "re-sealed %d credential(s) with key %s (%d write(s) retried after a race)\n", rep.Resealed, rep.Key, rep.Retried)
				}
				return err
			})
		},
	}
}

func newCredentialsRemoveCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Delete a stored credential (an app still used by a token is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.withCredentialManager(cmd.Context(), false, func(m *credentials.Manager) error {
				ok, err := m.Remove(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !ok {
					return notStored(args[0])
				}
				fmt.Fprintf(app.Out, "%s: removed\n", term(args[0]))
				return nil
			})
		},
	}
}

// withCredentialManager runs fn with the store's credential manager
// (needKeys: one that can seal) and closes the store after.
func (a *App) withCredentialManager(ctx context.Context, needKeys bool, fn func(m *credentials.Manager) error) error {
	m, done, err := a.credentialManager(ctx, needKeys)
	if err != nil {
		return err
	}
	defer done()
	return fn(m)
}

// notStored is the error for a name no credential is stored under.
func notStored(name string) error {
	return fmt.Errorf("stored credential %s: %w", term(name), credentials.ErrNotStored)
}

// printCredential says what a write did.
func printCredential(app *App, verb string, s credentials.Status) error {
	if app.Output == "json" {
		return writeJSON(app, s)
	}
	fmt.Fprintf(app.Out, "%s: %s %s at generation %d (key %s)\n", term(s.Name), verb, s.Kind, s.Generation, term(s.KeyID))
	return nil
}

// when is a time as the tables show it; "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
