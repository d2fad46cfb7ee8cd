package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
)

// Helpers for the chaos tests: killing worker processes without warning,
// restarting the Temporal server on its database file, and running the
// ordersync binary as an operator would.

// kill9 kills the worker with SIGKILL: no drain, no goodbye to the server;
// its polls, activities and sticky workflow caches simply vanish.
func (w *workerProc) kill9() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// alive reports whether the process is still running.
func (w *workerProc) alive() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// waitRunning waits until the worker logs that its task-queue workers run,
// i.e. it reached the server and polls. False if it exited or took too long
// (it dials the server once at start and exits if that fails).
func (w *workerProc) waitRunning(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(w.tail(1<<20), "worker running") {
			return true
		}
		select {
		case <-w.done:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// freeTCPPort picks a loopback port that is free now. The chaos test keeps
// it for every start of the server, so clients reconnect by themselves.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runOrdersync runs the ordersync binary with env added and returns its
// exit code and output, as an operator's shell would see them.
func runOrdersync(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ordersyncBinary(t), args...)
	cmd.Env = append(environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		require.NoError(t, err, "run ordersync %v", args)
	}
	return code, out.String(), errOut.String()
}

// tryStatus queries a cursor's status, tolerating a server that is down.
func tryStatus(c client.Client, platform string) (api.CursorStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st api.CursorStatus
	v, err := c.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// tryDeadLetters lists a platform's dead letters; a dead-letter workflow
// that was never started (no failure yet) holds none.
func tryDeadLetters(c client.Client, platform string) ([]api.DeadLetterEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterList)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []api.DeadLetterEntry
	err = v.Get(&entries)
	return entries, err
}

// tryDeadLetterStatus queries a platform's dead-letter workflow for its
// status; a platform with no dead-letter workflow has none to report.
func tryDeadLetterStatus(c client.Client, platform string) (api.DeadLetterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st api.DeadLetterStatus
	v, err := c.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterStatus)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	err = v.Get(&st)
	return st, err
}
