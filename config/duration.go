package config

import "github.com/ordersync/ordersync/internal/tuning"

// The tuning types live in internal/tuning, under both config (the
// platforms file) and api (the workflows' wire contract, which needs
// nothing from config); the file uses them by these names.
type (
	// Duration is tuning.Duration: a Go duration string in YAML and JSON.
	Duration = tuning.Duration
	// Window is tuning.Window, one parsed work window.
	Window = tuning.Window
	// Windows is tuning.Windows, a platform's work windows.
	Windows = tuning.Windows
	// RateLimit is tuning.RateLimit, a token bucket.
	RateLimit = tuning.RateLimit
	// DeadLetterRetry is tuning.DeadLetterRetry, the automatic retry of dead letters.
	DeadLetterRetry = tuning.DeadLetterRetry
)

// ParseWindows and ParseWindow are api's parsers (one rule for the file,
// the CLI and the workflows).
var (
	ParseWindows = tuning.ParseWindows
	ParseWindow  = tuning.ParseWindow
)
