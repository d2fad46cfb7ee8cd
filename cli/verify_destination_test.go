package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// deliveryClient answers a Delivery workflow's status query with status,
// or "not found" when it is nil.
type deliveryClient struct {
	client.Client
	status *api.DeliveryStatus
}

func (c *deliveryClient) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	if c.status == nil || id != api.DeliveryWorkflowID(c.status.Destination) || query != api.QueryDeliveryStatus {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	b, err := json.Marshal(c.status)
	if err != nil {
		return nil, err
	}
	return jsonValue(b), nil
}

func (c *deliveryClient) Close() {}

const verifyDestinationPlatforms = `
platforms:
  a:
    kind: sim
    endpoint: http://127.0.0.1:1/shops/a
    credentials: {env: ORDERSYNC_TEST_A_TOKEN}
  b:
    kind: sim
    endpoint: http://127.0.0.1:1/shops/b
    credentials: {env: ORDERSYNC_TEST_B_TOKEN}
destinations:
  hook:
    kind: webhook
    url: http://127.0.0.1:1/hook
    secret: {env: ORDERSYNC_TEST_HOOK_SECRET}
  only-a:
    kind: webhook
    url: http://127.0.0.1:1/hook
    secret: {env: ORDERSYNC_TEST_HOOK_SECRET}
    platforms: [a]
`

func orderVersion(platform, id string, v int) connectors.Order {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	return connectors.Order{Platform: platform, ID: id, Status: fmt.Sprint(v), CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(v) * time.Minute),
		Currency: "EUR", Total: "1.00"}
}

