package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
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
func identityIn(raw []byte) string { return keyIn(raw, identityKeys) }

// keyIn names the first of keys in a JSON value, at any depth ("" when
// there is none).
func keyIn(raw []byte, keys []string) string {
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return "(not JSON)"
	}
	var walk func(path string, x any) string
	walk = func(path string, x any) string {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if slices.Contains(keys, k) {
					return path + "." + k
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

// recordInputs records every activity and local activity input (and
// child input, when children) as "type: JSON", and fails the test for
// each that names one of keys.
func recordInputs(t *testing.T, env *testsuite.TestWorkflowEnvironment, keys []string, children bool) (record func(what string, raw []byte), seen func() []string) {
	var mu sync.Mutex
	var inputs []string
	record = func(what string, raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		inputs = append(inputs, what+": "+string(raw))
		if k := keyIn(raw, keys); k != "" {
			t.Errorf("%s input carries identity %s: %s", what, k, raw)
		}
	}
	if children {
		env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
			var raw json.RawMessage
			require.NoError(t, args.Get(&raw))
			record(info.WorkflowType.Name, raw)
		})
	}
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
	seen = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), inputs...)
	}
	return record, seen
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

	record, seen := recordInputs(t, env, identityKeys, true)
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FetchPageInput) (activities.FetchPageResult, error) {
			return onePage(in)
		}).Maybe()
	env.OnActivity(acts.FetchWindow, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.FetchWindowInput) (activities.FetchWindowResult, error) {
			return activities.PageThroughWindow(ctx, in, func(_ context.Context, p activities.FetchPageInput) (activities.FetchPageResult, error) {
				return onePage(p)
			})
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
	kinds := map[string]bool{}
	for _, in := range seen() {
		kinds[strings.SplitN(in, ":", 2)[0]] = true
	}
	require.Equal(t, map[string]bool{"FetchSlice": true, "local FetchPage": true, "FetchWindow": true, "continue-as-new": true}, kinds,
		"slices, pages, the cursor's inline live windows and the continue-as-new were seen: %v", seen())
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

// destinationIdentityKeys are the JSON keys of a destination's identity:
// where batches go, with which secret and which platforms' changes. No
// Delivery input, activity input or message carries them since
// destinations travel by reference (api.DestinationSettings).
var destinationIdentityKeys = []string{"url", "secret", "subject", "brokers", "topic", "allow_plaintext", "platforms", "headers"}

// legacyDeliveryInput is a Delivery input as written before destinations
// travelled by reference: the whole destination, identity included.
type legacyDeliveryInput struct {
	Destination      config.Destination `json:"destination"`
	MaxBatchesPerRun int                `json:"max_batches_per_run,omitempty"`
}

// webhookWithIdentity is a webhook destination with every identity field
// it may have set.
func webhookWithIdentity() config.Destination {
	d := testDestinationEntry()
	d.URL, d.AllowPlaintext = "http://10.9.8.7/hook", true
	d.Secret = config.CredentialRef{Env: "OMS_SIGNING_SECRET_REF"}
	d.Platforms = []string{"shop-eu"}
	return d
}

// TestNoDeliveryInputCarriesIdentity: a Delivery started with the whole
// destination (a run from before destinations travelled by reference)
// and sent a `config` signal with the whole destination entry gives no
// activity input, no continue-as-new input and no status an url, secret
// reference, platforms or other identity: what it carries on is the
// tuning, the signal's included.
func TestNoDeliveryInputCarriesIdentity(t *testing.T) {
	env := newEnv(t)
	d := webhookWithIdentity()
	require.Nil(t, d.Validate(nil))
	f := &fakeDestination{seqs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}}
	f.mock(env)

	record, seen := recordInputs(t, env, destinationIdentityKeys, false)
	bigger := d
	bigger.BatchSize = 4
	var st api.DeliveryStatus
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeliveryConfig, bigger) // an old CLI: the whole destination entry
	}, 500*time.Millisecond)
	env.RegisterDelayedCallback(func() { st = deliveryStatus(t, env) }, 2*time.Second)
	env.ExecuteWorkflow(api.DeliveryWorkflowType, legacyDeliveryInput{Destination: d, MaxBatchesPerRun: 2})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "want continue-as-new, got %v", env.GetWorkflowError())
	var next json.RawMessage
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	record("continue-as-new", next)
	shown, err := json.Marshal(st)
	require.NoError(t, err)
	record("status", shown)
	var carried api.DeliveryInput
	require.NoError(t, json.Unmarshal(next, &carried))
	require.Equal(t, bigger.Settings(), carried.Destination, "the signal's tuning, carried on")
	require.Zero(t, carried.State.Rejected, "the whole entry is accepted: %s", carried.State.LastError)
	require.GreaterOrEqual(t, len(seen()), 4, "listings, deliveries and the continue-as-new were seen: %v", seen())
}

