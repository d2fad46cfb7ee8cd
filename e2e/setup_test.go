package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/tsetup"
)

// setupPlatforms is enough of a platforms file for a worker to get as far
// as its namespace check; nothing is fetched.
const setupPlatforms = `
default:
  kind: sim
platforms:
  setup-shop:
    endpoint: "http://127.0.0.1:9/shops/x"
    credentials: {env: ORDERSYNC_E2E_SETUP_TOKEN}
`

// TestSetupPreparesNamespace runs `ordersync setup` against the embedded
// server as an operator would against a cluster: a worker refuses a
// namespace that is not set up, --check reports what is missing, setup
// creates it, a second run changes nothing, a lost attribute is found and
// put back, a longer retention is kept, and then the worker starts.
func TestSetupPreparesNamespace(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end: runs the ordersync binary against a server")
	}
	srv := startServer(t, "")
	t.Cleanup(func() { _ = srv.Stop() })
	c := dial(t, srv)
	ctx := context.Background()
	const ns = "orders-setup"
	dir := t.TempDir()
	env := []string{
		"ORDERSYNC_TEMPORAL_ADDRESS=" + srv.FrontendAddress(),
		"ORDERSYNC_TEMPORAL_NAMESPACE=" + ns,
		"ORDERSYNC_STORE_DSN=sqlite://" + filepath.Join(dir, "orders.db"),
		"ORDERSYNC_PLATFORMS_FILE=" + writeTemp(t, setupPlatforms),
		"ORDERSYNC_METRICS_ADDRESS=",
		"ORDERSYNC_E2E_SETUP_TOKEN=x",
	}
	setup := func(args ...string) (int, tsetup.Report, string) {
		t.Helper()
		code, out, errOut := runOrdersync(t, env, append([]string{"setup", "-o", "json"}, args...)...)
		var r tsetup.Report
		require.NoError(t, json.Unmarshal([]byte(out), &r), "setup output: %s %s", out, errOut)
		return code, r, errOut
	}
	states := func(r tsetup.Report) map[string]string {
		m := map[string]string{}
		for _, s := range r.Steps {
			m[s.Item] = s.State
		}
		return m
	}
	all := func(state string) map[string]string {
		m := map[string]string{"namespace": state, "retention": state}
		for _, a := range searchattr.All {
			m["search attribute "+a.Name] = state
		}
		return m
	}

	// A worker on a namespace that does not exist stops at once, and says what to do.
	code, _, errOut := runOrdersync(t, env, "worker")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "namespace "+ns+" does not exist")
	require.Contains(t, errOut, "ordersync setup")

	code, r, errOut := setup("--check")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "run `ordersync setup`")
	want := all(tsetup.StateMissing)
	delete(want, "retention") // nothing to look at before the namespace exists
	require.Equal(t, want, states(r))

	code, r, errOut = setup()
	require.Zero(t, code, errOut)
	want = all(tsetup.StateAdded)
	want["namespace"], want["retention"] = tsetup.StateCreated, tsetup.StateOK
	require.Equal(t, want, states(r))
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	require.NoError(t, err)
	require.Equal(t, tsetup.DefaultRetention, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	require.NoError(t, err)
	for _, a := range searchattr.All {
		require.Equal(t, a.Type, attrs.GetCustomAttributes()[a.Name], a.Name)
	}

	code, r, errOut = setup()
	require.Zero(t, code, errOut)
	require.Equal(t, all(tsetup.StateOK), states(r), "a second run changes nothing")

	// An attribute removed by hand, and a retention raised by hand.
	_, err = c.OperatorService().RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{
		Namespace: ns, SearchAttributes: []string{searchattr.SliceState.GetName()}})
	require.NoError(t, err)
	const longer = 90 * 24 * time.Hour
	_, err = c.WorkflowService().UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: ns, Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(longer)}})
	require.NoError(t, err)

	code, _, errOut = runOrdersync(t, env, "worker")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "lacks the search attribute(s) SliceState (Keyword)")
	require.Contains(t, errOut, "ordersync setup")

	code, r, errOut = setup("--check")
	require.Equal(t, 1, code, errOut)
	want = all(tsetup.StateOK)
	want["search attribute SliceState"] = tsetup.StateMissing
	require.Equal(t, want, states(r))

	code, out, errOut := runOrdersync(t, env, "setup")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "search attribute SliceState")
	require.Contains(t, out, "Done: the namespace is ready for ordersync.")
	desc, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	require.NoError(t, err)
	require.Equal(t, longer, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), "a longer retention is never lowered")

	w := startWorkerProc(t, "worker", env)
	require.True(t, w.waitRunning(30*time.Second), "the worker starts once the namespace is set up:\n%s", w.tail(4000))
}
