package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/internal/tuning"
)

// cursorMessage is one row of the cursor's message table. Each name is both
// a signal (fire and forget; works from `temporal workflow signal`) and an
// update (the caller gets an answer, and invalid input is rejected by the
// validator before it reaches history); both are registered from the row
// and follow its rules.
type cursorMessage struct {
	name string
	// payload returns a fresh value to decode the payload into; nil for a
	// message that takes none (a signal's payload is then ignored).
	payload func() any
	// actedOnMalformed says the code before versionStrictMessages acted on
	// a payload it could not decode (see decodeSignal).
	actedOnMalformed bool
	// check judges a decoded payload against the cursor at now and changes
	// nothing (validators do not run on replay). The update's validator
	// runs it; a signal runs it before apply. nil: nothing to judge.
	check func(c *cursor, now time.Time, v any) error
	// verdict, when set, judges a signal's payload in place of check, with
	// the verdict recorded in history (judgeSettings): the check may grow
	// stricter between releases, and a signal accepted once must replay as
	// accepted.
	verdict func(ctx workflow.Context, c *cursor, v any) error
	// apply changes the cursor; its result answers the update.
	apply func(c *cursor, v any) (any, error)
}

// cursorMessages is every cursor message. Signals are taken in this order
// when several wait.
var cursorMessages = []cursorMessage{
	{
		name:             api.SignalPause,
		payload:          func() any { return &api.PauseRequest{} },
		actedOnMalformed: true, // a pause without a readable reason still paused
		check: func(_ *cursor, _ time.Time, v any) error {
			return checkText("reason", v.(*api.PauseRequest).Reason)
		},
		apply: func(c *cursor, v any) (any, error) {
			c.pause(*v.(*api.PauseRequest))
			return c.status(), nil
		},
	},
	{
		name: api.SignalResume,
		apply: func(c *cursor, _ any) (any, error) {
			c.resume()
			return c.status(), nil
		},
	},
	{
		name:    api.SignalReprocess,
		payload: func() any { return &api.ReprocessRequest{} },
		check: func(c *cursor, now time.Time, v any) error {
			return c.validateReprocess(*v.(*api.ReprocessRequest), now)
		},
		apply: func(c *cursor, v any) (any, error) {
			req := v.(*api.ReprocessRequest)
			return c.q.Reprocess(req.From, req.To, req.Force), nil
		},
	},
	{
		name:    api.SignalConfig,
		payload: func() any { return &api.Settings{} },
		check: func(c *cursor, _ time.Time, v any) error {
			return c.validateConfig(*v.(*api.Settings))
		},
		verdict: func(ctx workflow.Context, c *cursor, v any) error {
			return judgeSettings(ctx, c.fromMessage(*v.(*api.Settings)), c.validateConfig)
		},
		apply: func(c *cursor, v any) (any, error) {
			err := c.applyConfig(*v.(*api.Settings))
			return c.status(), err
		},
	},
}

// registerMessages installs the status query and every message's update;
// the loop takes the signals (addSignals).
func (c *cursor) registerMessages(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.CursorStatus, error) {
		return c.status(), nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	for _, m := range cursorMessages {
		var handler any
		var opts workflow.UpdateHandlerOptions
		if m.payload == nil {
			handler = func(ctx workflow.Context) (any, error) {
				return c.receive(ctx, func() (any, error) { return m.apply(c, nil) })
			}
		} else {
			handler = func(ctx workflow.Context, raw json.RawMessage) (any, error) {
				return c.receive(ctx, func() (any, error) {
					v := m.payload()
					if err := decodeOptional(raw, v); err != nil { // the validator checked it strictly
						return nil, err
					}
					return m.apply(c, v)
				})
			}
			opts.Validator = func(ctx workflow.Context, raw json.RawMessage) error {
				v := m.payload()
				if err := decodeStrict(raw, v); err != nil {
					return err
				}
				if m.check != nil {
					if err := m.check(c, workflow.Now(ctx), v); err != nil {
						return err
					}
				}
				return checkPayloadSize(raw)
			}
		}
		if err := workflow.SetUpdateHandlerWithOptions(ctx, m.name, handler, opts); err != nil {
			return fmt.Errorf("register update %s: %w", m.name, err)
		}
	}
	return nil
}

