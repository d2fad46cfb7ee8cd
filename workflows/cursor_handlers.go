package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// registerHandlers installs the status query and the updates. Updates share
// the signal names; unlike signals they answer the caller and reject bad
// input in a validator, so nothing invalid reaches history.
func (c *cursor) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.CursorStatus, error) {
		return c.status(), nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	updates := []struct {
		name    string
		handler any
		opts    workflow.UpdateHandlerOptions
	}{
		{api.SignalPause, func(ctx workflow.Context, raw json.RawMessage) (api.CursorStatus, error) {
			var req api.PauseRequest
			_ = decodeOptional(raw, &req) // the validator checked it strictly
			c.applyPause(req)
			c.poke()
			return c.status(), nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var req api.PauseRequest
			return decodeStrict(raw, &req)
		}}},
		{api.SignalResume, func(ctx workflow.Context) (api.CursorStatus, error) {
			c.applyResume()
			c.poke()
			return c.status(), nil
		}, workflow.UpdateHandlerOptions{}},
		{api.SignalReprocess, func(ctx workflow.Context, raw json.RawMessage) (int, error) {
			var req api.ReprocessRequest
			if err := decodeOptional(raw, &req); err != nil {
				return 0, err
			}
			c.now = workflow.Now(ctx)
			n, err := c.applyReprocess(req)
			c.poke()
			return n, err
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var req api.ReprocessRequest
			if err := decodeStrict(raw, &req); err != nil {
				return err
			}
			return c.validateReprocess(req, workflow.Now(ctx))
		}}},
		{api.SignalConfig, func(ctx workflow.Context, raw json.RawMessage) (api.CursorStatus, error) {
			var p config.Platform
			if err := decodeOptional(raw, &p); err != nil {
				return c.status(), err
			}
			err := c.applyConfig(p) // judged by the validator when it was accepted
			c.poke()
			return c.status(), err
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			var p config.Platform
			if err := decodeStrict(raw, &p); err != nil {
				return err
			}
			return c.validateConfig(p)
		}}},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, u.opts); err != nil {
			return fmt.Errorf("register update %s: %w", u.name, err)
		}
	}
	return nil
}

// poke wakes the main loop after an update changed the state.
func (c *cursor) poke() { c.wake.SendAsync(true) }

func (c *cursor) status() api.CursorStatus {
	s := api.CursorStatus{
		Platform:   c.platform.Name,
		Kind:       c.platform.Kind,
		Start:      c.start,
		Watermark:  c.watermark(),
		Next:       c.st.Next,
		AsOf:       c.now,
		LagSeconds: c.now.Sub(c.watermark()).Seconds(),
		Paused:     c.st.Paused,
		Waiting:    c.waiting,
		WaitUntil:  c.waitUntil,
		InFlight:   []api.SliceRef{},
		Counts:     c.st.Counts,
		LastError:  c.st.LastError,
		Runs:       c.st.Runs,
		Interval:   c.platform.Interval.String(),
		SliceSpan:  (time.Duration(c.spanIntervals()) * c.platform.Interval.D()).String(),
		TaskQueue:  c.platform.TaskQueue,
		Settings:   c.platform,

		ConsecutiveFailures: c.st.ConsecutiveFailures,
		BreakerOpen:         c.st.BreakerOpen,
		CaughtUp:            c.st.CaughtUp,
	}
	if c.st.Paused {
		// Derived from state: an update answers before the loop has run.
		s.Waiting, s.WaitUntil = api.WaitPaused, time.Time{}
		if c.st.BreakerOpen {
			s.Waiting = api.WaitBreaker
		}
		if c.st.PauseReason != "" {
			s.Waiting += ": " + c.st.PauseReason
		}
	}
	for _, list := range c.lists() {
		for _, r := range *list {
			switch {
			case r.Running:
				s.InFlight = append(s.InFlight, r)
			case !r.Done:
				s.Queued = append(s.Queued, r)
			}
		}
	}
	return s
}
