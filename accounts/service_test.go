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

func platform(t *testing.T, name string) config.Platform {
	t.Helper()
	f, err := config.Parse([]byte("platforms:\n  " + name + ":\n    kind: sim\n    endpoint: http://127.0.0.1:1/shops/" + name +
		"\n    credentials: {env: TOKEN}\n"))
	require.NoError(t, err)
	return f.Platforms[0]
}

func newService() (*accounts.Service, *accounts.Memory, *accountstest.Engine) {
	reg, eng := accounts.NewMemory(), &accountstest.Engine{}
	return &accounts.Service{Registry: reg, Engine: eng}, reg, eng
}

func TestAddEditPauseRemoveLifeCycle(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newService()
	p := platform(t, "shop-a")
	require.Equal(t, "orders-sim", p.TaskQueue, "accounts of a kind share its queue")

	e, err := svc.AddPlatform(ctx, p, accounts.AddOptions{})
	require.NoError(t, err)
	require.Equal(t, accounts.Active, e.State)
	require.Equal(t, []string{"start shop-a"}, eng.Took())
	_, err = svc.AddPlatform(ctx, p, accounts.AddOptions{})
	require.ErrorIs(t, err, accounts.ErrExists)

	edited, err := svc.EditPlatform(ctx, "shop-a", 0, func(p *config.Platform) error {
		p.Interval = config.Duration(10 * 60e9)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, edited.Revision, e.Revision, "every change is a new revision")
	require.Equal(t, []string{"reconfigure shop-a"}, eng.Took())

	same, err := svc.EditPlatform(ctx, "shop-a", 0, func(*config.Platform) error { return nil })
	require.NoError(t, err)
	require.Equal(t, edited.Revision, same.Revision, "an edit that changes nothing writes nothing")
	require.Empty(t, eng.Took())

	_, err = svc.EditPlatform(ctx, "shop-a", e.Revision, func(p *config.Platform) error { p.Retries = 1; return nil })
	require.ErrorIs(t, err, accounts.ErrConflict, "an edit guarded by a stale revision")

	_, err = svc.EditPlatform(ctx, "shop-a", 0, func(p *config.Platform) error { p.Interval = -1; return nil })
	var ve *config.ValidationError
	require.ErrorAs(t, err, &ve, "an invalid edit is refused")
	require.Contains(t, err.Error(), "interval")

	paused, err := svc.SetPaused(ctx, "shop-a", true, "maintenance")
	require.NoError(t, err)
	require.Equal(t, accounts.Paused, paused.State)
	require.Equal(t, []string{"pause shop-a (maintenance)"}, eng.Took())

	removed, err := svc.RemovePlatform(ctx, "shop-a", accounts.RemoveOptions{DiscardDeadLetters: true})
	require.NoError(t, err)
	require.Equal(t, accounts.Removed, removed.State)
	require.Equal(t, []string{"stop shop-a discard=true"}, eng.Took())
	queues, err := reg.TaskQueues(ctx, accounts.ClassPlatform)
	require.NoError(t, err)
	require.Empty(t, queues, "a removed platform's queue is no longer served")

	_, err = svc.AddPlatform(ctx, p, accounts.AddOptions{})
	require.ErrorIs(t, err, accounts.ErrRemovedName, "a removed name is not reused by accident")
	again, err := svc.AddPlatform(ctx, p, accounts.AddOptions{ReuseRemoved: true})
	require.NoError(t, err, "but explicitly")
	require.Equal(t, accounts.Active, again.State)
	_, err = svc.EditPlatform(ctx, "nobody", 0, func(*config.Platform) error { return nil })
	require.ErrorIs(t, err, accounts.ErrNotFound)
}

// TestEngineFailureKeepsTheRegistration: the registry is the truth; a
// Temporal step that fails leaves the entry written and says what to run.
func TestEngineFailureKeepsTheRegistration(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newService()
	eng.FailStep("start", fmt.Errorf("temporal unreachable"))
	_, err := svc.AddPlatform(ctx, platform(t, "shop-a"), accounts.AddOptions{})
	var ee *accounts.EngineError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Contains(t, err.Error(), "ordersync platform start shop-a")
	_, found, err := reg.Get(ctx, accounts.ClassPlatform, "shop-a")
	require.NoError(t, err)
	require.True(t, found)
}

func TestApplyAddsUpdatesPrunesAndKeepsRunningQueues(t *testing.T) {
	ctx := context.Background()
	svc, reg, eng := newService()
	a, b, c := platform(t, "shop-a"), platform(t, "shop-b"), platform(t, "shop-c")
	eng.SetRunning("shop-b", "orders-shop-b") // a cursor from before the registry

	changes, err := svc.ApplyPlatforms(ctx, []config.Platform{a, b}, accounts.ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionAdd, accounts.ActionAdd}, actions(changes))
	n, err := reg.Count(ctx, accounts.Filter{Class: accounts.ClassPlatform})
	require.NoError(t, err)
	require.Zero(t, n, "a dry run writes nothing")
	require.Empty(t, eng.Took())

	changes, err = svc.ApplyPlatforms(ctx, []config.Platform{a, b}, accounts.ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionAdd, accounts.ActionAdd}, actions(changes))
	require.Contains(t, changes[1].Note, "keeps task queue orders-shop-b")
	e, _, _ := reg.Get(ctx, accounts.ClassPlatform, "shop-b")
	require.Equal(t, "orders-shop-b", e.TaskQueue, "the running cursor's queue is kept")
	require.ElementsMatch(t, []string{"start shop-a", "start shop-b", "reconfigure shop-b"}, eng.Took(),
		"a cursor from before the registry gets the file's settings")

	a.Retries = 1
	changes, err = svc.ApplyPlatforms(ctx, []config.Platform{a, c}, accounts.ApplyOptions{Prune: true, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUpdate, accounts.ActionAdd, accounts.ActionRemove}, actions(changes))
	require.Equal(t, []string{"retries"}, changes[0].Fields)
	require.Empty(t, eng.Took())

	changes, err = svc.ApplyPlatforms(ctx, []config.Platform{a, c}, accounts.ApplyOptions{Prune: true})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUpdate, accounts.ActionAdd, accounts.ActionRemove}, actions(changes))
	require.ElementsMatch(t, []string{"reconfigure shop-a", "start shop-c", "stop shop-b discard=false"}, eng.Took(), "platforms are applied a few at a time")

	changes, err = svc.ApplyPlatforms(ctx, []config.Platform{a, c}, accounts.ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{accounts.ActionUnchanged, accounts.ActionUnchanged}, actions(changes))
	require.ElementsMatch(t, []string{"start shop-a", "start shop-c"}, eng.Took(), "an unchanged platform's cursor is started if it does not run")

	_, err = svc.ApplyPlatforms(ctx, []config.Platform{b}, accounts.ApplyOptions{})
	require.ErrorIs(t, err, accounts.ErrRemovedName, "a pruned name comes back only explicitly")
	_, err = svc.ApplyPlatforms(ctx, []config.Platform{a, a}, accounts.ApplyOptions{})
	require.ErrorContains(t, err, "listed twice")
}

func actions(changes []accounts.Change) []string {
	return actionsOf(changes, func(c accounts.Change) string { return c.Action })
}

// actionsOf lists what an apply did to each entry, in order.
func actionsOf[C any](changes []C, action func(C) string) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = action(c)
	}
	return out
}
