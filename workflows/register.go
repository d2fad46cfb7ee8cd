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

// Register registers the workflows under their stable type names.
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(PlatformCursor, workflow.RegisterOptions{Name: api.CursorWorkflowType})
	r.RegisterWorkflowWithOptions(FetchSlice, workflow.RegisterOptions{Name: api.SliceWorkflowType})
	r.RegisterWorkflowWithOptions(DeadLetter, workflow.RegisterOptions{Name: api.DeadLetterWorkflowType})
	r.RegisterWorkflowWithOptions(Delivery, workflow.RegisterOptions{Name: api.DeliveryWorkflowType})
}
