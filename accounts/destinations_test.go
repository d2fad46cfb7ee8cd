package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/config"
)

func destination(t *testing.T, name string) config.Destination {
	t.Helper()
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = name, "webhook", "https://oms.example.com/hook", config.CredentialRef{Env: "HOOK_SECRET"}
	require.Nil(t, d.Validate(nil))
	return d
}

// newDestService is a service whose engine also records the releases of
// consumer rows, in order with its calls.
func newDestService() (*accounts.Service, *accounts.Memory, *accountstest.Engine) {
	svc, reg, eng := newService()
	svc.Feed = eng
	return svc, reg, eng
}

// TestDestinationLifeCycle: a destination is registered and its Delivery
// started, edited and reconfigured, removed: its Delivery is stopped
// first and only then its consumer row released (a Delivery still running
// would acknowledge again and hold the feed anew). Its name is not reused
// by accident.
func TestDestinationLifeCycle(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newDestService()
	d := destination(t, "oms")

	e, err := svc.AddDestination(ctx, d, accounts.AddOptions{})
	require.NoError(t, err)
	require.Equal(t, accounts.ClassDestination, e.Class)
	require.Equal(t, accounts.Active, e.State)
	require.Equal(t, config.DefaultDeliveryTaskQueue, e.TaskQueue)
	require.Equal(t, []string{"start-delivery oms"}, eng.Took())
	queues, err := reg.TaskQueues(ctx, accounts.ClassDestination)
	require.NoError(t, err)
	require.Equal(t, []string{"deliveries"}, queues, "workers learn the queue to serve")
	_, err = svc.AddDestination(ctx, d, accounts.AddOptions{})
	require.ErrorIs(t, err, accounts.ErrExists)
	_, found, err := reg.Get(ctx, accounts.ClassPlatform, "oms")
	require.NoError(t, err)
	require.False(t, found, "a destination is not a platform")

	edited, err := svc.EditDestination(ctx, "oms", 0, func(d *config.Destination) error { d.BatchSize = 50; return nil })
	require.NoError(t, err)
	require.Greater(t, edited.Revision, e.Revision)
	require.Equal(t, []string{"reconfigure-delivery oms"}, eng.Took())
	same, err := svc.EditDestination(ctx, "oms", 0, func(*config.Destination) error { return nil })
	require.NoError(t, err)
	require.Equal(t, edited.Revision, same.Revision, "an edit that changes nothing writes nothing")
	require.Empty(t, eng.Took())
	_, err = svc.EditDestination(ctx, "oms", e.Revision, func(d *config.Destination) error { d.Retries = 1; return nil })
	require.ErrorIs(t, err, accounts.ErrConflict)
	_, err = svc.EditDestination(ctx, "oms", 0, func(d *config.Destination) error { d.URL = "ftp://oms"; return nil })
	var ve *config.ValidationError
	require.ErrorAs(t, err, &ve, "an invalid edit is refused")
	require.Contains(t, err.Error(), `destination "oms": field "url"`)
	_, err = svc.EditDestination(ctx, "oms", 0, func(d *config.Destination) error { d.Name = "other"; return nil })
	require.ErrorContains(t, err, "the name cannot be edited")
	got, _, _ := reg.Get(ctx, accounts.ClassDestination, "oms")
	require.Equal(t, edited.Revision, got.Revision, "refused edits write nothing")

	removed, err := svc.RemoveDestination(ctx, "oms")
	require.NoError(t, err)
	require.Equal(t, accounts.Removed, removed.State)
	require.Equal(t, []string{"stop-delivery oms", "release oms"}, eng.Took(), "stopped, then released")
	queues, err = reg.TaskQueues(ctx, accounts.ClassDestination)
	require.NoError(t, err)
	require.Empty(t, queues)
	_, err = svc.EditDestination(ctx, "oms", 0, func(d *config.Destination) error { d.BatchSize = 5; return nil })
	require.ErrorContains(t, err, "was removed")

	_, err = svc.AddDestination(ctx, d, accounts.AddOptions{})
	require.ErrorIs(t, err, accounts.ErrRemovedName, "a removed name is not reused by accident")
	again, err := svc.AddDestination(ctx, d, accounts.AddOptions{ReuseRemoved: true})
	require.NoError(t, err, "but explicitly")
	require.Equal(t, accounts.Active, again.State)
	require.Equal(t, []string{"start-delivery oms"}, eng.Took())

	_, err = svc.RemoveDestination(ctx, "nobody")
	require.ErrorIs(t, err, accounts.ErrNotFound)
	bad := d
	bad.Name, bad.BatchSize = "bad", 0
	_, err = svc.AddDestination(ctx, bad, accounts.AddOptions{})
	require.ErrorAs(t, err, &ve)
	require.Contains(t, err.Error(), "batch_size")
}

