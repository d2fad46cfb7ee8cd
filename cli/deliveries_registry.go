package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// Destinations are registry data, as platforms are: `deliveries add`,
// `edit` and `remove` write the registry and start, reconfigure or end the
// Delivery workflow; the running workers resolve a destination by name
// from the registry and serve its task queue, so nothing restarts.

func newDeliveriesAddCommand(app *App) *cobra.Command {
	var kind, url, secretEnv, secretFile string
	var sets []string
	var opts accounts.AddOptions
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Register a destination and start its Delivery (no worker restart)",
		Long: `Registers a destination in the account registry and starts its Delivery
workflow. The running workers deliver to it within seconds: they resolve
its URL and secret reference from the registry by name, and serve its task
queue (default deliveries) once a destination uses it.

The settings are built like a destinations block entry: the destination
defaults, then --kind, --url, --secret-env or --secret-file, and each
--set key=value (a dotted key, a YAML value: batch_size=50,
rate_limit.rps=5, platforms=[shop-a]). With -f FILE and no --kind, the
destination NAME is taken from the file's destinations block. Nothing is
written when anything is invalid: every problem is printed, naming the
field.

A new destination starts with every change the feed retains. A removed
destination's name is taken again only with --reuse-removed.`,
		Example: "  ordersync deliveries add oms --kind webhook --url https://oms.example.com/hooks/orders \\\n" +
			"      --secret-env OMS_WEBHOOK_SECRET --set batch_size=50\n" +
			"  ordersync deliveries add bus --kind nats --url tls://nats.internal:4222 --set subject=orders\n" +
			"  ordersync deliveries add oms -f platforms.yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := toAdd(app, args[0], kind, "(webhook, nats or kafka) and its settings", func(f *config.File) (config.Destination, error) {
				d, ok := f.Destination(args[0])
				if !ok {
					return d, Usage(fmt.Errorf("%s has no destination %q (its destinations: %s)", f.Path, clipText(args[0], 100),
						joinOrNone(f.DestinationNames())))
				}
				return d, nil
			}, func() (config.Destination, error) {
				return destinationFromFlags(args[0], kind, url, config.CredentialRef{Env: secretEnv, File: secretFile}, sets)
			})
			if err != nil {
				return err
			}
			return runAdd(cmd, app, func(ctx context.Context, svc *accounts.Service) (accounts.Entry, error) {
				return svc.AddDestination(ctx, d, opts)
			}, printDestinationEntry)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "destination kind: webhook, nats or kafka")
	cmd.Flags().StringVar(&url, "url", "", "where batches go: the webhook's https URL, or the NATS server")
	cmd.Flags().StringVar(&secretEnv, "secret-env", "", "environment variable (on the workers) holding the webhook secret or NATS token")
	cmd.Flags().StringVar(&secretFile, "secret-file", "", "file (on the workers) holding the webhook secret or NATS token")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "a setting as key=value (dotted key, YAML value); repeatable")
	cmd.Flags().BoolVar(&opts.ReuseRemoved, "reuse-removed", false, "take the name of a removed destination")
	return cmd
}

func newDeliveriesEditCommand(app *App) *cobra.Command {
	var flags editFlags
	cmd := &cobra.Command{
		Use:   "edit NAME",
		Short: "Change a registered destination's settings (its Delivery and the workers follow)",
		Long: `Changes settings of a registered destination: each --set key=value (dotted
key, YAML value) and --unset key (back to its default), validated as a
whole; nothing is written when anything is invalid. The workers send with a
new URL or secret reference from the next batch (they resolve it from the
registry by name); the Delivery gets the new batch size, rate, windows and
task queue at once.

With --revision N the edit applies only if the destination is still at
revision N.`,
		Example: "  ordersync deliveries edit oms --set batch_size=200 --set rate_limit.rps=20\n" +
			"  ordersync deliveries edit oms --set url=https://oms-2.example.com/hooks/orders --revision 14",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEdit(cmd, app, args[0], flags, (*accounts.Service).EditDestination, editDestination, printDestinationEntry)
		},
	}
	flags.register(cmd, "destination")
	return cmd
}

func newDeliveriesRemoveCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME...",
		Short: "Remove destinations: their Delivery ends and they no longer hold the change feed",
		Long: `Marks each destination removed in the registry (workers refuse to send to
it from then on), cancels its Delivery workflow and waits until it has
ended (it is terminated if no worker takes the cancellation within 15s),
then releases the destination's acknowledged sequence number in the store,
so compaction no longer keeps changes for it.

A destination only the platforms file declares (never registered) is
registered as removed, so workers seeding the registry from the file leave
it alone; take it out of the file too.

If a step after the registry write fails, the command says so; running it
again finishes the removal. The name stays taken: adding it again needs
--reuse-removed.`,
		Example: "  ordersync deliveries remove old-oms",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRemove(cmd, app, args, func(ctx context.Context, svc *accounts.Service, name string) (accounts.Entry, error) {
				e, err := svc.RemoveDestination(ctx, name)
				if !errors.Is(err, accounts.ErrNotFound) {
					return e, err
				}
				// Not registered: one only the platforms file declares
				// (its Delivery may run and hold the feed) is removed too.
				f, ferr := app.loadPlatformsIfAny()
				if ferr != nil || f == nil {
					return e, err
				}
				d, ok := f.Destination(name)
				if !ok {
					return e, err
				}
				return svc.RemoveUnregisteredDestination(ctx, d)
			}, printDestinationEntry)
		},
	}
}

