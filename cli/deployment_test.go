package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// run runs the root command with args and the environment the test set.
func runRoot(t *testing.T, args ...string) error {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &App{Out: &out, Err: &errOut}
	root := NewRootCommand(app)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	return root.Execute()
}

func requireUsage(t *testing.T, err error, contains ...string) {
	t.Helper()
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "want a usage error, got %v", err)
	require.Equal(t, ExitUsage, exit.Code, "%v", err)
	for _, c := range contains {
		require.ErrorContains(t, err, c)
	}
}

// TestWorkerDeploymentFlagsComeInPairs: the worker refuses half a worker
// version before it touches anything, naming the flag and variable that
// is missing, whichever way the other was given.
func TestWorkerDeploymentFlagsComeInPairs(t *testing.T) {
	t.Setenv("ORDERSYNC_PLATFORMS_FILE", "/nonexistent/platforms.yaml")
	requireUsage(t, runRoot(t, "worker", "--deployment-name", "ordersync"),
		"--deployment-name (ORDERSYNC_DEPLOYMENT_NAME) is set but --build-id (ORDERSYNC_BUILD_ID) is not")
	requireUsage(t, runRoot(t, "worker", "--build-id", "v2"),
		"--build-id (ORDERSYNC_BUILD_ID) is set but --deployment-name (ORDERSYNC_DEPLOYMENT_NAME) is not")
	requireUsage(t, runRoot(t, "worker", "--deployment-name", "orders.eu", "--build-id", "v2"),
		"must not contain '.' or ':'")

	t.Setenv("ORDERSYNC_DEPLOYMENT_NAME", "ordersync")
	requireUsage(t, runRoot(t, "worker"), "--build-id (ORDERSYNC_BUILD_ID) is not")
	// The flag completes the pair the environment started: the worker gets
	// past the check to the platforms file.
	err := runRoot(t, "worker", "--build-id", "v2")
	require.ErrorContains(t, err, "/nonexistent/platforms.yaml")
	require.NotContains(t, err.Error(), "BUILD_ID")
}

// TestDeploymentCommandsNeedADeployment: without --deployment-name or
// ORDERSYNC_DEPLOYMENT_NAME, and a build where one is needed, the commands
// say so before dialing anything.
func TestDeploymentCommandsNeedADeployment(t *testing.T) {
	t.Setenv("ORDERSYNC_TEMPORAL_ADDRESS", "127.0.0.1:1") // nothing listens: a dial would fail otherwise
	requireUsage(t, runRoot(t, "deployment", "describe"), "give --deployment-name or set ORDERSYNC_DEPLOYMENT_NAME")
	requireUsage(t, runRoot(t, "deployment", "set-current", "--deployment-name", "ordersync"), "give --build-id or set ORDERSYNC_BUILD_ID")
	requireUsage(t, runRoot(t, "deployment", "wait-drained", "--deployment-name", "ordersync", "--build-id", "__x"), `--build-id "__x": must not start with "__"`)
	requireUsage(t, runRoot(t, "deployment", "set-current", "--deployment-name", "a:b", "--build-id", "v1"), "--deployment-name")
}
