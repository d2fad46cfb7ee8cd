package starter_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/starter"
)

// identityKeys are the JSON keys of a platform's identity: never part of a
// workflow input or message since v0.8 (settings by reference).
var identityKeys = []string{"endpoint", "credentials", "options", "allow_plaintext"}

// requireNoIdentity fails when v, as the data converter writes it, holds
// an identity key at any depth, or the platform's endpoint or credential
// reference anywhere.
func requireNoIdentity(t *testing.T, what string, v any, p config.Platform) {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var tree any
	require.NoError(t, json.Unmarshal(raw, &tree))
	var walk func(path string, x any)
	walk = func(path string, x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				require.NotContains(t, identityKeys, k, "%s: %s.%s is identity", what, path, k)
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk(what, tree)
	require.NotContains(t, string(raw), p.Endpoint, what)
	require.NotContains(t, string(raw), p.Credentials.Env, what)
}

// shopWithIdentity is a Shopify platform with every identity field set:
// endpoint, credential reference, options (whose bulk settings workflows
// decide by), allow_plaintext.
func shopWithIdentity() config.Platform {
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.TaskQueue, p.Start = "shop-eu", "shopify", "orders-shopify", "-24h"
	p.Endpoint, p.AllowPlaintext = "http://10.1.2.3/shops/eu", true
	p.Credentials = config.CredentialRef{Env: "SHOP_EU_SECRET_REF"}
	p.Options = map[string]any{"bulk_min_span": "2h", "bulk_poll_interval": "7s", "api_version": "2025-07"}
	return p
}

// TestStartersSendSettingsByReference: the cursor's start input and the
// `config` signals of a reconfigure carry the platform's tuning and the
// bulk settings derived from its options, never its identity.
func TestStartersSendSettingsByReference(t *testing.T) {
	p := shopWithIdentity()
	c := &mocks.Client{}
	c.On("DescribeWorkflowExecution", mock.Anything, api.CursorWorkflowID(p.Name), "").Return(nil, serviceerror.NewNotFound("not found"))
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	var input any
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.CursorWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) { input = args.Get(3) }).Return(run, nil).Once()
	var reconcileInput any
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.ReconcileWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) { reconcileInput = args.Get(3) }).Return(run, nil).Once()
	var signals []any
	c.On("SignalWorkflow", mock.Anything, mock.Anything, "", mock.Anything, mock.Anything).
		Run(func(args mock.Arguments) { signals = append(signals, args.Get(4)) }).Return(nil)

	require.NoError(t, starter.Engine{Client: c}.Start(context.Background(), p, 5))
	in, ok := input.(api.CursorInput)
	require.True(t, ok, "%T", input)
	requireNoIdentity(t, "cursor input", in, p)
	require.Equal(t, p.Name, in.Platform.Name)
	require.Equal(t, p.PageSize, in.Platform.PageSize)
	require.Equal(t, int64(5), in.Platform.Revision, "the registry revision the settings were read at")
	require.Equal(t, &api.Bulk{Enabled: true, MinSpan: api.Duration(2 * time.Hour), PollInterval: api.Duration(7 * time.Second)},
		in.Platform.Bulk, "the bulk tuning derived from the options")

	rin, ok := reconcileInput.(api.ReconcileInput)
	require.True(t, ok, "%T", reconcileInput)
	requireNoIdentity(t, "reconcile input", rin, p)
	require.Equal(t, in.Start, rin.Start, "reconciliation starts where the backfill does")
	require.Equal(t, int64(5), rin.Platform.Revision)

	require.NoError(t, starter.Engine{Client: c}.Reconfigure(context.Background(), p, 7))
	require.Len(t, signals, 3, "the cursor's, the reconciliation's and the dead-letter workflow's config signal")
	for _, s := range signals {
		requireNoIdentity(t, "config signal", s, p)
		require.Equal(t, int64(7), s.(api.Settings).Revision, "the registry revision the settings were read at")
	}
}

// TestDeliveryStartersSendSettingsByReference: a Delivery's start input
// and the `config` signal of a reconfigure carry the destination's tuning,
// never its url, secret reference, platforms or other identity.
func TestDeliveryStartersSendSettingsByReference(t *testing.T) {
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.AllowPlaintext = "oms", "webhook", "http://10.9.8.7/hook", true
	d.Secret = config.CredentialRef{Env: "OMS_SIGNING_SECRET_REF"}
	d.Platforms, d.BatchSize = []string{"shop-eu"}, 42
	require.Nil(t, d.Validate(nil))
	id := api.DeliveryWorkflowID(d.Name)
	requireNone := func(what string, v any) {
		t.Helper()
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		for _, k := range config.IgnoredDestinationFields {
			require.NotContains(t, string(raw), `"`+k+`"`, "%s carries %s: %s", what, k, raw)
		}
		require.NotContains(t, string(raw), d.URL, what)
		require.NotContains(t, string(raw), d.Secret.Env, what)
	}

	c := &mocks.Client{}
	c.On("DescribeWorkflowExecution", mock.Anything, id, "").Return(nil, serviceerror.NewNotFound("not found")).Once()
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	var input any
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.DeliveryWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) { input = args.Get(3) }).Return(run, nil).Once()
	require.NoError(t, starter.Engine{Client: c}.StartDelivery(context.Background(), d, 4))
	in, ok := input.(api.DeliveryInput)
	require.True(t, ok, "%T", input)
	requireNone("delivery input", in)
	want := d.Settings()
	want.Revision = 4
	require.Equal(t, want, in.Destination, "the settings and the registry revision they were read at")

	running := &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, TaskQueue: d.TaskQueue}}
	c.On("DescribeWorkflowExecution", mock.Anything, id, "").Return(running, nil)
	var signal any
	c.On("SignalWorkflow", mock.Anything, id, "", api.SignalDeliveryConfig, mock.Anything).
		Run(func(args mock.Arguments) { signal = args.Get(4) }).Return(nil).Once()
	require.NoError(t, starter.Engine{Client: c}.ReconfigureDelivery(context.Background(), d, 6))
	requireNone("config signal", signal)
	want.Revision = 6
	require.Equal(t, want, signal)
}
