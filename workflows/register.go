package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// Registry is the part of a Temporal worker (or test environment) that
// workflows are registered on.
type Registry interface {
	RegisterWorkflowWithOptions(w interface{}, options workflow.RegisterOptions)
}

// registered lists every workflow a worker serves: its function, its stable
// type name, and its versioning behavior when the worker runs as a version
// of a Worker Deployment. Every type auto-upgrades: its next workflow task
// runs on the deployment's current version, so cursors, dead letters and
// deliveries (which run for months) and slices move to a new build as soon
// as it is promoted; their code keeps old histories replaying through the
// GetVersion discipline ("Versioning" in doc.go). An unversioned worker
// ignores the behavior, so it changes nothing there.
var registered = []struct {
	Fn       interface{}
	Name     string
	Behavior workflow.VersioningBehavior
}{
	{PlatformCursor, api.CursorWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
	{FetchSlice, api.SliceWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
	{DeadLetter, api.DeadLetterWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
	{Delivery, api.DeliveryWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
	{Refetch, api.RefetchWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
	{Reconcile, api.ReconcileWorkflowType, workflow.VersioningBehaviorAutoUpgrade},
}

// Register registers the workflows under their stable type names.
func Register(r Registry) {
	for _, w := range registered {
		r.RegisterWorkflowWithOptions(w.Fn, workflow.RegisterOptions{Name: w.Name, VersioningBehavior: w.Behavior})
	}
}