// destinationFromFlags builds a destination from add's flags over the
// destination defaults, decoded as strictly as a registry entry (an
// unknown --set key is an error naming it) and validated.
func destinationFromFlags(name, kind, url string, secret config.CredentialRef, sets []string) (config.Destination, error) {
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = name, kind, url, secret
	if err := editDestination(&d, sets, nil); err != nil {
		return config.Destination{}, err
	}
	if ve := d.Validate(nil); ve != nil {
		return config.Destination{}, ve
	}
	return d, nil
}

// editDestination applies --set and --unset (back to the default) to
// settings as JSON and decodes the result strictly.
func editDestination(d *config.Destination, sets, unsets []string) error {
	m, err := asMap(*d)
	if err != nil {
		return err
	}
	for _, s := range sets {
		if err := setPath(m, s); err != nil {
			return err
		}
	}
	defaults, err := asMap(config.DestinationDefaults())
	if err != nil {
		return err
	}
	for _, key := range unsets {
		if err := resetPath(m, defaults, key); err != nil {
			return err
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	edited, err := accounts.DecodeDestinationJSON(b)
	if err != nil {
		return err
	}
	*d = edited
	return nil
}

func asMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// resetPath puts the setting at key back to its value in defaults, or
// drops it when the defaults have none.
func resetPath(m, defaults map[string]any, key string) error {
	if err := unsetPath(m, key); err != nil {
		return err
	}
	parts := strings.Split(key, ".")
	def := defaults
	for _, p := range parts[:len(parts)-1] {
		next, ok := def[p].(map[string]any)
		if !ok {
			return nil
		}
		def = next
	}
	v, ok := def[parts[len(parts)-1]]
	if !ok {
		return nil
	}
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any) // unsetPath found the path
	}
	m[parts[len(parts)-1]] = v
	return nil
}

// printDestinationEntry says what a registry change did to a destination.
func printDestinationEntry(app *App, verb string, e accounts.Entry) error {
	return printEntryAs(app, verb, e, destinationRow{Destination: e.Name, entryFields: fieldsOf(e)})
}

// destinationRow is how a destination's registry entry is shown (its
// settings hold a secret reference, never the secret).
type destinationRow struct {
	Destination string `json:"destination"`
	entryFields
}

// SeedDestinations registers the file's destinations that the registry
// does not hold yet, as SeedRegistry does for platforms: never over an
// entry, never taking a removed name (a removed destination is not
// delivered to, whatever the file says), a file that differs from the
// registry named in a warning.
func SeedDestinations(ctx context.Context, reg accounts.Registry, f *config.File, logf func(msg string, args ...any)) error {
	return seedEntries(ctx, reg, f, f.Destinations, seedClass[config.Destination]{
		noun:  "destination",
		class: accounts.ClassDestination,
		name:  func(d config.Destination) string { return d.Name },
		differs: func(e accounts.Entry, d config.Destination) bool {
			cur, err := accounts.DecodeDestination(e)
			return err == nil && !accounts.SameDestination(cur, d)
		},
		entry: func(d config.Destination) (accounts.Entry, error) {
			return accounts.DestinationEntry(d, accounts.Active)
		},
		removedMsg:    "destination in the file was removed from the registry; not delivered to",
		differsMsg:    "the platforms file's destination differs from the registry, which wins; run `ordersync platform apply -f FILE` to apply the file",
		registeredMsg: "registered destination from the platforms file",
	}, logf)
}

// feedConsumers is who compaction waits for: the registry's destinations
// that are not removed, and the file's that the registry does not hold as
// removed (a file destination not registered yet holds every change until
// it acknowledges one). removed lists the registry's removed destinations.
func feedConsumers(ctx context.Context, reg accounts.Registry, file []string) (consumers, removed []string, err error) {
	seen := map[string]bool{}
	for _, state := range []accounts.State{accounts.Active, accounts.Paused, accounts.Removed} {
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassDestination, State: state}, func(e accounts.Entry) error {
			seen[e.Name] = true
			if state == accounts.Removed {
				removed = append(removed, e.Name)
			} else {
				consumers = append(consumers, e.Name)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("list the registry's destinations: %w", err)
		}
	}
	for _, name := range file {
		if !seen[name] {
			consumers = append(consumers, name)
		}
	}
	return consumers, removed, nil
}

// compactOnce compacts the feed for the current destinations. It first
// releases the consumer rows that removed destinations still have (a
// removal whose release failed, or an acknowledgement a Delivery made
// while it was being removed), so a removed destination never holds the
// feed for longer than one compaction.
func compactOnce(ctx context.Context, st store.Store, file []string, retention time.Duration, logf func(msg string, args ...any)) (int64, error) {
	consumers := file
	if reg, ok := store.RegistryOf(st); ok {
		var removed []string
		var err error
		if consumers, removed, err = feedConsumers(ctx, reg, file); err != nil {
			// Without the registry's list a destination that never
			// acknowledged would not hold the feed: compact nothing.
			return 0, err
		}
		if len(removed) > 0 {
			acks, err := st.Acks(ctx)
			if err != nil {
				return 0, err
			}
			for _, name := range removed {
				if _, held := acks[name]; !held {
					continue
				}
				// Read again: the name may have been re-added a moment ago.
				if e, found, err := reg.Get(ctx, accounts.ClassDestination, name); err != nil || !found || e.State != accounts.Removed {
					continue
				}
				if _, err := st.ReleaseConsumer(ctx, name); err != nil {
					return 0, err
				}
				logf("released a removed destination's hold on the change feed", "destination", name, "acked", acks[name])
			}
		}
	}
	return st.CompactChanges(ctx, store.Compaction{Before: time.Now().Add(-retention), Consumers: consumers})
}
