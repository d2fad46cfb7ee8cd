package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
)

// TestRecordDeadLetterStartsWithTheFairnessKey: a dead-letter workflow
// that a failed slice starts carries its platform's fairness key, so it
// and the reprocess slices it starts share the platform's queue fairly.
func TestRecordDeadLetterStartsWithTheFairnessKey(t *testing.T) {
	c := &mocks.Client{}
	var got client.StartWorkflowOptions
	c.On("SignalWithStartWorkflow", mock.Anything, api.DeadLetterWorkflowID("shop-eu"), api.SignalDeadLetterAdd,
		mock.Anything, mock.Anything, api.DeadLetterWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) { got = args.Get(4).(client.StartWorkflowOptions) }).
		Return(&mocks.WorkflowRun{}, nil).Once()
	p := config.BuiltinDefaults()
	p.Name, p.TaskQueue = "shop-eu", "orders-shopify"
	a := &Activities{Client: c}
	require.NoError(t, a.RecordDeadLetter(context.Background(), RecordDeadLetterInput{Platform: p.Settings(), Entry: api.DeadLetterEntry{SliceID: "slice/shop-eu/1"}}))
	c.AssertExpectations(t)
	require.Equal(t, "orders-shopify", got.TaskQueue)
	require.Equal(t, fairness.Priority("shop-eu"), got.Priority)
}
