package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
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
		return decodeError(raw, err)
	}
	return nil
}

// decodeError says why a payload is not valid, with the payload and the
// decoder's text clipped: encoding/json quotes an unknown field's name in
// full, and a refusal is kept in state (last_error) and logged.
func decodeError(raw json.RawMessage, err error) error {
	return fmt.Errorf("payload %s is not valid: %s", textclip.Clip(string(raw), 200), textclip.Value(err.Error()))
}

// decodeStrict reads a payload like decodeOptional but refuses unknown
// fields and anything after the value.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if p, ok := v.(*api.Settings); ok {
		// Names nested unknown fields (rate_limit.burts) and, unlike
		// encoding/json, does not take "Kind" for "kind". Identity fields
		// (endpoint, credentials, options, allow_plaintext) are dropped
		// unread: they are the registry's (api.SignalConfig).
		decoded, err := config.DecodeSettingsJSON(raw)
		if err != nil {
			return fmt.Errorf("settings are not valid: %s", textclip.Message(err.Error()))
		}
		*p = decoded
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(raw, err)
	}
	if dec.More() {
		return decodeError(raw, errors.New("more than one JSON value"))
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
func judgeSettings(ctx workflow.Context, p api.Settings, check func(api.Settings) error) error {
	if workflow.GetVersion(ctx, versionConfigVerdict, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return config.CheckSettingsStructure(p)
	}
	var verdict string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := check(p); err != nil {
			return textclip.Message(err.Error()) // recorded in history
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

// settingsFromMessage is the settings a `config` message asks for: its
// tuning, with what the registry owns kept as cur has it: the kind, and
// the tuning derived from the kind's options (bulk) when the message
// carries none (old CLIs send the whole platform entry, whose options are
// dropped unread).
func settingsFromMessage(cur, msg api.Settings) api.Settings {
	msg.Kind, msg.LegacyOptions = cur.Kind, cur.LegacyOptions
	if msg.Bulk == nil {
		msg.Bulk = cur.Bulk
	}
	return msg
}

// validateSettings checks settings a message brings by the rules the
// platforms file's tuning is checked with (config.ValidateSettings).
func validateSettings(p api.Settings) error { return config.ValidateSettings(p) }

// Bounded text. Messages are kept in workflow state (a pause reason, the
// refusal of a bad one in last_error) and state is carried through
// continue-as-new, whose input must stay under Temporal's payload limit
// (2 MB): one oversized message would otherwise make every continue-as-new
// fail, for good. So a message payload is at most maxMessagePayload bytes,
// a text field kept from it at most textclip.MessageMax bytes once
// JSON-encoded, and what is kept (reasons, refusal texts) is clipped to
// textclip.MessageMax besides. Updates are refused in their validator;
// signals are refused and counted like any invalid signal
// (versionBoundedText).

// maxMessagePayload bounds a whole signal or update payload. The largest
// legitimate one, a platform's settings, is a few KB.
const maxMessagePayload = 64 << 10

// oversizedError refuses a payload, or one of its fields, over its limit.
type oversizedError struct {
	field     string
	size, max int
}

func (e *oversizedError) Error() string {
	return fmt.Sprintf("%s is %d bytes, more than the limit of %d bytes", e.field, e.size, e.max)
}

// checkPayloadSize refuses a payload over maxMessagePayload.
func checkPayloadSize(raw json.RawMessage) error {
	if len(raw) > maxMessagePayload {
		return &oversizedError{field: "the payload", size: len(raw), max: maxMessagePayload}
	}
	return nil
}

// checkText refuses a text field that would be kept in state and is over
// textclip.MessageMax once JSON-encoded.
func checkText(field, s string) error {
	if textclip.Over(s, textclip.MessageMax) {
		return &oversizedError{field: field, size: textclip.JSONLen(s), max: textclip.MessageMax}
	}
	return nil
}

// boundsApply says whether a signal refused by a bound stays refused: a
// history recorded before versionBoundedText applied it (clipped). Any
// other refusal is not asked about.
func boundsApply(ctx workflow.Context, err error) bool {
	var o *oversizedError
	if !errors.As(err, &o) {
		return true
	}
	return workflow.GetVersion(ctx, versionBoundedText, workflow.DefaultVersion, 1) >= 1
}

// refusal is the text kept for a refused message: clipped.
func refusal(what string, err error) string {
	return textclip.Message(what + ": " + err.Error())
}
