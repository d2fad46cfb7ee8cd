package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/receiver"
)

// Demo receiver settings: examples/demo-platforms.yaml's destination
// demo-receiver posts to DemoReceiverListen, signed with the secret in
// DemoHookSecretEnv, which `ordersync dev` sets to DemoHookSecret when it
// is unset (as it does for the demo shops' tokens).
const (
	DemoReceiverName   = "demo-receiver"
	DemoReceiverListen = "127.0.0.1:8781"
	DemoHookSecretEnv  = "ORDERSYNC_DEMO_HOOK_SECRET"
	// DemoHookSecret is "ordersync-demo-webhook-secret!!" in base64: a
	// demo value, never one to deploy.
	DemoHookSecret = "whsec_b3JkZXJzeW5jLWRlbW8td2ViaG9vay1zZWNyZXQhIQ=="
	// DemoReceiverEvery is how often the receiver prints its counts.
	DemoReceiverEvery = 10 * time.Second
)

func newReceiverCommand(app *App) *cobra.Command {
	var listen, name, secretEnv, secretFile, natsURL, subject, stream string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "receiver",
		Short: "Run a webhook receiver (or a JetStream consumer) that prints what arrived (a demo back-end)",
		Long: `Serves a webhook destination's POSTs on --listen: checks each batch's
Standard Webhooks signature (webhook-id, webhook-timestamp,
webhook-signature) with the whsec_ secret in the environment variable
--secret-env (or the file --secret-file), drops a batch it already
processed (same webhook-id) and counts the changes, and every --every
prints one line while the counts change:

  demo-receiver: 1,234 changes received (sim-acme 600, sim-globex 634), last seq 1240

A bad signature is answered 401 (the sender sets the batch aside as
refused). GET /stats answers the counts as JSON. It keeps every change's
seq in memory: a demo and test back-end, not a production one.
` + "`ordersync dev`" + ` runs one itself (see --receiver-listen there).

With --nats URL it is a JetStream consumer instead: it creates the stream
--stream capturing <--subject>.> unless it exists (a nats destination
with subject S publishes platform P's changes to S.P), reads it from the
first message and prints the same line.`,
		Example: "  ORDERSYNC_DEMO_HOOK_SECRET=" + DemoHookSecret + " ordersync receiver\n" +
			"  ordersync receiver --listen 127.0.0.1:9000 --secret-file /run/secrets/hook --name oms\n" +
			"  ordersync receiver --nats nats://127.0.0.1:4222 --subject orders --name demo-bus",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every <= 0 {
				return Usage(fmt.Errorf("--every must be positive, got %s", every))
			}
			if natsURL != "" {
				return runJetStreamReceiver(app, name, receiver.JetStream{URL: natsURL, Stream: stream, Subject: subject}, every)
			}
			ref := config.CredentialRef{Env: secretEnv}
			if secretFile != "" {
				ref = config.CredentialRef{File: secretFile}
			}
			secret, err := ref.Resolve()
			if err != nil {
				return Usage(fmt.Errorf("receiver secret: %w", err))
			}
			ctx, stop := SignalContext()
			defer stop()
			url, stopReceiver, err := ServeReceiver(ctx, app, listen, name, secret, every)
			if err != nil {
				return err
			}
			fmt.Fprintf(app.Out, "%s: listening on %s (POST batches there; GET %sstats for the counts)\n", name, url, url)
			<-ctx.Done()
			return stopReceiver()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", DemoReceiverListen, "address to listen on")
	cmd.Flags().StringVar(&name, "name", DemoReceiverName, "name in the lines it prints")
	cmd.Flags().StringVar(&secretEnv, "secret-env", DemoHookSecretEnv, "environment variable holding the whsec_ signing secret")
	cmd.Flags().StringVar(&secretFile, "secret-file", "", "file holding the whsec_ signing secret (instead of --secret-env)")
	durationDaysVar(cmd.Flags(), &every, "every", DemoReceiverEvery, "how often to print the counts (only when they changed)")
	cmd.Flags().StringVar(&natsURL, "nats", "", "consume a JetStream stream on this NATS server instead (nats://host:4222)")
	cmd.Flags().StringVar(&subject, "subject", "orders", "with --nats: the destination's subject; the stream captures <subject>.>")
	cmd.Flags().StringVar(&stream, "stream", "ORDERS", "with --nats: the stream to read (created when missing)")
	return cmd
}

// ServeReceiver serves a receiver on listen, printing its counts to
// app.Out every interval, until ctx ends or stop is called. It returns the
// receiver's base URL and stop, which shuts it down, prints the final
// counts and waits.
func ServeReceiver(ctx context.Context, app *App, listen, name, secret string, every time.Duration) (url string, stop func() error, err error) {
	rcv, err := receiver.New(name, secret)
	if err != nil {
		return "", nil, Usage(fmt.Errorf("receiver %s: %w", name, err))
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("receiver %s: listen on %s: %w", name, listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	srv := receiver.NewServer(rcv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go rcv.Report(ctx, app.Out, every)
	go func() {
		<-ctx.Done()
		sctx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelShutdown()
		_ = srv.Shutdown(sctx)
	}()
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				stopErr = fmt.Errorf("receiver %s: %w", name, err)
			}
			fmt.Fprintln(app.Out, rcv.Summary())
		})
		return stopErr
	}
	return "http://" + ln.Addr().String() + "/", stop, nil
}

func runJetStreamReceiver(app *App, name string, j receiver.JetStream, every time.Duration) error {
	if !natsToken.MatchString(j.Subject) {
		return Usage(fmt.Errorf("--subject %q: tokens of letters, digits, _ and -, separated by dots", j.Subject))
	}
	if !streamName.MatchString(j.Stream) {
		return Usage(fmt.Errorf("--stream %q: letters, digits, _ and - only", j.Stream))
	}
	ctx, stop := SignalContext()
	defer stop()
	rcv := receiver.NewJetStream(name)
	fmt.Fprintf(app.Out, "%s: consuming stream %s (%s.>) on %s\n", name, j.Stream, j.Subject, j.URL)
	go rcv.Report(ctx, app.Out, every)
	if err := rcv.Consume(ctx, j); err != nil {
		return err
	}
	fmt.Fprintln(app.Out, rcv.Summary())
	return nil
}

var streamName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

var natsToken = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// SetDemoHookSecret puts the demo secret in the environment unless one is
// there, so the demo destination's reference resolves.
func SetDemoHookSecret() {
	if v, ok := os.LookupEnv(DemoHookSecretEnv); !ok || strings.TrimSpace(v) == "" {
		os.Setenv(DemoHookSecretEnv, DemoHookSecret)
	}
}
