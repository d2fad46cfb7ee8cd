package cli

import (
	"context"
	"os/signal"
	"syscall"
)

func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
}

// SignalContext is cancelled by SIGINT or SIGTERM, for long-running commands.
func SignalContext() (context.Context, context.CancelFunc) { return contextWithSignals() }
