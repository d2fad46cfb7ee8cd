package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/config"
)

// SeedRegistry seeds both classes through one loop: each rule must hold
// for platforms and destinations alike.
func TestSeedRegistrySeedsBothClassesWithoutOverwriting(t *testing.T) {
	ctx := context.Background()
	reg := accounts.NewMemory()
	platform := func(name string, sets ...string) config.Platform {
		p, err := platformFromFlags(name, "sim", "http://127.0.0.1:1/shops/"+name, config.CredentialRef{Env: "TOKEN"}, sets)
		require.NoError(t, err)
		return p
	}
	destination := func(name string, sets ...string) config.Destination {
		d, err := destinationFromFlags(name, "webhook", "https://oms.example.com/"+name, config.CredentialRef{Env: "SECRET"}, sets)
		require.NoError(t, err)
		return d
	}
	put := func(e accounts.Entry, err error) int64 {
		require.NoError(t, err)
		rev, err := reg.Put(ctx, e, 0)
		require.NoError(t, err)
		return rev
	}
	put(accounts.PlatformEntry(platform("gone"), accounts.Removed))
	keptRev := put(accounts.PlatformEntry(platform("kept", "interval=10m"), accounts.Active))
	put(accounts.DestinationEntry(destination("gone-dest"), accounts.Removed))
	keptDestRev := put(accounts.DestinationEntry(destination("kept-dest", "batch_size=50"), accounts.Active))

	f := &config.File{Path: "platforms.yaml",
		Platforms:    []config.Platform{platform("new"), platform("running"), platform("gone"), platform("kept", "interval=5m")},
		Destinations: []config.Destination{destination("new-dest"), destination("gone-dest"), destination("kept-dest", "batch_size=60")}}
	eng := &accountstest.Engine{}
	eng.SetRunning("running", "orders-running")
	var logged []string
	logf := func(msg string, args ...any) { logged = append(logged, fmt.Sprint(append([]any{msg}, args[:2]...)...)) }
	require.NoError(t, SeedRegistry(ctx, reg, f, eng, logf))

	get := func(class accounts.Class, name string) accounts.Entry {
		e, found, err := reg.Get(ctx, class, name)
		require.NoError(t, err)
		require.True(t, found, name)
		return e
	}
	require.Equal(t, accounts.Active, get(accounts.ClassPlatform, "new").State)
	require.Equal(t, "orders-running", get(accounts.ClassPlatform, "running").TaskQueue, "a running cursor keeps its queue")
	require.Equal(t, accounts.Removed, get(accounts.ClassPlatform, "gone").State, "a removed name is not taken")
	require.Equal(t, keptRev, get(accounts.ClassPlatform, "kept").Revision, "the registry wins over the file")
	require.Equal(t, accounts.Active, get(accounts.ClassDestination, "new-dest").State)
	require.Equal(t, accounts.Removed, get(accounts.ClassDestination, "gone-dest").State)
	require.Equal(t, keptDestRev, get(accounts.ClassDestination, "kept-dest").Revision)

	require.Contains(t, logged, "platform in the file was removed from the registry; not servedplatformgone")
	require.Contains(t, logged, "the platforms file differs from the registry, which wins; run `ordersync platform apply -f FILE` to apply the fileplatformkept")
	require.Contains(t, logged, "destination in the file was removed from the registry; not delivered todestinationgone-dest")
	require.Contains(t, logged, "the platforms file's destination differs from the registry, which wins; run `ordersync platform apply -f FILE` to apply the filedestinationkept-dest")
	require.Contains(t, logged, "registered destination from the platforms filedestinationnew-dest")

	// Seeding again registers nothing more and overwrites nothing.
	rev, err := reg.Revision(ctx)
	require.NoError(t, err)
	require.NoError(t, SeedRegistry(ctx, reg, f, eng, logf))
	again, err := reg.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, rev, again)
}

// The rows of both classes share their fields but name their class.
func TestEntryRowsStayFlatAndNameTheirClass(t *testing.T) {
	e := accounts.Entry{Name: "n", Kind: "k", State: accounts.Paused, Revision: 7, TaskQueue: "q", Settings: []byte(`{"a":1}`)}
	for _, tc := range []struct {
		row any
		key string
	}{{entryView(e), "platform"}, {destinationRow{Destination: e.Name, entryFields: fieldsOf(e)}, "destination"}} {
		b, err := json.Marshal(tc.row)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		require.Equal(t, map[string]any{tc.key: "n", "kind": "k", "state": "paused", "revision": 7.0, "task_queue": "q",
			"updated_at": "0001-01-01T00:00:00Z", "settings": map[string]any{"a": 1.0}}, m)
	}
}
