package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// deliveryMessage is one row of the Delivery workflow's message table: the
// same name is registered as a signal and as an update, with one strict
// decoder, one check and one effect, so the two paths cannot drift.
type deliveryMessage struct {
	name string
	// check decodes raw strictly and says whether it can be applied now.
	check func(d *delivery, raw json.RawMessage) error
	// apply changes the state; raw has passed check.
	apply func(d *delivery, raw json.RawMessage)
}

var deliveryMessages = []deliveryMessage{
	{api.SignalDeliveryPause,
		func(_ *delivery, raw json.RawMessage) error {
			var req api.PauseRequest
			if err := decodeStrict(raw, &req); err != nil {
				return err
			}
			return checkText("reason", req.Reason)
		},
		func(d *delivery, raw json.RawMessage) {
			var req api.PauseRequest
			_ = decodeStrict(raw, &req)
			// Refused when over, but for histories of before versionBoundedText.
			d.st.Paused, d.st.PauseReason = true, textclip.Message(req.Reason)
			if d.st.PauseReason == "" {
				d.st.PauseReason = "paused by operator"
			}
		}},
	{api.SignalDeliveryResume,
		func(_ *delivery, raw json.RawMessage) error { return decodeStrict(raw, &struct{}{}) },
		func(d *delivery, _ json.RawMessage) {
			d.st.Paused, d.st.PauseReason = false, ""
			d.st.BreakerOpen, d.st.ConsecutiveFailures = false, 0
		}},
	{api.SignalDeliveryRetry, checkSelector, func(d *delivery, raw json.RawMessage) {
		for _, seq := range d.selected(raw) {
			if !containsSeq(d.st.Retrying, seq) {
				d.st.Retrying = append(d.st.Retrying, seq)
			}
		}
	}},
	{api.SignalDeliveryConfig, checkDestination, func(d *delivery, raw json.RawMessage) {
		dest := destinationFromMessage(d.dest, raw)
		ws, _ := config.ParseWindows(dest.Windows) // checkDestination parsed them
		d.dest, d.windows = dest, ws
		d.tokens = min(d.tokens, float64(dest.RateLimit.Burst))
	}},
	{api.SignalDeliverySkip, checkSelector, func(d *delivery, raw json.RawMessage) {
		drop := d.selected(raw)
		kept := d.st.Poison[:0]
		for _, p := range d.st.Poison {
			if containsSeq(drop, p.Seq) {
				d.st.Counts.Skipped++
				continue
			}
			kept = append(kept, p)
		}
		d.st.Poison = kept
	}},
}

// checkDestination accepts settings for this destination whose tuning
// validates; identity fields in the payload (a whole destination entry)
// are ignored (config.DecodeDestinationSettingsJSON). The verdict depends
// only on the payload and the destination's name; a release that makes
// the rules stricter must record the verdict as judgeSettings does.
func checkDestination(d *delivery, raw json.RawMessage) error {
	dest, err := config.DecodeDestinationSettingsJSON(raw)
	if err != nil {
		return fmt.Errorf("settings are not valid: %s", textclip.Message(err.Error()))
	}
	if dest.Name != d.dest.Name {
		return fmt.Errorf("settings are for destination %q, this delivery is %q", textclip.Value(dest.Name), d.dest.Name)
	}
	if ve := config.ValidateDestinationSettings(dest); ve != nil {
		return ve
	}
	return nil
}

// checkDestinationByValue is checkDestination as it was before
// destinations travelled by reference (frozen): the payload a whole
// config.Destination, identity included and checked. A signal recorded
// before versionDestinationByRef replays its verdict.
func checkDestinationByValue(d *delivery, raw json.RawMessage) error {
	var dest config.Destination
	if err := decodeStrict(raw, &dest); err != nil {
		return err
	}
	if dest.Name != d.dest.Name {
		return fmt.Errorf("settings are for destination %q, this delivery is %q", dest.Name, d.dest.Name)
	}
	if ve := dest.Validate(nil); ve != nil {
		return ve
	}
	return nil
}

// destinationFromMessage is the settings a checked `config` payload asks
// for: its tuning, with the kind kept as cur has it (the registry's). A
// payload only the check of before accepted (a history recorded before
// versionDestinationByRef) is read as that check read it.
func destinationFromMessage(cur api.DestinationSettings, raw json.RawMessage) api.DestinationSettings {
	dest, err := config.DecodeDestinationSettingsJSON(raw)
	if err != nil {
		var old config.Destination
		_ = decodeStrict(raw, &old)
		dest = old.Settings()
	}
	dest.Kind = cur.Kind
	return dest
}

// checkSelector refuses a selector that picks nothing: a seq that is not
// set aside, or neither seq nor all.
func checkSelector(d *delivery, raw json.RawMessage) error {
	var sel api.DeliverySelector
	if err := decodeStrict(raw, &sel); err != nil {
		return err
	}
	switch {
	case sel.All && sel.Seq != 0:
		return fmt.Errorf("give seq or all, not both")
	case sel.All:
		return nil
	case sel.Seq == 0:
		return fmt.Errorf(`give {"seq": N} or {"all": true}`)
	case d.poisonIndex(sel.Seq) < 0:
		return fmt.Errorf("change %d is not set aside (see the poison query)", sel.Seq)
	}
	return nil
}

