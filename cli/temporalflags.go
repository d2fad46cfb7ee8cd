package cli

import (
	"github.com/spf13/pflag"

	"github.com/ordersync/ordersync/config"
)

// temporalFlags are the Temporal connection flags, named as the `temporal`
// CLI names them, so a command copied from one works with the other. A flag
// given on the command line overrides its ORDERSYNC_TEMPORAL_* variable.
type temporalFlags struct {
	address, namespace                 string
	tls                                bool
	certPath, keyPath, caPath, tlsName string
	apiKey                             string
}

func (f *temporalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "address", "", "Temporal frontend host:port (default $ORDERSYNC_TEMPORAL_ADDRESS or 127.0.0.1:7233)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "Temporal namespace (default $ORDERSYNC_TEMPORAL_NAMESPACE or default)")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS (implied by the other --tls-* flags and --api-key)")
	fs.StringVar(&f.certPath, "tls-cert-path", "", "client certificate for mTLS (default $ORDERSYNC_TEMPORAL_TLS_CERT)")
	fs.StringVar(&f.keyPath, "tls-key-path", "", "client key for mTLS (default $ORDERSYNC_TEMPORAL_TLS_KEY)")
	fs.StringVar(&f.caPath, "tls-ca-path", "", "CA certificate of the server (default $ORDERSYNC_TEMPORAL_TLS_CA)")
	fs.StringVar(&f.tlsName, "tls-server-name", "", "server name to verify (default $ORDERSYNC_TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&f.apiKey, "api-key", "", "Temporal Cloud API key (prefer $ORDERSYNC_TEMPORAL_API_KEY: flags show in the process list)")
}

// apply overrides the process settings with the flags the user gave.
func (f *temporalFlags) apply(fs *pflag.FlagSet, p *config.Process) {
	set := func(name string, dst *string, v string) {
		if fs.Changed(name) {
			*dst = v
		}
	}
	set("address", &p.TemporalAddress, f.address)
	set("namespace", &p.TemporalNamespace, f.namespace)
	set("tls-cert-path", &p.TemporalTLSCert, f.certPath)
	set("tls-key-path", &p.TemporalTLSKey, f.keyPath)
	set("tls-ca-path", &p.TemporalTLSCA, f.caPath)
	set("tls-server-name", &p.TemporalTLSServerName, f.tlsName)
	set("api-key", &p.TemporalAPIKey, f.apiKey)
	if fs.Changed("tls") {
		p.TemporalTLS = f.tls
	}
}