// TestDestinationRemovalFinishesLater: a stop that fails leaves the
// consumer row in place (the Delivery may still acknowledge) and says
// what to run; running remove again finishes the removal.
func TestDestinationRemovalFinishesLater(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newDestService()
	_, err := svc.AddDestination(ctx, destination(t, "oms"), accounts.AddOptions{})
	require.NoError(t, err)
	eng.Took()

	eng.FailStep("stop-delivery", fmt.Errorf("temporal unreachable"))
	_, err = svc.RemoveDestination(ctx, "oms")
	var ee *accounts.EngineError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, "stop", ee.Step)
	require.Contains(t, err.Error(), "its Delivery's stop failed")
	require.Contains(t, err.Error(), "ordersync deliveries remove oms")
	require.Equal(t, []string{"stop-delivery oms"}, eng.Took(), "not released while the Delivery may run")
	e, _, _ := reg.Get(ctx, accounts.ClassDestination, "oms")
	require.Equal(t, accounts.Removed, e.State, "the registry holds the removal: workers refuse the destination")

	eng.FailStep("stop-delivery", nil)
	again, err := svc.RemoveDestination(ctx, "oms")
	require.NoError(t, err)
	require.Equal(t, e.Revision, again.Revision, "finishing writes no new revision")
	require.Equal(t, []string{"stop-delivery oms", "release oms"}, eng.Took())

	eng.FailStep("release", fmt.Errorf("store unreachable"))
	_, err = svc.RemoveDestination(ctx, "oms")
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, "release", ee.Step)
}

// TestUnregisteredDestinationRemoval: a destination only a platforms file
// declares (its Delivery runs, its consumer row holds the feed) can be
// removed: it is registered as removed, so workers refuse it and seeding
// from the file leaves it alone, then its Delivery is stopped and only
// then its row released. A registered one is refused (remove it by name).
func TestUnregisteredDestinationRemoval(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newDestService()
	_, err := svc.RemoveDestination(ctx, "file-oms")
	require.ErrorIs(t, err, accounts.ErrNotFound, "nothing registered under the name")

	e, err := svc.RemoveUnregisteredDestination(ctx, destination(t, "file-oms"))
	require.NoError(t, err)
	require.Equal(t, accounts.Removed, e.State)
	require.Equal(t, []string{"stop-delivery file-oms", "release file-oms"}, eng.Took())
	got, found, err := reg.Get(ctx, accounts.ClassDestination, "file-oms")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, accounts.Removed, got.State, "the registry holds the removal")

	_, err = svc.AddDestination(ctx, destination(t, "oms"), accounts.AddOptions{})
	require.NoError(t, err)
	eng.Took()
	_, err = svc.RemoveUnregisteredDestination(ctx, destination(t, "oms"))
	require.ErrorIs(t, err, accounts.ErrConflict, "a registered destination is removed by name, with its revision")
	require.Empty(t, eng.Took(), "nothing stopped or released")
}

// releasingRegistry is a registry kept in a store beside the feed, as
// store.RegistryOf's are.
type releasingRegistry struct {
	*accounts.Memory
	released []string
}

func (r *releasingRegistry) ReleaseConsumer(_ context.Context, name string) (bool, error) {
	r.released = append(r.released, name)
	return true, nil
}

// TestDestinationReleaseThroughTheRegistry: a service built on the
// store's registry (the HTTP API's, say) releases through it without
// being given the feed; one with neither refuses to call the removal done.
func TestDestinationReleaseThroughTheRegistry(t *testing.T) {
	ctx := context.Background()
	reg := &releasingRegistry{Memory: accounts.NewMemory()}
	svc := &accounts.Service{Registry: reg, Engine: &accountstest.Engine{}}
	_, err := svc.AddDestination(ctx, destination(t, "oms"), accounts.AddOptions{})
	require.NoError(t, err)
	_, err = svc.RemoveDestination(ctx, "oms")
	require.NoError(t, err)
	require.Equal(t, []string{"oms"}, reg.released)

	bare := &accounts.Service{Registry: accounts.NewMemory(), Engine: &accountstest.Engine{}}
	_, err = bare.AddDestination(ctx, destination(t, "oms"), accounts.AddOptions{})
	require.NoError(t, err)
	_, err = bare.RemoveDestination(ctx, "oms")
	var ee *accounts.EngineError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, "release", ee.Step)
}

