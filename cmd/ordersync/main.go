// Command ordersync is the single binary: CLI, worker, simulator and the
// embedded development server.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // work windows name time zones; do not depend on the host's zoneinfo

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/cli/devcmd"
	"github.com/ordersync/ordersync/internal/gctune"

	_ "github.com/ordersync/ordersync/connectors" // registers the built-in connector kinds
)

func main() {
	if _, err := gctune.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "ordersync:", err)
	}
	app := &cli.App{}
	root := cli.NewRootCommand(app)
	root.AddCommand(devcmd.New(app), devcmd.NewCluster(app))
	os.Exit(cli.Execute(root, os.Args[1:], os.Stderr))
}
