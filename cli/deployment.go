package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/config"
)

// The `ordersync deployment` commands drive a rolling upgrade of workers
// that run as versions of a Temporal Worker Deployment (docs/production.md, "Rolling
// upgrades"): promote a build, then wait until the old one is drained.
// They call the same APIs as `temporal worker deployment ...`.

func newDeploymentCommand(app *App) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "deployment",
		Short: "Promote a worker build and watch the old one drain (Temporal worker versioning)",
		Long: `Workers started with --deployment-name and --build-id are versions of a
Temporal Worker Deployment. New builds take no work until they are promoted
with set-current; then every ordersync workflow (all auto-upgrade) runs its
next task on the new build. wait-drained tells when the old build is no
longer needed.`,
	}
	cmd.PersistentFlags().StringVar(&name, "deployment-name", "", "Worker Deployment name (default $ORDERSYNC_DEPLOYMENT_NAME)")
	deploymentName := func() (string, error) {
		return flagOrEnv("deployment", "--deployment-name", name, "ORDERSYNC_DEPLOYMENT_NAME", app.Process.DeploymentName, config.ValidateDeploymentName)
	}
	cmd.AddCommand(newDeploymentDescribeCommand(app, deploymentName),
		newDeploymentSetCurrentCommand(app, deploymentName),
		newDeploymentWaitDrainedCommand(app, deploymentName))
	return cmd
}

// buildIDFlag registers --build-id, defaulting to $ORDERSYNC_BUILD_ID.
func buildIDFlag(cmd *cobra.Command, dst *string, what string) {
	cmd.Flags().StringVar(dst, "build-id", "", what+" (default $ORDERSYNC_BUILD_ID)")
}

func (a *App) buildID(given string) (string, error) {
	return flagOrEnv("build", "--build-id", given, "ORDERSYNC_BUILD_ID", a.Process.BuildID, config.ValidateBuildID)
}

// flagOrEnv is a flag's value, or else the one from its environment
// variable; neither, or a value validate refuses, is a usage error.
func flagOrEnv(what, flag, given, env, fromEnv string, validate func(value, label string) error) (string, error) {
	if given == "" {
		given = fromEnv
	}
	if given == "" {
		return "", Usage(fmt.Errorf("no %s: give %s or set %s", what, flag, env))
	}
	if err := validate(given, flag); err != nil {
		return "", Usage(err)
	}
	return given, nil
}

// deploymentVersionRow is one version as describe prints it.
type deploymentVersionRow struct {
	BuildID string `json:"build_id"`
	// Role is current, ramping, or empty.
	Role string `json:"role,omitempty"`
	// Drainage is draining (still has pinned workflows), drained, or empty
	// (current, ramping, or never current).
	Drainage string    `json:"drainage,omitempty"`
	Created  time.Time `json:"created"`
}

type deploymentDescription struct {
	Deployment string                 `json:"deployment"`
	Current    string                 `json:"current_build_id"`
	Ramping    string                 `json:"ramping_build_id,omitempty"`
	Versions   []deploymentVersionRow `json:"versions"`
}

func newDeploymentDescribeCommand(app *App, deploymentName func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:     "describe",
		Short:   "List the deployment's builds: which is current, which are draining or drained",
		Example: "  ordersync deployment describe --deployment-name ordersync",
		Args:    cobra.NoArgs,
		RunE: app.deploymentRun(deploymentName, nil, func(ctx context.Context, c client.Client, name, _ string) error {
			d, err := describeDeployment(ctx, c, name)
			if err != nil {
				return err
			}
			if app.Output == "json" {
				return writeJSON(app, d)
			}
			fmt.Fprintf(app.Out, "Deployment %s: current build %s\n", d.Deployment, orDash(d.Current))
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BUILD ID\tROLE\tDRAINAGE\tCREATED")
			for _, v := range d.Versions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.BuildID, orDash(v.Role), orDash(v.Drainage), fmtTime(v.Created))
			}
			return tw.Flush()
		}),
	}
}

// deploymentRun is the RunE of a deployment command: it resolves the
// deployment name and, when buildFlag is not nil, the build (--build-id or
// $ORDERSYNC_BUILD_ID), dials Temporal, and runs fn.
func (a *App) deploymentRun(deploymentName func() (string, error), buildFlag *string,
	fn func(ctx context.Context, c client.Client, name, build string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		name, err := deploymentName()
		if err != nil {
			return err
		}
		var build string
		if buildFlag != nil {
			if build, err = a.buildID(*buildFlag); err != nil {
				return err
			}
		}
		c, err := a.Dial(cmd.Context())
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(cmd.Context(), c, name, build)
	}
}

