package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
)

// silentClient is a Temporal server whose cursors run but no worker serves
// them: queries and updates get no answer. Any other call panics.
type silentClient struct {
	client.Client
	pollers int // workers the task queue reports as polling recently
}

func (c *silentClient) UpdateWorkflow(ctx context.Context, _ client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	<-ctx.Done() // the server holds an update until a worker takes it
	return nil, client.NewWorkflowUpdateServiceTimeoutOrCanceledError(ctx.Err())
}

func (c *silentClient) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	// A running cursor with other settings, so apply sends an update.
	return jsonValue(`{"platform":"quiet","settings":{"name":"quiet","page_size":1}}`), nil
}

func (c *silentClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{TaskQueue: "orders-shared"},
	}, nil
}

func (c *silentClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	return &workflowservice.DescribeTaskQueueResponse{Pollers: make([]*taskqueuepb.PollerInfo, c.pollers)}, nil
}

func (c *silentClient) Close() {}

type jsonValue string

func (v jsonValue) HasValue() bool    { return true }
func (v jsonValue) Get(ptr any) error { return json.Unmarshal([]byte(v), ptr) }

// runCommand runs one ordersync command in-process with c as its Temporal
// client (nil: dialling fails), failing the test if it does not end within
// a while.
func runCommand(t *testing.T, c client.Client, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if os.Getenv("ORDERSYNC_STORE_DSN") == "" { // the registry, in this test's own directory
		t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	}
	var out, errOut bytes.Buffer
	dial := func(context.Context) (client.Client, error) {
		if c == nil {
			return nil, errors.New("this test has no Temporal server")
		}
		return c, nil
	}
	app := &App{Out: &out, Err: &errOut, dial: dial}
	done := make(chan int, 1)
	go func() { done <- Execute(NewRootCommand(app), args, &errOut) }()
	select {
	case code = <-done:
		return code, out.String(), errOut.String()
	case <-time.After(10 * time.Second):
		t.Fatalf("ordersync %s still waits after 10s", strings.Join(args, " "))
		return 0, "", ""
	}
}

// writePlatforms writes a platforms file for the test and returns its path.
func writePlatforms(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

const quietPlatform = `
platforms:
  quiet:
    kind: sim
    endpoint: http://127.0.0.1:1/shops/quiet
    credentials: {env: ORDERSYNC_TEST_QUIET_TOKEN}
    task_queue: orders-shared
`

// TestUpdatesFailWhenNoWorkerAnswers: every command that sends an update
// gives up after --timeout with exit status 1, naming the task queue that
// needs a worker, instead of waiting forever.
func TestUpdatesFailWhenNoWorkerAnswers(t *testing.T) {
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	t.Setenv("ORDERSYNC_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	t.Setenv("ORDERSYNC_TEMPORAL_NAMESPACE", "default")
	file := writePlatforms(t, quietPlatform)
	commands := []struct {
		args   []string
		update string
	}{
		{[]string{"platform", "pause", "quiet", "--reason", "x"}, api.SignalPause},
		{[]string{"platform", "resume", "quiet"}, api.SignalResume},
		{[]string{"slices", "reprocess", "--platform", "quiet", "--from", "-2h", "--to", "-1h"}, api.SignalReprocess},
	}
	for _, cmd := range commands {
		t.Run(strings.Join(cmd.args[:2], " "), func(t *testing.T) {
			start := time.Now()
			code, _, errOut := runCommand(t, &silentClient{}, append(cmd.args, "-f", file, "--timeout", "200ms")...)
			require.Equal(t, ExitFailure, code, errOut)
			require.Less(t, time.Since(start), 5*time.Second)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %s", errOut)
			require.Contains(t, errOut, "ordersync: no worker answered the "+cmd.update+" update of cursor/quiet within 200ms "+
				`(task queue "orders-shared": no worker polls it). Is `+"`ordersync worker`"+` running for platform quiet against 127.0.0.1:7233, namespace default?`)
			require.Contains(t, errOut, "The request was not confirmed")
		})
	}

	t.Run("workers poll but do not answer", func(t *testing.T) {
		code, _, errOut := runCommand(t, &silentClient{pollers: 2}, "platform", "pause", "quiet", "-f", file, "--timeout", "100ms")
		require.Equal(t, ExitFailure, code)
		require.Contains(t, errOut, `(task queue "orders-shared": 2 worker(s) polled it recently but none answered`)
	})
	t.Run("a timeout must be positive", func(t *testing.T) {
		code, _, errOut := runCommand(t, &silentClient{}, "platform", "pause", "quiet", "-f", file, "--timeout", "0s")
		require.Equal(t, ExitUsage, code)
		require.Contains(t, errOut, "--timeout must be positive, got 0s")
	})
	t.Run("the default is 15s", func(t *testing.T) {
		for _, args := range [][]string{{"platform", "pause"}, {"platform", "resume"}, {"platform", "apply"}, {"slices", "reprocess"}} {
			cmd, _, err := NewRootCommand(&App{}).Find(args)
			require.NoError(t, err)
			require.Equal(t, "15s", cmd.Flags().Lookup("timeout").DefValue, "%v", args)
			require.Contains(t, cmd.Long, "If no worker answers within --timeout", "%v", args)
		}
	})
}
