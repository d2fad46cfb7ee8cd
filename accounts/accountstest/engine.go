// Package accountstest holds test doubles for package accounts: an
// Engine that records what the service asks of Temporal, for the tests of
// every caller of accounts.Service (the HTTP API, the CLI, the service).
package accountstest

import (
	"context"
	"fmt"
	"sync"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
)

var _ accounts.Engine = (*Engine)(nil)

// Engine is an accounts.Engine that records each call as one line
// ("start sim-a", "pause sim-a (reason)", "stop sim-a discard=true"),
// fails the steps FailStep names, and fails every call on a cancelled
// context, as a Temporal call would. The zero value is ready to use.
type Engine struct {
	mu      sync.Mutex
	calls   []string
	fail    map[string]error
	running map[string]string
}

// FailStep makes every later call of step ("start", "reconfigure",
// "pause", "resume", "stop", "running_queue") return err (nil: succeed).
func (e *Engine) FailStep(step string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail == nil {
		e.fail = map[string]error{}
	}
	e.fail[step] = err
}

// SetRunning says the platform's cursor runs on queue ("" : not running).
func (e *Engine) SetRunning(name, queue string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running == nil {
		e.running = map[string]string{}
	}
	if queue == "" {
		delete(e.running, name)
		return
	}
	e.running[name] = queue
}

// Took returns the calls recorded since the last Took, in order.
func (e *Engine) Took() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.calls
	e.calls = nil
	return out
}

func (e *Engine) record(ctx context.Context, step, call string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, call)
	return e.fail[step]
}

// Start implements accounts.Engine.
func (e *Engine) Start(ctx context.Context, p config.Platform, _ int64) error {
	return e.record(ctx, "start", "start "+p.Name)
}

// Reconfigure implements accounts.Engine.
func (e *Engine) Reconfigure(ctx context.Context, p config.Platform, _ int64) error {
	return e.record(ctx, "reconfigure", "reconfigure "+p.Name)
}

// Pause implements accounts.Engine.
func (e *Engine) Pause(ctx context.Context, name, reason string) error {
	return e.record(ctx, "pause", fmt.Sprintf("pause %s (%s)", name, reason))
}

// Resume implements accounts.Engine.
func (e *Engine) Resume(ctx context.Context, name string) error {
	return e.record(ctx, "resume", "resume "+name)
}

// Stop implements accounts.Engine.
func (e *Engine) Stop(ctx context.Context, name string, discardDeadLetters bool) error {
	return e.record(ctx, "stop", fmt.Sprintf("stop %s discard=%v", name, discardDeadLetters))
}

// RunningQueue implements accounts.Engine; it is not recorded (the
// service asks it on every apply).
func (e *Engine) RunningQueue(ctx context.Context, name string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.running[name]
	return q, ok, e.fail["running_queue"]
}

var (
	_ accounts.DeliveryEngine   = (*Engine)(nil)
	_ accounts.ConsumerReleaser = (*Engine)(nil)
)

// StartDelivery implements accounts.DeliveryEngine ("start-delivery oms").
func (e *Engine) StartDelivery(ctx context.Context, d config.Destination, _ int64) error {
	return e.record(ctx, "start-delivery", "start-delivery "+d.Name)
}

// ReconfigureDelivery implements accounts.DeliveryEngine.
func (e *Engine) ReconfigureDelivery(ctx context.Context, d config.Destination, _ int64) error {
	return e.record(ctx, "reconfigure-delivery", "reconfigure-delivery "+d.Name)
}

// StopDelivery implements accounts.DeliveryEngine.
func (e *Engine) StopDelivery(ctx context.Context, name string) error {
	return e.record(ctx, "stop-delivery", "stop-delivery "+name)
}

// ReleaseConsumer implements accounts.ConsumerReleaser, so a test given
// it as the service's Feed sees a release ("release oms") in order with
// the engine's calls.
func (e *Engine) ReleaseConsumer(ctx context.Context, name string) (bool, error) {
	return true, e.record(ctx, "release", "release "+name)
}
