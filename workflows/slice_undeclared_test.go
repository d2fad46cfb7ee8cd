package workflows_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
)

// TestSliceRunsAnUndeclaredPageAgain: workers sharing a task queue read
// different platforms files, and a page's attempts land on workers whose
// file lacks the platform (ErrNotDeclared, nothing sent). The slice is not
// dead-lettered, even with retries 0 (one attempt): the page is run again
// until a worker that declares the platform takes it. A platform no worker
// declares ends in the dead-letter workflow after maxUndeclaredRounds
// rounds of the platform's retries.
func TestSliceRunsAnUndeclaredPageAgain(t *testing.T) {
	notDeclared := temporal.NewApplicationError("x: not declared in this worker's platforms file /etc/ordersync/a.yaml", activities.ErrNotDeclared)
	for _, tc := range []struct {
		name      string
		retries   int
		failures  int // attempts that land on a worker without the platform
		wantCalls int
		dead      bool
	}{
		{"retries 0", 0, 3, 4, false},
		{"retries 2, a whole round on the wrong workers", 2, 1 + 3 + 1, 1 + 3 + 2, false},
		{"declared nowhere", 1, 1 << 20, 2 + 10*2, true}, // local + 1 retry, then 10 rounds of 2
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Retries = tc.retries
			pages := watchPages(env)
			var mu sync.Mutex
			calls := 0
			mockPages(env, pages, func(activities.FetchPageInput) (activities.FetchPageResult, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= tc.failures {
					return activities.FetchPageResult{}, notDeclared
				}
				return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
			}, nil)
			dl := mockDeadLetters(env, 0, false)

			res := runSlice(t, env, p, at("-1h"), at("-45m"))

			require.Len(t, pages.all(), tc.wantCalls)
			if tc.dead {
				require.Equal(t, api.SliceFailed, res.Outcome)
				require.Len(t, dl.all(), 1)
				require.Greater(t, dl.all()[0].Attempts, 1+tc.retries, "the rounds after the first count")
				require.Contains(t, dl.all()[0].Error, "not declared in this worker's platforms file")
				return
			}
			require.Equal(t, api.SliceCompleted, res.Outcome)
			require.Equal(t, 1, res.OrdersInserted)
			require.Empty(t, dl.all(), "a page another worker may take is never dead-lettered for it")
		})
	}
}
