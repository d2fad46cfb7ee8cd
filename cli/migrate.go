package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/store"
)

func newMigrateCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the store's tables (run with a role that may create them)",
		Long: `Applies the store's pending schema migrations and creates the request-slot
table, then exits. Every process that opens the store does the same when it
may; run this once, with ORDERSYNC_STORE_DSN naming a PostgreSQL role that
has CREATE on the schema (its owner), when the workers' role may only read
and write the tables (SELECT, INSERT, UPDATE, DELETE). A store already up to
date is left as it is. See deploy/README.md, "PostgreSQL store roles".`,
		Example: "  ORDERSYNC_STORE_DSN=postgres://owner@db/orders ordersync migrate",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			slots, err := quota.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return err
			}
			defer slots.Close()
			fmt.Fprintln(app.Out, "store schema up to date")
			return nil
		},
	}
}