// asksForLanes says whether checked config settings set max_in_flight
// above 1.
func asksForLanes(raw json.RawMessage) bool {
	return destinationFromMessage(api.DestinationSettings{}, raw).MaxInFlight > 1
}

func (d *delivery) selected(raw json.RawMessage) []int64 {
	var sel api.DeliverySelector
	_ = decodeStrict(raw, &sel)
	var out []int64
	for _, p := range d.st.Poison {
		if sel.All || p.Seq == sel.Seq {
			out = append(out, p.Seq)
		}
	}
	return out
}

func containsSeq(seqs []int64, seq int64) bool {
	for _, s := range seqs {
		if s == seq {
			return true
		}
	}
	return false
}

func (d *delivery) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryDeliveryStatus, func() (api.DeliveryStatus, error) {
		return d.status(d.now), nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryDeliveryPoison, func() ([]api.PoisonChange, error) {
		if d.st.Poison == nil {
			return []api.PoisonChange{}, nil
		}
		return d.st.Poison, nil
	}); err != nil {
		return fmt.Errorf("register poison query: %w", err)
	}
	for _, m := range deliveryMessages {
		err := workflow.SetUpdateHandlerWithOptions(ctx, m.name,
			func(ctx workflow.Context, raw json.RawMessage) (api.DeliveryStatus, error) {
				m.apply(d, raw)
				d.woken = true
				return d.status(workflow.Now(ctx)), nil
			},
			workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error { return d.checkMessage(m, raw) }})
		if err != nil {
			return fmt.Errorf("register update %s: %w", m.name, err)
		}
		ch := workflow.GetSignalChannel(ctx, m.name)
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				var raw json.RawMessage
				ch.Receive(ctx, &raw)
				d.handleSignal(ctx, m, raw)
			}
		})
	}
	return nil
}

// checkMessage is a message's check, then the bound on its payload's size
// (messages.go, "Bounded text").
func (d *delivery) checkMessage(m deliveryMessage, raw json.RawMessage) error {
	if err := m.check(d, raw); err != nil {
		return err
	}
	return checkPayloadSize(raw)
}

// handleSignal applies a signal that passes its check; a refused one
// changes nothing but the rejection count and last error (clipped).
func (d *delivery) handleSignal(ctx workflow.Context, m deliveryMessage, raw json.RawMessage) {
	err := d.checkMessage(m, raw)
	if m.name == api.SignalDeliveryConfig {
		err = d.configVerdict(ctx, raw, err)
	}
	if err != nil && !boundsApply(ctx, err) {
		err = nil // applied, clipped, as before versionBoundedText
	}
	if err == nil && m.name == api.SignalDeliveryConfig && asksForLanes(raw) && !lanesAllowed(ctx) {
		err = fmt.Errorf("max_in_flight must be 1 in this run")
	}
	if err != nil {
		d.st.Rejected++
		d.st.LastError = refusal(m.name+" signal", err)
		workflow.GetLogger(ctx).Error("delivery signal refused", "destination", d.dest.Name, "error", d.st.LastError)
		return
	}
	m.apply(d, raw)
	d.woken = true
}

// configVerdict is a `config` signal's verdict: err, today's, unless the
// check of before destinations travelled by reference decides otherwise
// (it checked the identity a payload carried, and refused a payload
// without it) on a run recorded before versionDestinationByRef. The
// version is asked only when the two verdicts differ.
func (d *delivery) configVerdict(ctx workflow.Context, raw json.RawMessage, err error) error {
	old := checkDestinationByValue(d, raw)
	if old == nil {
		old = checkPayloadSize(raw)
	}
	if (old == nil) == (err == nil) {
		return err
	}
	if workflow.GetVersion(ctx, versionDestinationByRef, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return old
	}
	return err
}

// drainSignals applies signals that arrived but were not yet handled, so
// continue-as-new drops none.
func (d *delivery) drainSignals(ctx workflow.Context) {
	for _, m := range deliveryMessages {
		ch := workflow.GetSignalChannel(ctx, m.name)
		var raw json.RawMessage
		for ch.ReceiveAsync(&raw) {
			d.handleSignal(ctx, m, raw)
			raw = nil
		}
	}
}

// status is the state as of now. A message applied during a wait ends the
// wait, but the loop has not run yet: what it waits for then is judged
// again from the state, so an update answers with the state after its
// change (resume: no longer "paused"), not the wait it interrupted.
func (d *delivery) status(now time.Time) api.DeliveryStatus {
	s := api.DeliveryStatus{Destination: d.dest.Name, Kind: d.dest.Kind, State: d.st, AsOf: now, Settings: d.dest,
		Waiting: d.waiting, WaitUntil: d.waitUntil, InFlight: d.inFlight, InFlightLanes: d.inFlightLanes,
		AlertsPending: d.alerts.pending(), AlertsDropped: d.alerts.dropped}
	if d.waiting != "" && d.woken {
		var ok bool
		if s.Waiting, s.WaitUntil, ok = d.held(now); !ok {
			s.Waiting, s.WaitUntil, _ = d.rateWait(now, d.tokensNow(now))
		}
	}
	switch {
	case d.st.BreakerOpen:
		s.Waiting, s.WaitUntil = "breaker open", d.waitUntil
	case d.st.Paused:
		s.Waiting = "paused: " + d.st.PauseReason
	}
	return s
}
