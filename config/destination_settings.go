package config

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/ordersync/ordersync/internal/tuning"
)

// A destination's settings are of two sorts, like a platform's. Identity
// says where batches go, with which secret, which platforms' changes and
// in which form: url, allow_plaintext, secret, subject, brokers, topic,
// platforms and payload. It lives in the registry only; the delivery
// activities read it from there by name (activities.Deliveries). Everything else is tuning
// (tuning.Destination, api.DestinationSettings): what the Delivery
// workflow decides by, carried in its input and changed for a running
// Delivery by its `config` message.

// Settings are d's settings as the Delivery workflow takes them: name,
// kind and tuning, never its identity. The revision is the caller's to
// set (0: unknown).
func (d Destination) Settings() tuning.Destination {
	return tuning.Destination{
		Name: d.Name, Kind: d.Kind, BatchSize: d.BatchSize, Timeout: d.Timeout, Retries: d.Retries,
		RetryInterval: d.RetryInterval, RateLimit: d.RateLimit, MaxInFlight: d.MaxInFlight,
		BreakerFailures: d.BreakerFailures, Windows: d.Windows, TaskQueue: d.TaskQueue,
	}
}

// WithTuning is d (its identity, as the registry holds it) with the
// tuning of s. Name and kind stay d's.
func (d Destination) WithTuning(s tuning.Destination) Destination {
	d.BatchSize, d.Timeout, d.Retries, d.RetryInterval = s.BatchSize, s.Timeout, s.Retries, s.RetryInterval
	d.RateLimit, d.MaxInFlight, d.BreakerFailures = s.RateLimit, s.MaxInFlight, s.BreakerFailures
	d.Windows, d.TaskQueue = s.Windows, s.TaskQueue
	return d
}

// ValidateDestinationSettings checks a destination's settings as a
// Delivery input or `config` message brings them, by the rules Validate
// checks the destination's tuning with: name, kind and tuning. nil when
// they pass.
func ValidateDestinationSettings(s tuning.Destination) *ValidationError {
	ve := &ValidationError{}
	bad := func(field, format string, args ...any) {
		ve.Problems = append(ve.Problems, Problem{Destination: s.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	checkDestinationNameKind(s.Name, s.Kind, bad)
	Destination{Name: s.Name, Kind: s.Kind}.WithTuning(s).checkTuning(bad)
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// IgnoredDestinationFields are the identity fields a destination's
// `config` payload may still carry (old CLIs and hand-written payloads
// send the whole destination entry): accepted and ignored, since identity
// is the registry's.
var IgnoredDestinationFields = []string{"url", "allow_plaintext", "secret", "subject", "brokers", "topic", "platforms", "payload"}

// DecodeDestinationSettingsJSON decodes a destination's `config` payload
// strictly: an unknown field at any depth is an error naming it, except
// the identity fields in IgnoredDestinationFields, dropped unread.
func DecodeDestinationSettingsJSON(b []byte) (tuning.Destination, error) {
	var s tuning.Destination
	if err := decodeSettingsObject(b, IgnoredDestinationFields, &s.Name, reflect.ValueOf(&s).Elem()); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			for i := range ve.Problems { // the decoder names platforms
				ve.Problems[i].Destination, ve.Problems[i].Platform = ve.Problems[i].Platform, ""
			}
		}
		return tuning.Destination{}, err
	}
	return s, nil
}