func TestApplyDestinations(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newDestService()
	a, b, c := destination(t, "hook-a"), destination(t, "hook-b"), destination(t, "hook-c")

	changes, err := svc.ApplyDestinations(ctx, []config.Destination{a, b}, accounts.ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionAdd, accounts.ActionAdd}, destActions(changes))
	n, err := reg.Count(ctx, accounts.Filter{Class: accounts.ClassDestination})
	require.NoError(t, err)
	require.Zero(t, n, "a dry run writes nothing")
	require.Empty(t, eng.Took())

	_, err = svc.ApplyDestinations(ctx, []config.Destination{a, b}, accounts.ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"start-delivery hook-a", "start-delivery hook-b"}, eng.Took())

	a.BatchSize = 7
	changes, err = svc.ApplyDestinations(ctx, []config.Destination{a, c}, accounts.ApplyOptions{Prune: true, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUpdate, accounts.ActionAdd, accounts.ActionRemove}, destActions(changes))
	require.Equal(t, []string{"batch_size"}, changes[0].Fields)
	require.Empty(t, eng.Took())

	changes, err = svc.ApplyDestinations(ctx, []config.Destination{a, c}, accounts.ApplyOptions{Prune: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUpdate, accounts.ActionAdd, accounts.ActionRemove}, destActions(changes))
	require.Equal(t, []string{"reconfigure-delivery hook-a", "start-delivery hook-a", "start-delivery hook-c",
		"stop-delivery hook-b", "release hook-b"}, eng.Took())
	e, _, _ := reg.Get(ctx, accounts.ClassDestination, "hook-b")
	require.Equal(t, accounts.Removed, e.State, "pruned")

	changes, err = svc.ApplyDestinations(ctx, []config.Destination{a, c}, accounts.ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUnchanged, accounts.ActionUnchanged}, destActions(changes))
	require.Equal(t, []string{"start-delivery hook-a", "start-delivery hook-c"}, eng.Took(),
		"an unchanged destination's Delivery is started if it does not run")

	_, err = svc.ApplyDestinations(ctx, []config.Destination{b}, accounts.ApplyOptions{})
	require.ErrorIs(t, err, accounts.ErrRemovedName, "a pruned name comes back only explicitly")
	changes, err = svc.ApplyDestinations(ctx, []config.Destination{b}, accounts.ApplyOptions{ReuseRemoved: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionAdd}, destActions(changes))
	_, err = svc.ApplyDestinations(ctx, []config.Destination{a, a}, accounts.ApplyOptions{})
	require.ErrorContains(t, err, "listed twice")
}

func destActions(changes []accounts.DestinationChange) []string {
	return actionsOf(changes, func(c accounts.DestinationChange) string { return c.Action })
}

// TestDecodeEntries: settings read back from the registry are checked
// as strictly as a file, for either class: an unknown field, a name that
// is not the entry's, invalid settings or another class's entry are
// errors naming the entry.
func TestDecodeEntries(t *testing.T) {
	d, p := destination(t, "oms"), platform(t, "shop")
	de, err := accounts.DestinationEntry(d, accounts.Active)
	require.NoError(t, err)
	pe, err := accounts.PlatformEntry(p, accounts.Active)
	require.NoError(t, err)
	gotD, err := accounts.DecodeDestination(de)
	require.NoError(t, err)
	require.True(t, accounts.SameDestination(d, gotD))
	gotP, err := accounts.DecodePlatform(pe)
	require.NoError(t, err)
	require.True(t, accounts.SamePlatform(p, gotP))

	t.Run("destination", func(t *testing.T) {
		requireDecodeRejects(t, de, pe, func(e accounts.Entry) error { _, err := accounts.DecodeDestination(e); return err },
			map[string][2]string{
				"unknown field": {`{"name":"oms","kind":"webhook","bogus":1}`, `unknown field "bogus"`},
				"another name":  {`{"name":"crm"}`, `its settings name "crm"`},
				"invalid":       {`{"name":"oms","kind":"webhook","url":"https://x.example.com","secret":{"env":"S"},"task_queue":"deliveries"}`, "batch_size"},
				"two values":    {`{"name":"oms"} {}`, "more than one JSON value"},
			})
	})
	t.Run("platform", func(t *testing.T) {
		requireDecodeRejects(t, pe, de, func(e accounts.Entry) error { _, err := accounts.DecodePlatform(e); return err },
			map[string][2]string{
				"unknown field": {`{"name":"shop","kind":"sim","bogus":1}`, `"bogus"`},
				"another name":  {`{"name":"other"}`, `its settings name "other"`},
				"invalid":       {`{"name":"shop","kind":"sim"}`, "endpoint"},
			})
	})
}

// requireDecodeRejects checks that decode refuses entry e with each
// case's settings ({settings, wanted error text}), naming the entry, and
// refuses other, an entry of another class.
func requireDecodeRejects(t *testing.T, e, other accounts.Entry, decode func(accounts.Entry) error, cases map[string][2]string) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			bad := e
			bad.Settings = []byte(c[0])
			err := decode(bad)
			require.ErrorContains(t, err, c[1])
			require.ErrorContains(t, err, "registry entry "+e.Name)
		})
	}
	require.ErrorContains(t, decode(other), "not a "+string(e.Class))
}
