package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/sim"
)

func newSimCommand(app *App) *cobra.Command {
	cfg := sim.DefaultConfig()
	var listen string
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the platform simulator (orders, pagination, 429s, faults, ground truth)",
		Long: `Runs an HTTP server that plays N shops of an e-commerce platform: a backlog of
history, orders created and updated live, late visibility, a per-shop rate
limit answering 429, injected faults, and a ground-truth admin API that
'ordersync verify' and the tests compare the store against.`,
		Example: "  ordersync sim --listen 127.0.0.1:8780 --shops acme:acme-token,globex:globex-token --late 30s --fault-5xx 0.05",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := SignalContext()
			defer stop()
			return app.RunSimulator(ctx, cfg, listen)
		},
	}
	gofs := flag.NewFlagSet("sim", flag.ContinueOnError)
	cfg.RegisterFlags(gofs)
	cmd.Flags().AddGoFlagSet(gofs)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8780", "address to listen on")
	return cmd
}

// RunSimulator serves a simulator until ctx is cancelled.
func (a *App) RunSimulator(ctx context.Context, cfg sim.Config, listen string) error {
	s, err := sim.New(cfg)
	if err != nil {
		return Usage(fmt.Errorf("simulator: %w", err))
	}
	srv, err := s.Start(listen)
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	for _, shop := range cfg.Shops {
		fmt.Fprintf(a.Out, "shop %s: %s\n", shop.Name, srv.ShopURL(shop.Name))
	}
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
