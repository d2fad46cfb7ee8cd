// Package tclient dials Temporal from ordersync's process settings, so the
// CLI, workers and the starter connect the same way to a dev server, a
// self-hosted cluster (mTLS) or Temporal Cloud (mTLS or API key).
package tclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/ordersync/ordersync/config"
)

// Options builds SDK client options from the process settings.
func Options(p config.Process, logger *slog.Logger) (client.Options, error) {
	opts := client.Options{HostPort: p.TemporalAddress, Namespace: p.TemporalNamespace}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	if p.UsesTLS() {
		tlsCfg := &tls.Config{ServerName: p.TemporalTLSServerName, MinVersion: tls.VersionTLS12}
		if p.TemporalTLSCert != "" {
			cert, err := tls.LoadX509KeyPair(p.TemporalTLSCert, p.TemporalTLSKey)
			if err != nil {
				return opts, fmt.Errorf("load Temporal client certificate %s: %w", p.TemporalTLSCert, err)
			}
			tlsCfg.Certificates = []tls.Certificate{cert}
		}
		if p.TemporalTLSCA != "" {
			pem, err := os.ReadFile(p.TemporalTLSCA)
			if err != nil {
				return opts, fmt.Errorf("read Temporal CA %s: %w", p.TemporalTLSCA, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return opts, fmt.Errorf("the Temporal CA file %s holds no PEM certificate", p.TemporalTLSCA)
			}
			tlsCfg.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = tlsCfg
	}
	if p.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(p.TemporalAPIKey)
	}
	return opts, nil
}

// Dial connects and checks the server answers, so a wrong address fails
// here with the address named rather than later in a confusing place.
func Dial(ctx context.Context, p config.Process, logger *slog.Logger) (client.Client, error) {
	opts, err := Options(p, logger)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", p.TemporalAddress, p.TemporalNamespace, err)
	}
	return c, nil
}
