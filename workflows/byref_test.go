package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// identityKeys are the JSON keys of a platform's identity: no workflow or
// activity input carries them since v0.8 (settings by reference).
var identityKeys = []string{"endpoint", "credentials", "options", "allow_plaintext"}

// identityIn names the first identity key in a JSON value, at any depth
// ("" when there is none).
func identityIn(raw []byte) string {
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return "(not JSON)"
	}
	var walk func(path string, x any) string
	walk = func(path string, x any) string {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				for _, id := range identityKeys {
					if k == id {
						return path + "." + k
					}
				}
				if found := walk(path+"."+k, e); found != "" {
					return found
				}
			}
		case []any:
			for _, e := range x {
				if found := walk(path+"[]", e); found != "" {
					return found
				}
			}
		}
		return ""
	}
	return walk("", tree)
}

// legacyCursorInput is a cursor input as v0.7 and before wrote it: the
// whole platform, identity included.
type legacyCursorInput struct {
	Platform        config.Platform `json:"platform"`
	Start           time.Time       `json:"start"`
	MaxSlicesPerRun int             `json:"max_slices_per_run,omitempty"`
}

// TestNoInputCarriesIdentity: a cursor started with settings by value (a
// run from before v0.8, Shopify with options, a credential reference and
// allow_plaintext) and sent a `config` signal with the whole platform
// entry gives no slice, page, dead-letter or continue-as-new input an
// endpoint, credential reference or options: what it carries on is the
// tuning, the bulk decision of its options included.
func TestNoInputCarriesIdentity(t *testing.T) {
	env := newEnv(t)
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.TaskQueue, p.Start = platformName, "shopify", "orders-shopify", at("-2h").Format(time.RFC3339)
	p.Endpoint, p.AllowPlaintext = "http://10.1.2.3/shops/x", true
	p.Credentials = config.CredentialRef{Env: "SHOP_X_SECRET_REF"}
	p.Options = map[string]any{"bulk_min_span": "2h", "bulk_poll_interval": "7s"}
	p.Interval, p.PageSize = config.Duration(15*time.Minute), 50
	require.Nil(t, p.Validate())

	var mu sync.Mutex
	var inputs []string
	record := func(what string, raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		inputs = append(inputs, what+": "+string(raw))
		if k := identityIn(raw); k != "" {
			t.Errorf("%s input carries identity %s: %s", what, k, raw)
		}
	}
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var raw json.RawMessage
		require.NoError(t, args.Get(&raw))
		record(info.WorkflowType.Name, raw)
	})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var raw json.RawMessage
		require.NoError(t, args.Get(&raw))
		record(info.ActivityType.Name, raw)
	})
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []any) {
		raw, err := json.Marshal(args[0])
		require.NoError(t, err)
		record("local "+info.ActivityType.Name, raw)
	})
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			return onePage(in)
		}).Maybe()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalConfig, p) // an old CLI: the whole platform entry
	}, time.Minute)
	env.ExecuteWorkflow("PlatformCursor", legacyCursorInput{Platform: p, Start: at("-2h"), MaxSlicesPerRun: 4})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "want continue-as-new, got %v", env.GetWorkflowError())
	var next json.RawMessage
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	record("continue-as-new", next)
	var carried api.CursorInput
	require.NoError(t, json.Unmarshal(next, &carried))
	require.Equal(t, &api.Bulk{Enabled: true, MinSpan: api.Duration(2 * time.Hour), PollInterval: api.Duration(7 * time.Second)},
		carried.Platform.Bulk, "the bulk decision of the recorded options, carried as tuning")
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(inputs), 8, "slices, pages and the continue-as-new were seen: %v", inputs)
}

// TestConfigIgnoresIdentityAndRefusesOtherUnknownFields: a `config`
// update with the whole platform entry (endpoint, credentials, options,
// allow_plaintext) is accepted with those fields ignored and its tuning
// applied; a field that is neither tuning nor identity is refused by name.
func TestConfigIgnoresIdentityAndRefusesOtherUnknownFields(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)

	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var whole map[string]any
	require.NoError(t, json.Unmarshal(raw, &whole))
	whole["endpoint"] = "https://elsewhere.example/shops/x"
	whole["credentials"] = map[string]any{"env": "ORDERSYNC_STORE_DSN"}
	whole["options"] = map[string]any{"api": "rest"}
	whole["allow_plaintext"] = true
	whole["page_size"] = 9
	typo := map[string]any{}
	for k, v := range whole {
		typo[k] = v
	}
	typo["endpont"] = "https://elsewhere.example"

	var accepted, refused *updateOutcome
	var after api.CursorStatus
	env.RegisterDelayedCallback(func() { accepted = sendUpdate(env, api.SignalConfig, whole) }, time.Minute)
	env.RegisterDelayedCallback(func() { refused = sendUpdate(env, api.SignalConfig, typo) }, 2*time.Minute)
	stopAt(env, 3*time.Minute, func() { after = status(t, env) })
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.True(t, accepted.accepted, "identity fields are ignored, not refused: %v", accepted.rejected)
	require.NoError(t, accepted.err)
	require.Equal(t, 9, after.Settings.PageSize, "the tuning applied")
	require.Equal(t, p.Kind, after.Settings.Kind)
	shown, err := json.Marshal(after.Settings)
	require.NoError(t, err)
	require.Empty(t, identityIn(shown), "the cursor keeps no identity: %s", shown)
	require.ErrorContains(t, refused.rejected, `field "endpont": unknown field`)
}
