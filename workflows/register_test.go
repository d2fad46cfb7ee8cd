package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// A versioned worker refuses (panics on) a workflow type registered without
// a versioning behavior, and a pinned long-running workflow would hold its
// build forever: every type must auto-upgrade (see registered).
func TestEveryWorkflowAutoUpgrades(t *testing.T) {
	rec := &recordingRegistry{}
	Register(rec)
	require.Len(t, rec.options, 6)
	for _, o := range rec.options {
		require.Equal(t, workflow.VersioningBehaviorAutoUpgrade, o.VersioningBehavior, "%s", o.Name)
	}
}

type recordingRegistry struct{ options []workflow.RegisterOptions }

func (r *recordingRegistry) RegisterWorkflowWithOptions(_ interface{}, o workflow.RegisterOptions) {
	r.options = append(r.options, o)
}