func describeDeployment(ctx context.Context, c client.Client, name string) (deploymentDescription, error) {
	resp, err := c.WorkerDeploymentClient().GetHandle(name).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return deploymentDescription{}, deploymentError(name, "", err)
	}
	d := deploymentDescription{Deployment: name, Versions: []deploymentVersionRow{}}
	rc := resp.Info.RoutingConfig
	if rc.CurrentVersion != nil {
		d.Current = rc.CurrentVersion.BuildID
	}
	if rc.RampingVersion != nil {
		d.Ramping = rc.RampingVersion.BuildID
	}
	for _, v := range resp.Info.VersionSummaries {
		row := deploymentVersionRow{BuildID: v.Version.BuildID, Drainage: drainageName(v.DrainageStatus), Created: v.CreateTime}
		switch v.Version.BuildID {
		case d.Current:
			row.Role = "current"
		case d.Ramping:
			row.Role = "ramping"
		}
		d.Versions = append(d.Versions, row)
	}
	return d, nil
}

func drainageName(s client.WorkerDeploymentVersionDrainageStatus) string {
	switch s {
	case client.WorkerDeploymentVersionDrainageStatusDraining:
		return "draining"
	case client.WorkerDeploymentVersionDrainageStatusDrained:
		return "drained"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newDeploymentSetCurrentCommand(app *App, deploymentName func() (string, error)) *cobra.Command {
	var buildID string
	var wait time.Duration
	var ignoreMissing bool
	cmd := &cobra.Command{
		Use:   "set-current",
		Short: "Promote a build: every workflow's next task runs on it",
		Long: `Makes the build the deployment's current version. New workflows start on
it and every running ordersync workflow (they all auto-upgrade) runs its
next workflow task on it; the previous build gets no new work and starts
draining.

The build's workers must be running and polling every task queue the
current build polls. Workers register their queues a moment after they
start, so set-current tries again for up to --wait while the build is not
yet known or lacks a queue, then says which.`,
		Example: "  ordersync deployment set-current --deployment-name ordersync --build-id v1.5.0",
		Args:    cobra.NoArgs,
		RunE: app.deploymentRun(deploymentName, &buildID, func(ctx context.Context, c client.Client, name, build string) error {
			prev, err := setCurrentVersion(ctx, c, name, build, wait, ignoreMissing)
			if err != nil {
				return err
			}
			if app.Output == "json" {
				return writeJSON(app, map[string]string{"deployment": name, "current_build_id": build, "previous_build_id": prev})
			}
			if prev == build {
				fmt.Fprintf(app.Out, "Deployment %s: build %s is current already\n", name, build)
				return nil
			}
			fmt.Fprintf(app.Out, "Deployment %s: build %s is current (was %s)\n", name, build, orDash(prev))
			if prev != "" && prev != build {
				fmt.Fprintf(app.Out, "Build %s is draining; stop its workers once `ordersync deployment wait-drained --deployment-name %s --build-id %s` returns.\n", prev, name, prev)
			}
			return nil
		}),
	}
	buildIDFlag(cmd, &buildID, "build to promote")
	durationDaysVar(cmd.Flags(), &wait, "wait", time.Minute, "how long to wait for the build's workers to register")
	cmd.Flags().BoolVar(&ignoreMissing, "ignore-missing-task-queues", false, "promote even if the build does not poll every task queue of the current build (their workflows would run unversioned)")
	return cmd
}

// setCurrentVersion makes build current, trying again while its workers
// have not registered yet (or not all their task queues), up to wait. It
// returns the build that was current before ("" for none). The change is
// conditional on the state it read (the conflict token), so a concurrent
// promotion is not overwritten unseen: it reads again and retries.
func setCurrentVersion(ctx context.Context, c client.Client, name, build string, wait time.Duration, ignoreMissing bool) (string, error) {
	h := c.WorkerDeploymentClient().GetHandle(name)
	deadline := time.Now().Add(wait)
	for {
		var prev string
		desc, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		if err == nil {
			if cur := desc.Info.RoutingConfig.CurrentVersion; cur != nil {
				prev = cur.BuildID
			}
			if prev == build {
				return prev, nil
			}
			_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
				BuildID: build, ConflictToken: desc.ConflictToken, IgnoreMissingTaskQueues: ignoreMissing,
			})
			if err == nil {
				return prev, nil
			}
		}
		if !notRegisteredYet(err) || time.Now().After(deadline) {
			return "", deploymentError(name, build, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// notRegisteredYet tells the errors worth another try: the build's workers
// have not (all) polled yet (the deployment or version is unknown, or it
// lacks a queue), or the deployment changed between reading and writing.
func notRegisteredYet(err error) bool {
	var notFound *serviceerror.NotFound
	var precondition *serviceerror.FailedPrecondition
	return errors.As(err, &notFound) ||
		errors.As(err, &precondition) && (strings.Contains(precondition.Message, "missing active task queues") ||
			strings.Contains(precondition.Message, "not found in deployment") ||
			strings.Contains(precondition.Message, "conflict token mismatch"))
}

// deploymentError says what an error of the deployment APIs means for the
// operator, with the server's words kept.
func deploymentError(name, build string, err error) error {
	var notFound *serviceerror.NotFound
	var precondition *serviceerror.FailedPrecondition
	switch {
	case errors.As(err, &notFound) && build == "":
		return fmt.Errorf("deployment %s: not found; no worker with --deployment-name %s has polled yet (%w)", name, name, err)
	case errors.As(err, &notFound):
		return fmt.Errorf("deployment %s, build %s: not found; start its workers (ordersync worker --deployment-name %s --build-id %s) and wait until they run (%w)", name, build, name, build, err)
	case errors.As(err, &precondition) && strings.Contains(precondition.Message, "missing active task queues"):
		return fmt.Errorf("deployment %s, build %s: its workers do not poll every task queue the current build polls (a platform or destination missing from their platforms file?); the workflows of the missing queues would run unversioned, with no worker (%w)", name, build, err)
	}
	return fmt.Errorf("deployment %s: %w", name, err)
}

func newDeploymentWaitDrainedCommand(app *App, deploymentName func() (string, error)) *cobra.Command {
	var buildID string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait-drained",
		Short: "Wait until a build that is no longer current is drained, so its workers can stop",
		Long: `Waits until Temporal reports the build drained: it is neither current nor
ramping and no open workflow is pinned to it. ordersync's workflows all
auto-upgrade, so a build drains once the server's visibility has caught up
(3 minutes by default, matching.wv.VersionDrainageStatusVisibilityGracePeriod),
unless someone pinned a workflow to it by hand. Exits 1 after --timeout, or
at once for the current or ramping build.`,
		Example: "  ordersync deployment wait-drained --deployment-name ordersync --build-id v1.4.0 --timeout 15m",
		Args:    cobra.NoArgs,
		RunE: app.deploymentRun(deploymentName, &buildID, func(ctx context.Context, c client.Client, name, build string) error {
			status, err := waitDrained(ctx, c, name, build, timeout)
			if err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			if app.Output == "json" {
				return writeJSON(app, map[string]string{"deployment": name, "build_id": build, "drainage": status})
			}
			fmt.Fprintf(app.Out, "Deployment %s: build %s is drained; its workers can stop.\n", name, build)
			return nil
		}),
	}
	buildIDFlag(cmd, &buildID, "build to wait for")
	durationDaysVar(cmd.Flags(), &timeout, "timeout", 15*time.Minute, "give up after this long")
	return cmd
}

// drainagePollInterval is how often wait-drained asks; the server itself
// refreshes a draining version's status every few minutes by default.
const drainagePollInterval = 2 * time.Second

func waitDrained(ctx context.Context, c client.Client, name, build string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		d, err := describeDeployment(ctx, c, name)
		if err != nil {
			return "", err
		}
		var row *deploymentVersionRow
		for i := range d.Versions {
			if d.Versions[i].BuildID == build {
				row = &d.Versions[i]
			}
		}
		switch {
		case row == nil:
			return "", fmt.Errorf("deployment %s: no build %s (builds: %s)", name, build, buildIDs(d.Versions))
		case row.Role != "":
			return "", fmt.Errorf("deployment %s: build %s is the %s build; promote another one first", name, build, row.Role)
		case row.Drainage == "drained":
			return row.Drainage, nil
		}
		if time.Now().After(deadline) {
			status := "draining (workflows are still pinned to it)"
			if row.Drainage == "" {
				status = "not draining: it was never current, so it never took work"
			}
			return "", fmt.Errorf("deployment %s: build %s is %s after %s", name, build, status, timeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(drainagePollInterval):
		}
	}
}

func buildIDs(rows []deploymentVersionRow) string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.BuildID
	}
	return strings.Join(ids, ", ")
}
