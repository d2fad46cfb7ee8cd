package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

type cursorSignals struct {
	pause, resume, reprocess, config workflow.ReceiveChannel
}

func (c *cursor) signalChannels(ctx workflow.Context) *cursorSignals {
	return &cursorSignals{
		pause:     workflow.GetSignalChannel(ctx, api.SignalPause),
		resume:    workflow.GetSignalChannel(ctx, api.SignalResume),
		reprocess: workflow.GetSignalChannel(ctx, api.SignalReprocess),
		config:    workflow.GetSignalChannel(ctx, api.SignalConfig),
	}
}

// Signal payloads arrive as raw JSON so a malformed one (a typo in a
// hand-written `temporal workflow signal`) is reported in status instead of
// failing the workflow task; one with unknown fields is refused the same way.
func (s *cursorSignals) handlers(ctx workflow.Context, c *cursor) map[workflow.ReceiveChannel]func(json.RawMessage) {
	return map[workflow.ReceiveChannel]func(json.RawMessage){
		s.pause: func(raw json.RawMessage) {
			var req api.PauseRequest
			if err := decodeSignal(ctx, raw, &req, true); err != nil {
				c.st.LastError = "pause signal: " + err.Error()
				return
			}
			c.applyPause(req)
		},
		s.resume: func(json.RawMessage) { c.applyResume() },
		s.reprocess: func(raw json.RawMessage) {
			var req api.ReprocessRequest
			if err := decodeSignal(ctx, raw, &req, false); err != nil {
				c.st.LastError = "reprocess signal: " + err.Error()
				return
			}
			if _, err := c.applyReprocess(req); err != nil {
				c.st.LastError = "reprocess signal: " + err.Error()
			}
		},
		s.config: func(raw json.RawMessage) {
			var p config.Platform
			if err := decodeSignal(ctx, raw, &p, false); err != nil {
				c.st.LastError = "config signal: " + err.Error()
				return
			}
			if err := judgeSettings(ctx, p, c.validateConfig); err != nil {
				c.st.LastError = "config signal: " + err.Error()
				return
			}
			if err := c.applyConfig(p); err != nil {
				c.st.LastError = "config signal: " + err.Error()
			}
		},
	}
}

func (s *cursorSignals) ordered() []workflow.ReceiveChannel {
	return []workflow.ReceiveChannel{s.pause, s.resume, s.reprocess, s.config}
}

func (s *cursorSignals) addTo(ctx workflow.Context, sel workflow.Selector, c *cursor) {
	h := s.handlers(ctx, c)
	for _, ch := range s.ordered() {
		apply := h[ch]
		sel.AddReceive(ch, func(ch workflow.ReceiveChannel, _ bool) {
			var raw json.RawMessage
			ch.Receive(ctx, &raw)
			c.now = workflow.Now(ctx) // the loop read the clock before it blocked
			apply(raw)
		})
	}
}

// drain applies every signal already delivered, so none is lost when the
// cursor continues as new.
func (s *cursorSignals) drain(ctx workflow.Context, c *cursor) {
	h := s.handlers(ctx, c)
	for _, ch := range s.ordered() {
		for {
			var raw json.RawMessage
			if !ch.ReceiveAsync(&raw) {
				break
			}
			h[ch](raw)
		}
	}
}

func (c *cursor) applyPause(req api.PauseRequest) {
	c.st.Paused = true
	c.st.PauseReason = req.Reason
	if c.st.PauseReason == "" {
		c.st.PauseReason = "paused by operator"
	}
}

func (c *cursor) applyResume() {
	c.st.Paused = false
	c.st.PauseReason = ""
	c.closeBreaker()
}

// validateReprocess checks a request against now; it changes nothing, as
// update validators do not run on replay.
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

// applyReprocess queues [From, To) in interval-sized slices, exactly that
// range; a slice already queued or running is not queued twice.
func (c *cursor) applyReprocess(req api.ReprocessRequest) (int, error) {
	if err := c.validateReprocess(req, c.now); err != nil {
		return 0, err
	}
	from, to := req.From.UTC(), req.To.UTC()
	queued := 0
	for s := from; s.Before(to); s = s.Add(c.platform.Interval.D()) {
		e := s.Add(c.platform.Interval.D())
		if e.After(to) {
			e = to
		}
		id := api.SliceWorkflowID(c.platform.Name, s, e)
		if c.willRun(id) {
			continue
		}
		c.st.Reprocess = append(c.st.Reprocess, api.SliceRef{ID: id, Start: s, End: e, Force: req.Force})
		queued++
	}
	return queued, nil
}

// validateConfig is the full settings check of today's release. It runs in
// the update validator (never replayed) and, for signals, inside a recorded
// verdict (judgeSettings), so it may grow stricter between releases.
func (c *cursor) validateConfig(p config.Platform) error {
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	return validateSettings(p)
}

// applyConfig takes effect from the next slice; running slices keep the
// settings they started with. The settings were judged already (validator
// or recorded verdict).
func (c *cursor) applyConfig(p config.Platform) error {
	if p.Name != c.platform.Name {
		return fmt.Errorf("settings are for platform %q, this cursor is %q", p.Name, c.platform.Name)
	}
	ws, err := config.ParseWindows(p.Windows)
	if err != nil {
		return err
	}
	c.platform, c.windows = p, ws
	return nil
}
