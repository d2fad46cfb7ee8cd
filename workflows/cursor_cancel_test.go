package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestCancelEndsCursor: cancelling a cursor (temporal workflow cancel) ends
// it as cancelled, whether it waits for a slice to settle or for slices in
// flight. Every other cursor test relies on this to stop; a cursor that
// ignores cancellation spins forever, so this test has a wall-clock guard.
func TestCancelEndsCursor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delay  time.Duration
		cancel time.Duration
	}{
		{"while settling", 0, 10 * time.Minute},
		{"with slices in flight", time.Hour, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			delays := map[string]time.Duration{}
			for _, id := range tiles(at("-2h"), t0, p.Interval.D()) {
				delays[id] = tc.delay
			}
			pages := watchPages(env)
			mockPages(env, pages, onePage, delays)
			var before api.CursorStatus
			stopAt(env, tc.cancel, func() { before = status(t, env) })

			done := make(chan struct{})
			go func() {
				defer close(done)
				env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the cursor did not end within 10s of its cancellation")
			}
			requireStopped(t, env)
			require.Equal(t, tc.delay > 0, len(before.InFlight) > 0)
		})
	}
}
