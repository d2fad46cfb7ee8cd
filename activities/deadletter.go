package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/textclip"
)

// RecordDeadLetterInput adds one failed slice to the platform's dead-letter workflow.
type RecordDeadLetterInput struct {
	Platform api.Settings        `json:"platform"`
	Entry    api.DeadLetterEntry `json:"entry"`
}

// RecordDeadLetter signals the dead-letter workflow, starting it if needed,
// so a failed slice is recorded even when the dead-letter workflow has never
// run for this platform.
func (a *Activities) RecordDeadLetter(ctx context.Context, in RecordDeadLetterInput) error {
	if a.Client == nil {
		return fmt.Errorf("record dead letter for %s: no Temporal client configured", in.Entry.SliceID)
	}
	// A slice of before the clip in FetchSlice may hand over a whole
	// platform error; the signal must stay small (the DeadLetter workflow
	// clips too, this keeps the signal itself under the payload limit).
	in.Entry.Error = textclip.Message(in.Entry.Error)
	_, err := a.Client.SignalWithStartWorkflow(ctx, api.DeadLetterWorkflowID(in.Platform.Name),
		api.SignalDeadLetterAdd, in.Entry,
		client.StartWorkflowOptions{
			TaskQueue:             in.Platform.TaskQueue,
			Priority:              fairness.Priority(in.Platform.Name),
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Platform.ValueSet(in.Platform.Name)),
		},
		api.DeadLetterWorkflowType, api.DeadLetterInput{Platform: in.Platform})
	if err != nil {
		return fmt.Errorf("record dead letter for %s: %w", in.Entry.SliceID, err)
	}
	return nil
}
