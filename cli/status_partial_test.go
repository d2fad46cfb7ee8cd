package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
)

// stuckDeadLetterClient answers every query but those of one platform's
// dead-letter workflow, whose tasks fail (issue 24, item 1).
type stuckDeadLetterClient struct {
	client.Client
}

func (stuckDeadLetterClient) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	switch {
	case id == api.DeadLetterWorkflowID("stuck"):
		return nil, errors.New("Workflow Task in failed state")
	case query == api.QueryStatus:
		return jsonValue(`{"platform":"x","watermark":"2026-11-22T12:00:00Z","in_flight":[]}`), nil
	}
	return jsonValue(`[]`), nil
}

// TestStatusShowsOtherPlatformsWhenOneCannotBeRead: one dead-letter
// workflow that answers no query made `platform status` exit 1 for every
// platform. Its row now says so, the others are shown, and the command
// still fails.
func TestStatusShowsOtherPlatformsWhenOneCannotBeRead(t *testing.T) {
	rows, err := collectStatus(context.Background(), stuckDeadLetterClient{}, []string{"fine", "stuck", "also-fine"})
	require.ErrorContains(t, err, "Workflow Task in failed state")
	require.Len(t, rows, 3)
	require.Equal(t, "query failed", rows[1].State)
	require.Contains(t, rows[1].Error, "query deadletter/stuck")
	var out bytes.Buffer
	require.NoError(t, renderStatusTable(&out, rows, time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)))
	require.Regexp(t, `(?m)^fine\s+\[`, out.String())
	require.Regexp(t, `(?m)^stuck\s+(-\s+){7}query failed\s+query deadletter/stuck`, out.String())
	require.Regexp(t, `(?m)^also-fine\s+\[`, out.String())
}

// listingClient is stuckDeadLetterClient whose other dead-letter
// workflows each hold one entry.
type listingClient struct{ stuckDeadLetterClient }

func (c listingClient) QueryWorkflow(ctx context.Context, id, run, query string, args ...any) (converter.EncodedValue, error) {
	if query == api.QueryDeadLetterList && id != api.DeadLetterWorkflowID("stuck") {
		return jsonValue(`[{"slice_id":"slice/fine/20261122T120000Z-20261122T121500Z","platform":"fine","start":"2026-11-22T12:00:00Z","end":"2026-11-22T12:15:00Z","error":"HTTP 502","error_type":"TransientError","attempts":3,"failures":1,"first_failed_at":"2026-11-22T12:20:00Z","last_failed_at":"2026-11-22T12:20:00Z"}]`), nil
	}
	return c.stuckDeadLetterClient.QueryWorkflow(ctx, id, run, query, args...)
}

func (listingClient) Close() {}

// TestDeadLetterListShowsOtherPlatformsWhenOneCannotBeRead: `dlq list`
// stopped at the first dead-letter workflow that answered no query; the
// others are listed now, and the command still fails naming that one.
func TestDeadLetterListShowsOtherPlatformsWhenOneCannotBeRead(t *testing.T) {
	file := writePlatforms(t, `
platforms:
  stuck:
    kind: sim
    endpoint: http://127.0.0.1:1/shops/stuck
    credentials: {env: ORDERSYNC_TEST_QUIET_TOKEN}
  fine:
    kind: sim
    endpoint: http://127.0.0.1:1/shops/fine
    credentials: {env: ORDERSYNC_TEST_QUIET_TOKEN}
`)
	code, out, errOut := runCommand(t, listingClient{}, "dlq", "list", "-f", file)
	require.NotEqual(t, ExitOK, code)
	require.Contains(t, out, "slice/fine/20261122T120000Z-20261122T121500Z")
	require.Contains(t, errOut, "stuck")
	require.Contains(t, errOut, "Workflow Task in failed state")
}
