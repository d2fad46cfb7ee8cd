package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// Read-only commands (status, dlq list, verify) work from the server alone:
// an operator in a new shell, without the platforms file, still sees every
// running cursor. The file is needed only where settings are (start,
// apply, worker), and then the error says how to give one.

// errNoPlatformsFile explains how to give the platforms file.
func errNoPlatformsFile(path string) error {
	return Usage(fmt.Errorf("platforms file %s not found: give one with -f FILE or ORDERSYNC_PLATFORMS_FILE=FILE", path))
}

// loadPlatformsIfAny loads the platforms file; (nil, nil) when it is the
// default one and it does not exist, so the caller can ask the server.
func (a *App) loadPlatformsIfAny() (*config.File, error) {
	given := a.fileGiven
	f, err := config.LoadFile(a.PlatformsFile)
	if err == nil {
		return f, nil
	}
	if errors.Is(err, fs.ErrNotExist) && !given {
		return nil, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoPlatformsFile(a.PlatformsFile)
	}
	return nil, Usage(err)
}

// platformNames is what a read-only command shows: the named platforms, or
// the file's, or, with no file, every platform whose workflow of the given
// type runs on the server.
func (a *App) platformNames(ctx context.Context, c client.Client, args []string, workflowType string) ([]string, error) {
	f, err := a.loadPlatformsIfAny()
	if err != nil {
		return nil, err
	}
	if f != nil || len(args) > 0 {
		ps, err := a.selectKnown(ctx, f, args)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.Name
		}
		return names, nil
	}
	if len(args) > 0 {
		return args, nil
	}
	return runningPlatforms(ctx, c, workflowType)
}

// runningPlatforms lists the platforms with a running workflow of the type
// (PlatformCursor or DeadLetter), by their deterministic workflow IDs.
func runningPlatforms(ctx context.Context, c client.Client, workflowType string) ([]string, error) {
	prefix := map[string]string{api.CursorWorkflowType: "cursor/", api.DeadLetterWorkflowType: "deadletter/"}[workflowType]
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflowType)
	seen := map[string]bool{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list running %s workflows: %w", workflowType, err)
		}
		for _, e := range resp.GetExecutions() {
			if name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), prefix); ok {
				seen[name] = true
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
