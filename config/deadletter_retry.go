package config

import "github.com/ordersync/ordersync/internal/tuning"

// The dead-letter retry's schedule and bounds are api's (api/deadletter_retry.go).
var DefaultDeadLetterRetrySchedule = tuning.DefaultDeadLetterRetrySchedule

const (
	MinDeadLetterRetryWait  = tuning.MinDeadLetterRetryWait
	MaxDeadLetterRetryWait  = tuning.MaxDeadLetterRetryWait
	MaxDeadLetterRetryWaits = tuning.MaxDeadLetterRetryWaits
)
