package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

// `dlq list` shows when each entry is retried on its own and how many
// automatic tries it had: a time, "running" while a try runs, "operator"
// when nothing will run it but an operator.
func TestDeadLetterTableShowsNextRetry(t *testing.T) {
	failedAt := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	entries := []api.DeadLetterEntry{
		{SliceID: "slice/p/a", Platform: "p", Error: "HTTP 503", ErrorType: "TransientError", Attempts: 3, Failures: 2,
			LastFailedAt: failedAt, NextRetryAt: failedAt.Add(30 * time.Minute), AutoRetries: 1},
		{SliceID: "slice/p/b", Platform: "p", Error: "HTTP 503", ErrorType: "TransientError", Attempts: 3, Failures: 1,
			LastFailedAt: failedAt, Reprocessing: true, AutoRetries: 4},
		{SliceID: "slice/p/c", Platform: "p", Error: "HTTP 401", ErrorType: "PermanentError", Attempts: 1, Failures: 1,
			LastFailedAt: failedAt},
	}
	var out bytes.Buffer
	require.NoError(t, writeDeadLetterTable(&out, entries))
	text := out.String()
	require.Regexp(t, `(?m)^SLICE\s+FAILURES\s+ATTEMPTS\s+LAST FAILED\s+NEXT RETRY\s+AUTO\s+REPROCESSING\s+ERROR$`, text)
	require.Regexp(t, `(?m)^slice/p/a\s+2\s+3\s+2026-11-20 10:00:00Z\s+2026-11-20 10:30:00Z\s+1\s+false\s+HTTP 503$`, text)
	require.Regexp(t, `(?m)^slice/p/b\s+1\s+3\s+2026-11-20 10:00:00Z\s+running\s+4\s+true\s+HTTP 503$`, text)
	require.Regexp(t, `(?m)^slice/p/c\s+1\s+1\s+2026-11-20 10:00:00Z\s+operator\s+0\s+false\s+HTTP 401$`, text)
}

// -o json carries the same fields, named as the list query names them.
func TestDeadLetterJSONShowsNextRetry(t *testing.T) {
	var out bytes.Buffer
	app := &App{Out: &out, Output: "json"}
	next := time.Date(2026, 11, 20, 10, 30, 0, 0, time.UTC)
	require.NoError(t, writeJSON(app, []api.DeadLetterEntry{{SliceID: "slice/p/a", NextRetryAt: next, AutoRetries: 1}, {SliceID: "slice/p/c"}}))
	require.Contains(t, out.String(), `"next_retry_at": "2026-11-20T10:30:00Z"`)
	require.Contains(t, out.String(), `"auto_retries": 1`)
	require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("next_retry_at")), "left out when there is none")
}
