package cli

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
)

// TestTemporalFlagsOverrideTheEnvironment: a flag given wins over the
// environment's setting; a flag not given leaves it alone.
func TestTemporalFlagsOverrideTheEnvironment(t *testing.T) {
	var f temporalFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.register(fs)
	require.NoError(t, fs.Parse([]string{"--address", "temporal.prod:7233", "-n", "orders", "--tls"}))
	p := config.Process{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default", TemporalTLSCA: "/etc/ca.pem"}
	f.apply(fs, &p)
	require.Equal(t, "temporal.prod:7233", p.TemporalAddress)
	require.Equal(t, "orders", p.TemporalNamespace)
	require.True(t, p.TemporalTLS)
	require.Equal(t, "/etc/ca.pem", p.TemporalTLSCA, "not given: the environment's value stays")
}
