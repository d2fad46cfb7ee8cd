package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
)

func newPlatformAddCommand(app *App) *cobra.Command {
	var kind, endpoint, credEnv, credFile, credStored string
	var sets []string
	var opts accounts.AddOptions
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Register a platform and start its cursor (no worker restart)",
		Long: `Registers a platform in the account registry (the store's registry table)
and starts its cursor. The running workers serve it within seconds: accounts
of a kind share the task queue orders-<kind>, with a fairness key each.

The settings are built like a platforms file entry: ordersync's defaults,
the kind's defaults, then --kind, --endpoint, --credentials-env,
--credentials-file or --credentials-stored, and each --set key=value (a dotted key, a YAML value).
With -f FILE and no --kind, the platform NAME is taken from the file,
merged with the file's default block. Nothing is written when anything is
invalid: every problem is printed, naming the field.

A removed platform's name is taken again only with --reuse-removed.`,
		Example: "  ordersync platform add shopify-acme --kind shopify --endpoint https://acme.myshopify.com \\\n" +
			"      --credentials-env SHOPIFY_ACME_TOKEN --set options.api=graphql --set interval=10m\n" +
			"  ordersync platform add sim-new -f examples/demo-platforms.yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := toAdd(app, args[0], kind, "(and --endpoint, credentials)", func(f *config.File) (config.Platform, error) {
				ps, err := SelectPlatforms(f, args)
				if err != nil {
					return config.Platform{}, err
				}
				return ps[0], nil
			}, func() (config.Platform, error) {
				return platformFromFlags(args[0], kind, endpoint, config.CredentialRef{Env: credEnv, File: credFile, Stored: credStored}, sets)
			})
			if err != nil {
				return err
			}
			return runAdd(cmd, app, func(ctx context.Context, svc *accounts.Service) (accounts.Entry, error) {
				return svc.AddPlatform(ctx, p, opts)
			}, printEntry)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "platform kind: shopify, amazon, ebay, woocommerce, http, sim")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the platform's API base URL")
	cmd.Flags().StringVar(&credEnv, "credentials-env", "", "environment variable (on the workers) holding the credential")
	cmd.Flags().StringVar(&credFile, "credentials-file", "", "file (on the workers) holding the credential")
	cmd.Flags().StringVar(&credStored, "credentials-stored", "", "stored credential (ordersync credentials import, or an OAuth install) holding rotating tokens")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "a setting as key=value (dotted key, YAML value); repeatable")
	cmd.Flags().BoolVar(&opts.Paused, "paused", false, "register it paused (its cursor starts paused)")
	cmd.Flags().BoolVar(&opts.ReuseRemoved, "reuse-removed", false, "take the name of a removed platform")
	return cmd
}

func newPlatformEditCommand(app *App) *cobra.Command {
	var flags editFlags
	cmd := &cobra.Command{
		Use:   "edit NAME",
		Short: "Change a registered platform's settings (running cursor and workers follow)",
		Long: `Changes settings of a registered platform: each --set key=value (dotted key,
YAML value) and --unset key, validated as a whole; nothing is written when
anything is invalid. The workers use a new endpoint, credential reference
or options from their next request (they resolve identity from the
registry by name); the cursor gets the new tuning at once.

With --revision N the edit applies only if the platform is still at
revision N (someone else's edit in between is an error, exit 1).`,
		Example: "  ordersync platform edit shopify-acme --set interval=5m --set rate_limit.rps=1\n" +
			"  ordersync platform edit shopify-acme --set endpoint=https://acme-2.myshopify.com --revision 12",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEdit(cmd, app, args[0], flags, (*accounts.Service).EditPlatform, editPlatform, printEntry)
		},
	}
	flags.register(cmd, "platform")
	return cmd
}

func newPlatformRemoveCommand(app *App) *cobra.Command {
	var opts accounts.RemoveOptions
	cmd := &cobra.Command{
		Use:   "remove NAME...",
		Short: "Remove platforms: their cursors end and nothing more is fetched for them",
		Long: `Marks each platform removed in the registry, then cancels its cursor and its
slices in flight. Workers refuse the platform's requests from the moment the
registry says removed, so nothing is fetched for it afterwards. Its stored
orders stay in the store. Its dead-letter workflow stays for inspection
unless --discard-dead-letters ends it.

The name stays taken: adding it again needs --reuse-removed.`,
		Example: "  ordersync platform remove shopify-old\n  ordersync platform remove shopify-old --discard-dead-letters",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRemove(cmd, app, args, func(ctx context.Context, svc *accounts.Service, name string) (accounts.Entry, error) {
				return svc.RemovePlatform(ctx, name, opts)
			}, printEntry)
		},
	}
	cmd.Flags().BoolVar(&opts.DiscardDeadLetters, "discard-dead-letters", false, "end the platform's dead-letter workflow too")
	return cmd
}

// registryError maps the registry's refusals to usage errors (exit 2:
// nothing changed) and leaves the rest as failures.
func registryError(err error) error {
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ve), errors.Is(err, accounts.ErrNotFound), errors.Is(err, accounts.ErrExists),
		errors.Is(err, accounts.ErrRemovedName):
		return Usage(err)
	}
	return err
}
