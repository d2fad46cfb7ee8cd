package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/config"
)

func newConfigCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the platforms file",
	}
	var noCredentials bool
	validate := &cobra.Command{
		Use:   "validate",
		Short: "Validate the platforms file and print the merged settings",
		Long: `Loads the platforms file, merges the default block into every platform and
validates the result. Every problem is printed on its own line, naming the
platform and the field, and the command exits with status 2.

Then it checks what a worker checks at start: that every platform's
credential reference and every destination's secret resolve here (the
environment variable set and not empty, the file readable and not empty),
and that a webhook's secret is "whsec_" followed by base64, the form it
signs with. The secrets are read and dropped, never printed; each problem
is one line naming the platform or destination and the reference, and exit
status 2. On a machine without the secrets (CI, an operator's laptop) pass
--no-credentials to check only the file.

It prints the platforms, then the destinations (table), or with -o json one
object: {"platforms": [...], "destinations": [...]}, each entry as the
worker uses it (credential references, never secrets). One platform's
entry, for a config signal: jq -c '.platforms[] | select(.name=="sim-acme")'.

Warnings (on standard error, exit status unchanged) name settings that work
today but need attention before a known date, such as a legacy API version
the platform is removing.`,
		Example: "  ordersync config validate -f platforms.yaml\n  ordersync config validate -f platforms.yaml --no-credentials -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			if !noCredentials {
				// The worker's start-up checks, in its order, all reported.
				var problems []error
				if err := config.CheckCredentials(f.Path, f.Platforms); err != nil {
					problems = append(problems, err)
				}
				if err := config.CheckDestinationSecrets(f.Path, f.Destinations); err != nil {
					problems = append(problems, err)
				}
				if len(problems) > 0 {
					return Usage(errors.Join(problems...))
				}
			}
			printWarnings(app, f)
			destinations := f.Destinations
			if destinations == nil {
				destinations = []config.Destination{}
			}
			platforms := f.Platforms
			if platforms == nil {
				platforms = []config.Platform{}
			}
			if app.Output == "json" {
				enc := json.NewEncoder(app.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(validatedFile{Platforms: platforms, Destinations: destinations})
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tKIND\tINTERVAL\tOVERLAP\tSETTLE\tCONCURRENCY\tRATE\tTASK QUEUE")
			for _, p := range f.Platforms {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%g/s burst %d\t%s\n", p.Name, p.Kind, p.Interval, p.Overlap,
					p.Settle, p.Concurrency, p.RateLimit.RPS, p.RateLimit.Burst, p.TaskQueue)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(f.Destinations) == 0 {
				return nil
			}
			fmt.Fprintln(app.Out)
			tw = tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DESTINATION\tKIND\tTARGET\tSECRET\tPLATFORMS\tBATCH\tIN FLIGHT\tTASK QUEUE")
			for _, d := range f.Destinations {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Name, d.Kind, clipText(destinationTarget(d), 60), secretRef(d.Secret),
					platformList(d.Platforms), d.BatchSize, d.MaxInFlight, d.TaskQueue)
			}
			return tw.Flush()
		},
	}
	validate.Flags().BoolVar(&noCredentials, "no-credentials", false, "do not check that the credential references resolve on this machine")
	cmd.AddCommand(validate)
	return cmd
}

// validatedFile is config validate -o json.
type validatedFile struct {
	Platforms    []config.Platform    `json:"platforms"`
	Destinations []config.Destination `json:"destinations"`
}

// destinationTarget is where a destination sends: its URL, or its Kafka
// brokers and topic.
func destinationTarget(d config.Destination) string {
	if d.Kind == "kafka" {
		return strings.Join(d.Brokers, ",") + " " + d.Topic
	}
	if d.Kind == "nats" && d.Subject != "" {
		return d.URL + " " + d.Subject + ".>"
	}
	return d.URL
}

// secretRef names a secret's reference, never its value.
func secretRef(c config.CredentialRef) string {
	if c.Env == "" && c.File == "" && c.Stored == "" {
		return "-"
	}
	return c.String()
}

func platformList(ps []string) string {
	if len(ps) == 0 {
		return "all"
	}
	return strings.Join(ps, ",")
}

// printWarnings writes the file's warnings (legacy API versions, ...) to
// standard error: they need attention but do not stop anything.
func printWarnings(app *App, f *config.File) {
	for _, w := range f.Warnings() {
		fmt.Fprintln(app.Err, "warning: "+w.String())
	}
}
