package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/config"
)

// Messages (signals and updates) are untrusted input: anyone who can reach
// the Temporal frontend can send them, by hand or by script. Every payload
// is decoded strictly, as the platforms file is: an unknown field is a
// mistake (a typo, or a payload meant for something else), not something to
// ignore.

// decodeOptional reads a payload leniently (unknown fields ignored); an
// empty payload or null leaves v as it is. Histories recorded before
// versionStrictMessages replay with it.
func decodeOptional(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("payload %.200s is not valid: %w", string(raw), err)
	}
	return nil
}

// decodeStrict reads a payload like decodeOptional but refuses unknown
// fields and anything after the value.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if p, ok := v.(*config.Platform); ok {
		// Names nested unknown fields (rate_limit.burts) and, unlike
		// encoding/json, does not take "Kind" for "kind".
		decoded, err := config.DecodePlatformJSON(raw)
		if err != nil {
			return fmt.Errorf("settings are not valid: %w", err)
		}
		*p = decoded
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("payload %.200s is not valid: %w", string(raw), err)
	}
	if dec.More() {
		return fmt.Errorf("payload %.200s is not valid: more than one JSON value", string(raw))
	}
	return nil
}

// decodeSignal decodes a signal payload strictly. oldAccepted says whether
// the code before versionStrictMessages acted on a payload it could not
// decode (a pause without a readable reason still paused); when the old
// code would have acted, the version is asked, so histories recorded before
// it replay the old decision.
func decodeSignal(ctx workflow.Context, raw json.RawMessage, v any, oldAcceptedMalformed bool) error {
	strictErr := decodeStrict(raw, v)
	if strictErr == nil {
		return nil
	}
	lenientErr := decodeOptional(raw, v)
	if lenientErr == nil || oldAcceptedMalformed {
		if workflow.GetVersion(ctx, versionStrictMessages, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return nil
		}
	}
	return strictErr
}

// judgeSettings is the settings check of a `config` signal, as recorded in
// history. The check may grow stricter in later releases (it lives at the
// edges: the platforms file, the CLI, update validators); recording its
// verdict keeps an accepted signal accepted on replay. Runs from before
// versionConfigVerdict replay the structural check they were judged by.
func judgeSettings(ctx workflow.Context, p config.Platform, check func(config.Platform) error) error {
	if workflow.GetVersion(ctx, versionConfigVerdict, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return p.ValidateStructure()
	}
	var verdict string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := check(p); err != nil {
			return err.Error()
		}
		return ""
	}).Get(&verdict)
	if err != nil {
		return fmt.Errorf("read the settings verdict: %w", err)
	}
	if verdict != "" {
		return errors.New(verdict)
	}
	return nil
}

// validateSettings is config.Platform.Validate as a plain error (a nil
// *ValidationError must not become a non-nil error).
func validateSettings(p config.Platform) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return nil
}