// TestVerifyDestination: delivered vs accepted from the Delivery
// workflow's acknowledged seq and poison list, per platform, with a cutoff
// that never counts a change accepted after it.
func TestVerifyDestination(t *testing.T) {
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	file := writePlatforms(t, verifyDestinationPlatforms)
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer st.Close()

	// Seqs 1-3 (a/1, b/1, a/2), then the cutoff, then 4-6 (a/3, b/2, c/1;
	// c is no longer in the file).
	var cutoff string
	for i, o := range []connectors.Order{orderVersion("a", "1", 1), orderVersion("b", "1", 1), orderVersion("a", "2", 1),
		orderVersion("a", "3", 1), orderVersion("b", "2", 1), orderVersion("c", "1", 1)} {
		if i == 3 {
			time.Sleep(5 * time.Millisecond)
			cutoff = time.Now().UTC().Format(time.RFC3339Nano)
			time.Sleep(5 * time.Millisecond)
		}
		_, err = st.UpsertOrders(ctx, []connectors.Order{o}) // one at a time: seq i+1
		require.NoError(t, err)
	}

	status := func(dest string, acked int64, poison ...int64) *api.DeliveryStatus {
		s := &api.DeliveryStatus{Destination: dest, Kind: "webhook", State: api.DeliveryState{Acked: acked, Runs: 1}}
		for _, seq := range poison {
			s.State.Poison = append(s.State.Poison, api.PoisonChange{Seq: seq, Reason: "HTTP 422"})
		}
		return s
	}
	verify := func(c *api.DeliveryStatus, args ...string) (int, destinationVerifyReport, string) {
		t.Helper()
		code, out, errOut := runCommand(t, &deliveryClient{status: c}, append([]string{"verify", "-f", file, "-o", "json"}, args...)...)
		var r destinationVerifyReport
		if code != ExitUsage {
			require.NoError(t, json.Unmarshal([]byte(out), &r), "%s %s", out, errOut)
		}
		return code, r, errOut
	}
	counts := func(r destinationVerifyReport) map[string][5]int64 {
		out := map[string][5]int64{}
		for _, n := range append(r.Platforms, r.Total) {
			out[n.Platform] = [5]int64{n.Accepted, n.Delivered, n.Poison, n.Pending, n.Overdue}
		}
		return out
	}

	t.Run("acked up to the cutoff, one set aside: ok", func(t *testing.T) {
		code, r, errOut := verify(status("hook", 3, 2), "--destination", "hook", "--until", cutoff)
		require.Equal(t, ExitOK, code, errOut)
		require.True(t, r.OK)
		require.Equal(t, "workflow", r.AckedFrom)
		require.Equal(t, int64(6), r.Head)
		//                              accepted delivered poison pending overdue
		require.Equal(t, map[string][5]int64{
			"a":       {3, 2, 0, 1, 0},
			"b":       {2, 0, 1, 1, 0},
			"(other)": {1, 0, 0, 1, 0},
			"total":   {6, 2, 1, 3, 0},
		}, counts(r))
	})
	t.Run("the same with a cutoff of now: three overdue", func(t *testing.T) {
		code, r, errOut := verify(status("hook", 3, 2), "--destination", "hook", "--settle", "0s")
		require.Equal(t, ExitFailure, code)
		require.Equal(t, int64(3), r.Total.Overdue)
		require.Contains(t, errOut, "hook: 3 changes accepted before")
		require.Contains(t, errOut, "are neither delivered nor set aside (delivering, acked seq 3)")
	})
	t.Run("the default settle waits a minute: nothing is overdue yet", func(t *testing.T) {
		code, r, errOut := verify(status("hook", 1), "--destination", "hook")
		require.Equal(t, ExitOK, code, errOut)
		require.Equal(t, int64(5), r.Total.Pending)
		require.Zero(t, r.Total.Overdue)
	})
	t.Run("behind the cutoff: overdue", func(t *testing.T) {
		code, r, _ := verify(status("hook", 1), "--destination", "hook", "--until", cutoff)
		require.Equal(t, ExitFailure, code)
		require.Equal(t, map[string][5]int64{
			"a":       {3, 1, 0, 2, 1},
			"b":       {2, 0, 0, 2, 1},
			"(other)": {1, 0, 0, 1, 0},
			"total":   {6, 1, 0, 5, 2},
		}, counts(r))
	})
	t.Run("a destination of one platform counts only it", func(t *testing.T) {
		code, r, _ := verify(status("only-a", 2), "--destination", "only-a", "--until", cutoff)
		require.Equal(t, ExitFailure, code, "a/2 (seq 3) is overdue")
		require.Equal(t, map[string][5]int64{"a": {3, 1, 0, 2, 1}, "total": {3, 1, 0, 2, 1}}, counts(r))
	})
	t.Run("no Delivery workflow: the store's record", func(t *testing.T) {
		require.NoError(t, st.AckChanges(ctx, "hook", 6))
		code, r, errOut := verify(nil, "--destination", "hook", "--settle", "0s")
		require.Equal(t, ExitOK, code, errOut)
		require.False(t, r.Running)
		require.Equal(t, "store", r.AckedFrom)
		require.Equal(t, "not running", r.State)
		require.Equal(t, [5]int64{6, 6, 0, 0, 0}, counts(r)["total"])
		code, r, _ = verify(nil, "--destination", "only-a", "--settle", "0s")
		require.Equal(t, ExitFailure, code, "only-a never acknowledged anything")
		require.Equal(t, int64(3), r.Total.Overdue)
	})
	t.Run("the table", func(t *testing.T) {
		code, out, errOut := runCommand(t, &deliveryClient{status: status("hook", 3, 2)}, "verify", "-f", file, "--destination", "hook", "--until", cutoff)
		require.Equal(t, ExitOK, code, errOut)
		require.Contains(t, out, "hook: acked seq 3 (delivery/hook, delivering), feed head 6; changes accepted before ")
		require.Regexp(t, `PLATFORM\s+ACCEPTED\s+DELIVERED\s+SET ASIDE\s+PENDING\s+OVERDUE`, out)
		require.Regexp(t, `\n\s*total\s+6\s+2\s+1\s+3\s+0`, out)
		require.Contains(t, out, "set aside  seq 2: HTTP 422 (ordersync deliveries retry hook --seq 2)")
	})
	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--destination", "nope"}, `unknown destination "nope": not registered (ordersync deliveries add) and not in a platforms file (hook, only-a)`},
			{[]string{"--destination", "hook", "--platform", "a"}, "give --platform or --destination, not both"},
			{[]string{"--platform", "a", "--settle", "1m"}, "--settle is for --destination"},
			{[]string{"--destination", "hook", "--settle", "-1m"}, "--settle -1m0s: must not be negative"},
			{[]string{"--destination", "hook", "--until", "tomorrow"}, `--until "tomorrow"`},
			{nil, "--platform or --destination is required"},
		} {
			code, _, errOut := verify(status("hook", 0), c.args...)
			require.Equal(t, ExitUsage, code, "%v: %s", c.args, errOut)
			require.Contains(t, errOut, c.want)
		}
	})
}

func TestDeliveryCutoff(t *testing.T) {
	d := config.DestinationDefaults()
	d.Windows = []string{"MON-FRI 06:00-22:00 UTC"}
	sat := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) // a Saturday
	mon := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	friClose := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	require.Equal(t, friClose.Add(-time.Minute), deliveryCutoff(d, sat, time.Minute), "closed: the last open period's end")
	require.Equal(t, mon.Add(-time.Minute), deliveryCutoff(d, mon, time.Minute), "open: now minus settle")
	require.Equal(t, friClose.Add(-5*time.Minute), deliveryCutoff(d, friClose.Add(2*time.Minute), 5*time.Minute),
		"just closed: whichever is earlier")
	d.Windows = nil
	require.Equal(t, sat.Add(-time.Minute), deliveryCutoff(d, sat, time.Minute))
}
