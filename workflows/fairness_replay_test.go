package workflows

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/fairness"
)

// keyRecorder is a worker interceptor that records the fairness key of
// every task a workflow asks the server for: each scheduled activity and
// each child workflow. Local activities run in the workflow's own task
// and have none.
type keyRecorder struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex // the test environment runs children on goroutines
	tasks []string   // "activity FetchPage key=shop-x"
}

func (r *keyRecorder) add(kind, name, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tasks = append(r.tasks, fmt.Sprintf("%s %s key=%s", kind, name, key))
}

func (r *keyRecorder) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &keyInbound{rec: r}
	in.Next = next
	return in
}

type keyInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *keyRecorder
}

func (i *keyInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	o := &keyOutbound{rec: i.rec}
	o.Next = outbound
	return i.Next.Init(o)
}

type keyOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *keyRecorder
}

func (o *keyOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...interface{}) workflow.Future {
	o.rec.add("activity", activityType, workflow.GetActivityOptions(ctx).Priority.FairnessKey)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *keyOutbound) ExecuteChildWorkflow(ctx workflow.Context, childType string, args ...interface{}) workflow.ChildWorkflowFuture {
	o.rec.add("child", childType, workflow.GetChildWorkflowOptions(ctx).Priority.FairnessKey)
	return o.Next.ExecuteChildWorkflow(ctx, childType, args...)
}

// accountOf is the name whose fairness key a recorded workflow's tasks
// carry: the platform's, or for a Delivery the destination's.
func accountOf(t *testing.T, started *historypb.WorkflowExecutionStartedEventAttributes) string {
	t.Helper()
	switch started.GetWorkflowType().GetName() {
	case api.SliceWorkflowType:
		var in api.SliceInput
		mustDecode(started.GetInput(), &in)
		return in.Platform.Name
	case api.CursorWorkflowType:
		var in api.CursorInput
		mustDecode(started.GetInput(), &in)
		return in.Platform.Name
	case api.DeadLetterWorkflowType:
		var in api.DeadLetterInput
		mustDecode(started.GetInput(), &in)
		return in.Platform.Name
	case api.DeliveryWorkflowType:
		var in api.DeliveryInput
		mustDecode(started.GetInput(), &in)
		return in.Destination.Name
	case api.RefetchWorkflowType:
		var in api.RefetchInput
		mustDecode(started.GetInput(), &in)
		return in.Platform.Name
	case api.ReconcileWorkflowType:
		var in api.ReconcileInput
		mustDecode(started.GetInput(), &in)
		return in.Platform.Name
	}
	t.Fatalf("unknown workflow type %s", started.GetWorkflowType().GetName())
	return ""
}

// TestReplayGivesEveryTaskItsFairnessKey replays every recorded history
// (cursors, slices, dead-letter workflows, deliveries, refetches; every
// release) and requires every activity and child workflow today's code
// asks for to carry its account's fairness key: a task without one would
// be served first come, first served on a queue the accounts share,
// behind a huge account's backlog. Keys ride on commands the replayer does not compare,
// so old histories replay with them (versions.go, "Not versioned").
func TestReplayGivesEveryTaskItsFairnessKey(t *testing.T) {
	kinds := map[string]bool{}
	for release, files := range recordedHistories(t) {
		for _, f := range files {
			t.Run(release+"/"+filepath.Base(f), func(t *testing.T) {
				h := readHistory(t, f)
				started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
				rec := &keyRecorder{}
				replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
					Interceptors: []interceptor.WorkerInterceptor{rec},
				})
				require.NoError(t, err)
				Register(replayer)
				require.NoError(t, replayer.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
					OriginalExecution: workflow.Execution{ID: workflowIDOf(t, started), RunID: started.GetOriginalExecutionRunId()},
				}))
				want := fairness.Key(accountOf(t, started))
				require.NotEmpty(t, want)
				recorded, _ := recordedCommands(h)
				tasks := 0
				for _, c := range recorded {
					if c.Kind == "activity" || c.Kind == "child" {
						tasks++
					}
				}
				require.Len(t, rec.tasks, tasks, "every activity and child the history holds is asked for again")
				for _, task := range rec.tasks {
					kind, rest, _ := strings.Cut(task, " ")
					name, key, _ := strings.Cut(rest, " ")
					require.Equal(t, "key="+want, key, "%s %s carries the wrong fairness key", kind, name)
					kinds[kind+" "+name] = true
				}
			})
		}
	}
	// The histories must exercise the commands this test is about, or it
	// proves nothing.
	for _, k := range []string{"child FetchSlice", "activity FetchPage", "activity RecordDeadLetter", "activity NextBatch", "activity DeliverChanges", "activity RefetchOrder", "activity ReconcileCount"} {
		require.True(t, kinds[k], "no recorded history asks for %s; the check covers less than it claims", k)
	}
}

// TestBulkSliceTasksCarryTheFairnessKey: the bulk path's activities, which
// no recorded history holds, carry the platform's fairness key too, also
// the cancel a cancelled slice sends on a disconnected context with
// options of its own.
func TestBulkSliceTasksCarryTheFairnessKey(t *testing.T) {
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.PageSize = "shop-bulk", "shopify", 50
	p.Endpoint = "http://127.0.0.1:1/shops/x"
	p.Credentials = config.CredentialRef{Env: "X"}
	p.TaskQueue = "orders-shopify"
	p.Options = map[string]any{"bulk_min_span": "1h", "bulk_poll_interval": "5s"}
	require.Nil(t, p.Validate())
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	in := api.SliceInput{Platform: p.Settings(), Start: start, End: start.Add(time.Hour), LocalFirst: true}

	rec := &keyRecorder{}
	newEnv := func() *testsuite.TestWorkflowEnvironment {
		var s testsuite.WorkflowTestSuite
		s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}})
		Register(env)
		env.RegisterActivity(acts)
		env.SetStartTime(start.Add(3 * time.Hour))
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SliceWorkflowID(p.Name, in.Start, in.End)})
		return env
	}

	done := newEnv()
	done.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/1", Status: connectors.BulkCompleted, HasURL: true}, nil).Once()
	done.OnActivity(acts.DownloadBulk, mock.Anything, mock.Anything).Return(activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil).Once()
	done.ExecuteWorkflow(FetchSlice, in)
	require.True(t, done.IsWorkflowCompleted())
	require.NoError(t, done.GetWorkflowError())

	cancelled := newEnv()
	cancelled.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/2", Status: connectors.BulkRunning}, nil).Once()
	cancelled.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/2", Status: connectors.BulkRunning}, nil)
	cancelled.OnActivity(acts.CancelBulk, mock.Anything, mock.Anything).Return(nil).Once()
	cancelled.RegisterDelayedCallback(cancelled.CancelWorkflow, 12*time.Second)
	cancelled.ExecuteWorkflow(FetchSlice, in)
	require.True(t, cancelled.IsWorkflowCompleted())

	seen := map[string]bool{}
	for _, task := range rec.tasks {
		kind, rest, _ := strings.Cut(task, " ")
		name, key, _ := strings.Cut(rest, " ")
		require.Equal(t, "key="+fairness.Key(p.Name), key, "%s %s carries the wrong fairness key", kind, name)
		seen[name] = true
	}
	for _, name := range []string{"StartBulk", "DownloadBulk", "PollBulk", "CancelBulk"} {
		require.True(t, seen[name], "%s was not asked for; the check covers less than it claims", name)
	}
}
