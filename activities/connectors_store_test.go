package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/credentials"
)

// The cache hands its connector options to every connector: a worker
// with the credential store passes the store's Sources for {stored}
// references; one without gets a permanent error that says what is
// missing.
func TestConnectorCachePassesTheCredentialStore(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_STORED_STANDIN", "stored-access-token")
	rec := newRecordingPlatform(t)
	p := testPlatform()
	p.Endpoint = rec.srv.URL + "/shops/x"
	p.Credentials = config.CredentialRef{Stored: "shop-x"}
	declared := &config.File{Platforms: []config.Platform{p}}

	_, err := NewConnectorCache(declared).Connector(p.Settings())
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "ORDERSYNC_CREDENTIAL_KEYS")

	var asked []string
	cache := NewConnectorCache(declared, connectors.WithStoredCredentials(func(name string) (credentials.Source, error) {
		asked = append(asked, name)
		return credentials.Static(config.CredentialRef{Env: "ORDERSYNC_TEST_STORED_STANDIN"}), nil
	}))
	conn, err := cache.Connector(p.Settings())
	require.NoError(t, err)
	_, err = conn.ListOrders(context.Background(), connectors.PageRequest{From: t0, To: t0.Add(time.Hour), Page: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"shop-x"}, asked)
	require.Equal(t, []string{"Bearer stored-access-token"}, rec.requests())
}
