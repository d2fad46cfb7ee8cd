package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

// activityFailure builds the error a workflow gets from a failed activity,
// through the SDK's own failure converter, as it decodes the server's
// ActivityTaskFailed event: the test environment always reports an
// unspecified retry state, the server does not.
func activityFailure(retry enumspb.RetryState, cause *failurepb.Failure) error {
	return temporal.GetDefaultFailureConverter().FailureToError(&failurepb.Failure{
		Message: "activity error",
		Cause:   cause,
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityId: "5", RetryState: retry,
		}},
	})
}

func appFailure(msg, typ string, nonRetryable bool) *failurepb.Failure {
	return &failurepb.Failure{Message: msg, FailureInfo: &failurepb.Failure_ApplicationFailureInfo{
		ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: typ, NonRetryable: nonRetryable},
	}}
}

// TestFailureDetailsForDeadLetter: the attempts, message and type recorded
// for a dead-lettered slice, from failures shaped as the server sends them.
func TestFailureDetailsForDeadLetter(t *testing.T) {
	cases := []struct {
		name         string
		err          error
		wantAttempts int
		wantMsg      string
		wantType     string
	}{
		{"retries exhausted", activityFailure(enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED, appFailure("HTTP 503", "TransientError", false)),
			6, "HTTP 503", "TransientError"},
		{"non-retryable", activityFailure(enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE, appFailure("HTTP 401", "PermanentError", true)),
			1, "HTTP 401", "PermanentError"},
		{"timed out", activityFailure(enumspb.RETRY_STATE_TIMEOUT, &failurepb.Failure{Message: "timeout", FailureInfo: &failurepb.Failure_TimeoutFailureInfo{
			TimeoutFailureInfo: &failurepb.TimeoutFailureInfo{TimeoutType: enumspb.TIMEOUT_TYPE_START_TO_CLOSE},
		}}), 1, "activity timed out: ", "Timeout"},
		{"plain error", errors.New("boom"), 1, "boom", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var act *temporal.ActivityError
			if tc.name != "plain error" {
				require.True(t, errors.As(tc.err, &act), "converter must give an ActivityError, got %T", tc.err)
			}
			require.Equal(t, tc.wantAttempts, attemptsOf(tc.err, 6))
			require.Contains(t, rootMessage(tc.err), tc.wantMsg)
			require.NotContains(t, rootMessage(tc.err), "retryable:", "Temporal's decoration is not the platform's message")
			require.Equal(t, tc.wantType, errorType(tc.err))
		})
	}
}
