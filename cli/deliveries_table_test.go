package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

// The table shows a destination's pending lanes, not only -o json: the
// range, each unconfirmed lane's seqs and whether it is in flight or waits.
func TestDeliveryTableShowsPendingLanes(t *testing.T) {
	pending := &api.PendingRange{SeqRange: api.SeqRange{After: 100, To: 180}, Lanes: 4,
		Left: []api.LaneBatch{{Lane: 0, Seqs: []int64{101, 140, 180}}, {Lane: 2, Seqs: []int64{117}}}}
	inFlight := api.DeliveryStatus{State: api.DeliveryState{Acked: 100, Pending: pending}, InFlight: &pending.SeqRange, InFlightLanes: 2}
	backoff := api.DeliveryStatus{State: api.DeliveryState{Acked: 7, LastError: "HTTP 503",
		Pending: &api.PendingRange{SeqRange: api.SeqRange{After: 7, To: 9}, Lanes: 2, Left: []api.LaneBatch{{Lane: 1, Seqs: []int64{8, 9}}}}},
		Waiting: "retry backoff"}
	one := api.DeliveryStatus{State: api.DeliveryState{Acked: 50}}
	reports := []deliveryReport{
		{Destination: "oms", Running: true, Status: &inFlight, Head: 200, Accepted: 200, Pending: 100},
		{Destination: "erp", Running: true, Status: &backoff, Head: 200, Accepted: 20, Pending: 2, Overdue: 1},
		{Destination: "wms", Running: true, Status: &one, Head: 200, Accepted: 50},
	}
	var out bytes.Buffer
	require.NoError(t, writeDeliveryTable(&out, reports))
	text := out.String()
	require.Regexp(t, `(?m)^DESTINATION\s+STATE\s+ACKED\s+HEAD\s+ACCEPTED\s+PENDING\s+OVERDUE\s+POISON\s+LAST ERROR\s*$`, text)
	require.Regexp(t, `(?m)^oms\s+delivering\s+100\s+200\s+200\s+100\s+0\s+0\s*$`, text)
	require.Regexp(t, `(?m)^erp\s+\S+.*\s+200\s+20\s+2\s+1\s+0\s+HTTP 503\s*$`, text, "the overdue count is a column, not only in -o json")
	require.Regexp(t, `(?m)^DESTINATION\s+PENDING RANGE\s+LANE\s+SEQS\s+CHANGES\s+STATE\s*$`, text)
	require.Regexp(t, `(?m)^oms\s+101\.\.180\s+1/4\s+101\.\.180\s+3\s+in flight\s*$`, text)
	require.Regexp(t, `(?m)^oms\s+101\.\.180\s+3/4\s+117\.\.117\s+1\s+in flight\s*$`, text)
	require.Regexp(t, `(?m)^erp\s+8\.\.9\s+2/2\s+8\.\.9\s+2\s+waiting: retry backoff\s*$`, text)
	require.NotRegexp(t, `(?m)^wms\s+\d+\.\.`, text, "no lanes pending: no lane line")

	out.Reset()
	require.NoError(t, writeDeliveryTable(&out, reports[2:]))
	require.NotContains(t, out.String(), "PENDING RANGE", "no lane table when no lanes are pending")
}
