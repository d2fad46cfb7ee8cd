package metrics

import (
	"fmt"
	"log/slog"

	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"google.golang.org/grpc"
)

// TemporalHandler returns a Temporal SDK metrics handler that exports into
// the Recorder's registry, so one scrape shows ordersync's series and the
// SDK's (request latencies, poll results, task slots, schedule-to-start).
// Pass it as client.Options.MetricsHandler when dialing the client the
// workers use. The SDK reports through OpenTelemetry; the OpenTelemetry
// Prometheus exporter turns its instruments into Prometheus series
// (counters get _total, timers become _seconds histograms).
func (r *Recorder) TemporalHandler() (client.MetricsHandler, error) {
	if r == nil {
		return client.MetricsNopHandler, nil
	}
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(r.registry),
		// One process, one registry: the scope and target_info series
		// would only repeat the SDK's name and version on every line.
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("temporal-sdk-go"),
		// A metric the exporter refuses must not crash a worker (the
		// default panics); losing one series is better than losing work.
		OnError: func(err error) { slog.Warn("temporal sdk metric dropped", "error", err) },
		// Counters as monotonic sums, so they are Prometheus counters
		// (rate() works) rather than gauges.
		UseMonotonicCounters: true,
	}), nil
}

// InstrumentClient sets up client options for the workers' client: the
// SDK's metrics go to this registry (TemporalHandler) and its poll requests
// feed Readiness. A nil Recorder leaves opts alone.
func (r *Recorder) InstrumentClient(opts *client.Options) error {
	if r == nil {
		return nil
	}
	h, err := r.TemporalHandler()
	if err != nil {
		return err
	}
	opts.MetricsHandler = h
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions,
		grpc.WithChainUnaryInterceptor(r.readiness.UnaryClientInterceptor()))
	return nil
}
