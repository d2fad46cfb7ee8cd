package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/cli/devcmd"
)

// TestFlagHelpNamesTheValueType: pflag takes the first `quoted` word of a
// flag's usage as the name of its value in --help, so a usage that quotes
// a command printed "--workers ordersync worker" instead of "--workers int".
func TestFlagHelpNamesTheValueType(t *testing.T) {
	app := &cli.App{}
	root := cli.NewRootCommand(app)
	root.AddCommand(devcmd.New(app), devcmd.NewCluster(app))
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(name, " ") {
				t.Errorf("%s --%s: help shows its value as %q; do not quote a phrase in the usage", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
