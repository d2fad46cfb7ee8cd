package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
)

// TestDestinationPayloadFromFlags: `deliveries add|edit --set payload=...`
// takes the three payloads, unset is the default (both), and anything
// else is refused naming the destination and the field.
func TestDestinationPayloadFromFlags(t *testing.T) {
	ref := config.CredentialRef{Env: "OMS_SECRET"}
	d, err := destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", ref, nil)
	require.NoError(t, err)
	require.Empty(t, d.Payload, "unset: both")
	d, err = destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", ref, []string{"payload=canonical"})
	require.NoError(t, err)
	require.Equal(t, config.PayloadCanonical, d.Payload)
	require.NoError(t, editDestination(&d, []string{"payload=raw"}, nil))
	require.Equal(t, config.PayloadRaw, d.Payload)
	require.NoError(t, editDestination(&d, nil, []string{"payload"}))
	require.Empty(t, d.Payload, "--unset payload: back to both")
	_, err = destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", ref, []string{"payload=json"})
	require.ErrorContains(t, err, `destination "oms": field "payload": "json" is not a payload: one of both, raw, canonical (default both)`)
}
