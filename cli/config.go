package cli

import (
	"encoding/json"
	"fmt"
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

Then it checks that every platform's credential reference resolves here: the
environment variable is set and not empty, the file exists, is readable and
not empty. The secrets are read and dropped, never printed; a reference that
does not resolve is one line naming the platform and the reference, and exit
status 2. On a machine without the secrets (CI, an operator's laptop) pass
--no-credentials to check only the file. Workers check the same at start.

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
				if err := config.CheckCredentials(f.Path, f.Platforms); err != nil {
					return Usage(err)
				}
			}
			printWarnings(app, f)
			if app.Output == "json" {
				enc := json.NewEncoder(app.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(f.Platforms)
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tKIND\tINTERVAL\tOVERLAP\tSETTLE\tCONCURRENCY\tRATE\tTASK QUEUE")
			for _, p := range f.Platforms {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%g/s burst %d\t%s\n", p.Name, p.Kind, p.Interval, p.Overlap,
					p.Settle, p.Concurrency, p.RateLimit.RPS, p.RateLimit.Burst, p.TaskQueue)
			}
			return tw.Flush()
		},
	}
	validate.Flags().BoolVar(&noCredentials, "no-credentials", false, "do not check that the credential references resolve on this machine")
	cmd.AddCommand(validate)
	return cmd
}

// printWarnings writes the file's warnings (legacy API versions, ...) to
// standard error: they need attention but do not stop anything.
func printWarnings(app *App, f *config.File) {
	for _, w := range f.Warnings() {
		fmt.Fprintln(app.Err, "warning: "+w.String())
	}
}
