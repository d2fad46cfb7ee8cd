package api

import "github.com/ordersync/ordersync/internal/tuning"

// Settings are what a platform's workflows decide by, by reference to its
// registry entry: name, kind, the registry revision they were read at and
// the tuning (internal/tuning). Identity (endpoint, credentials, options,
// allow_plaintext) is never part of them: activities resolve it from the
// account registry by name, so no message can point a secret elsewhere.
type Settings = tuning.Settings

// Tuning types of Settings.
type (
	Duration        = tuning.Duration
	RateLimit       = tuning.RateLimit
	DeadLetterRetry = tuning.DeadLetterRetry
	Bulk            = tuning.Bulk
)
