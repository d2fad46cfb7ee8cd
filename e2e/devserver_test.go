package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/searchattr"
)

func greet(ctx workflow.Context, name string) (string, error) {
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	return "hello " + name, nil
}

// TestDevServerRunsWorkflowAndKeepsData starts the embedded server on a
// SQLite file, runs a workflow, restarts the server on the same file and
// finds the workflow again.
func TestDevServerRunsWorkflowAndKeepsData(t *testing.T) {
	parallel(t, light)
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "temporal.db")
	srv := startServer(t, db)
	c := dial(t, srv)

	w := sdkworker.New(c, "e2e-greet", sdkworker.Options{})
	w.RegisterWorkflow(greet)
	require.NoError(t, w.Start())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: "e2e-greet"}, greet, "ordersync")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	require.Equal(t, "hello ordersync", got)
	w.Stop()

	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: srv.Namespace()})
	require.NoError(t, err)
	require.GreaterOrEqual(t, ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), devserver.DefaultRetention)

	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: srv.Namespace()})
	require.NoError(t, err)
	for _, a := range searchattr.All {
		require.Equal(t, a.Type, attrs.GetCustomAttributes()[a.Name], "search attribute %s", a.Name)
	}
	c.Close()
	require.NoError(t, srv.Stop())

	srv2 := startServer(t, db)
	defer srv2.Stop()
	c2 := dial(t, srv2)
	desc, err := c2.DescribeWorkflowExecution(ctx, "greet-1", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
}