// TestDeliveryConfigIgnoresIdentityAndRefusesOtherUnknownFields: a
// destination's `config` update with the whole entry (url, secret,
// platforms...) is accepted with those fields ignored and its tuning
// applied, as is one of tuning only (refused before: no url); a field
// that is neither tuning nor identity is refused by name.
func TestDeliveryConfigIgnoresIdentityAndRefusesOtherUnknownFields(t *testing.T) {
	env := newEnv(t)
	f := &fakeDestination{}
	f.mock(env)
	whole := webhookWithIdentity()
	whole.BatchSize = 7
	raw, err := json.Marshal(whole)
	require.NoError(t, err)
	var typo map[string]any
	require.NoError(t, json.Unmarshal(raw, &typo))
	typo["batch_sise"] = 9
	tuningOnly := testDestination()
	tuningOnly.BatchSize = 8

	var accepted, refused, byRef *updateOutcome
	var afterWhole, afterByRef api.DeliveryStatus
	env.RegisterDelayedCallback(func() { accepted = sendUpdate(env, api.SignalDeliveryConfig, whole) }, 5*time.Second)
	env.RegisterDelayedCallback(func() { afterWhole = deliveryStatus(t, env) }, 6*time.Second)
	env.RegisterDelayedCallback(func() { refused = sendUpdate(env, api.SignalDeliveryConfig, typo) }, 7*time.Second)
	env.RegisterDelayedCallback(func() { byRef = sendUpdate(env, api.SignalDeliveryConfig, tuningOnly) }, 8*time.Second)
	stopAt(env, 9*time.Second, func() { afterByRef = deliveryStatus(t, env) })
	env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
	requireStopped(t, env)

	require.NoError(t, accepted.rejected, "identity fields are ignored, not refused")
	require.Equal(t, 7, afterWhole.Settings.BatchSize, "the tuning applied")
	shown, err := json.Marshal(afterWhole)
	require.NoError(t, err)
	require.Empty(t, keyIn(shown, destinationIdentityKeys), "the delivery keeps no identity: %s", shown)
	require.ErrorContains(t, refused.rejected, `field "batch_sise": unknown field`)
	require.NoError(t, byRef.rejected, "settings by reference carry no url")
	require.Equal(t, 8, afterByRef.Settings.BatchSize)
}

// TestDeliveryConfigSignalVerdictOfBefore: a `config` signal of tuning
// only, which the check of before refused (a webhook without url or
// secret), is applied on a run of today and refused, as it was, on a run
// recorded before versionDestinationByRef.
func TestDeliveryConfigSignalVerdictOfBefore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version workflow.Version
		want    int
	}{
		{"today", 1, 8},
		{"recorded before", workflow.DefaultVersion, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			env.OnGetVersion("destination-settings-by-reference", workflow.DefaultVersion, 1).Return(tc.version)
			f := &fakeDestination{}
			f.mock(env)
			tuningOnly := testDestination()
			tuningOnly.BatchSize = 8
			var st api.DeliveryStatus
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeliveryConfig, tuningOnly) }, 5*time.Second)
			stopAt(env, 10*time.Second, func() { st = deliveryStatus(t, env) })
			env.ExecuteWorkflow(api.DeliveryWorkflowType, api.DeliveryInput{Destination: testDestination()})
			requireStopped(t, env)
			require.Equal(t, tc.want, st.Settings.BatchSize)
			if tc.version == workflow.DefaultVersion {
				require.Equal(t, 1, st.State.Rejected)
				require.Contains(t, st.State.LastError, "url")
			} else {
				require.Zero(t, st.State.Rejected, st.State.LastError)
			}
		})
	}
}