// receive is how every message reaches the state, signal or update: read
// the clock, apply, and wake the loop so it acts on the change.
func (c *cursor) receive(ctx workflow.Context, apply func() (any, error)) (any, error) {
	c.now = workflow.Now(ctx)
	res, err := apply()
	c.wake.SendAsync(true)
	return res, err
}

// signal applies a signal. A signal cannot answer, so a payload that is not
// valid, or that the check refuses, is reported in status (last_error)
// instead of failing the workflow task, and changes nothing else.
func (c *cursor) signal(ctx workflow.Context, m cursorMessage, raw json.RawMessage) {
	_, _ = c.receive(ctx, func() (any, error) {
		var v any
		var err error
		if m.payload != nil {
			v = m.payload()
			err = decodeSignal(ctx, raw, v, m.actedOnMalformed)
		}
		switch {
		case err != nil:
		case m.verdict != nil:
			err = m.verdict(ctx, c, v)
		case m.check != nil:
			err = m.check(c, c.now, v)
		}
		if err == nil {
			err = checkPayloadSize(raw)
		}
		if err != nil && !boundsApply(ctx, err) {
			err = nil // applied, clipped, as before versionBoundedText
		}
		if err == nil {
			_, err = m.apply(c, v)
		}
		if err != nil {
			c.rec.LastError = refusal(m.name+" signal", err)
		}
		return nil, nil
	})
}

// addSignals lets the loop's selector take one signal of each name.
func (c *cursor) addSignals(ctx workflow.Context, sel workflow.Selector) {
	for _, m := range cursorMessages {
		sel.AddReceive(workflow.GetSignalChannel(ctx, m.name), func(ch workflow.ReceiveChannel, _ bool) {
			var raw json.RawMessage
			ch.Receive(ctx, &raw)
			c.signal(ctx, m, raw)
		})
	}
}

// drainSignals applies every signal already delivered, so none is lost when
// the cursor continues as new.
func (c *cursor) drainSignals(ctx workflow.Context) {
	for _, m := range cursorMessages {
		ch := workflow.GetSignalChannel(ctx, m.name)
		for {
			var raw json.RawMessage
			if !ch.ReceiveAsync(&raw) {
				break
			}
			c.signal(ctx, m, raw)
		}
	}
}

func (c *cursor) pause(req api.PauseRequest) {
	c.rec.Paused = true
	c.rec.PauseReason = textclip.Message(req.Reason) // refused when over, but for histories of before
	if c.rec.PauseReason == "" {
		c.rec.PauseReason = "paused by operator"
	}
}

// resume also closes a tripped breaker.
func (c *cursor) resume() {
	c.rec.Paused = false
	c.rec.PauseReason = ""
	c.closeBreaker()
}

// validateReprocess checks a request against now.
func (c *cursor) validateReprocess(req api.ReprocessRequest, now time.Time) error {
	switch {
	case req.From.IsZero() || req.To.IsZero():
		return fmt.Errorf("from and to are both required (RFC3339 times)")
	case !req.From.Before(req.To):
		return fmt.Errorf("from %s is not before to %s", req.From.Format(time.RFC3339), req.To.Format(time.RFC3339))
	case req.To.After(now):
		return fmt.Errorf("to %s is in the future (now %s)", req.To.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if n := int(req.To.Sub(req.From)/c.platform.Interval.D()) + 1; n > MaxReprocessSlices {
		return fmt.Errorf("range needs %d slices of %s, more than %d; ask for a shorter range", n, c.platform.Interval, MaxReprocessSlices)
	}
	return nil
}

// validateConfig is the full settings check of today's release. It runs in
// the update validator (never replayed) and, for signals, inside a recorded
// verdict, so it may grow stricter between releases.
func (c *cursor) validateConfig(p api.Settings) error {
	p = c.fromMessage(p)
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	return validateSettings(p)
}

// fromMessage is the settings a `config` message asks for (settingsFromMessage).
func (c *cursor) fromMessage(p api.Settings) api.Settings { return settingsFromMessage(c.platform, p) }

// applyConfig takes effect from the next slice; running slices keep the
// settings they started with. The settings were judged already (validator
// or recorded verdict).
func (c *cursor) applyConfig(p api.Settings) error {
	p = c.fromMessage(p)
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	ws, err := tuning.ParseWindows(p.Windows)
	if err != nil {
		return err
	}
	c.platform, c.windows = p, ws
	c.q.SetRules(c.rules())
	return nil
}
