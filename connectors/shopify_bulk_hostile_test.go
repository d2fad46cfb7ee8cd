package connectors_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// The hostile bulk cases of issue 24, played by the simulator over HTTP.

// completedBulk starts a bulk query on a hostile simulator and returns
// the completed operation.
func completedBulk(t *testing.T, bulk sim.BulkConfig, o bulkSimOptions) (*sim.Simulator, connectors.BulkLister, connectors.BulkOperation, time.Time, time.Time) {
	t.Helper()
	clk := newFakeClock()
	if bulk.Duration == 0 {
		bulk.Duration = time.Second
	}
	s, b := startBulkSimWith(t, clk, connectors.DefaultShopifyAPIVersion, bulk, o)
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	op, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	clk.AdvanceTo(clk.Now().Add(2 * time.Second))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkCompleted, op.Status)
	return s, b, op, from, to
}

// readOp reads an operation's result as the activity does: bounded by
// what the operation reports, counting the beats.
func readOp(t *testing.T, b connectors.BulkLister, op connectors.BulkOperation) ([]connectors.Order, int, error) {
	t.Helper()
	var got []connectors.Order
	beats := 0
	err := b.ReadBulk(context.Background(), connectors.BulkRead{URL: op.URL, Batch: 50, ObjectCount: op.ObjectCount,
		FileSize: op.FileSize, Beat: func() { beats++ }}, func(orders []connectors.Order, _ int64) error {
		got = append(got, orders...)
		return nil
	})
	return got, beats, err
}

var loopbackSim = bulkSimOptions{loopbackHTTP: true, timeout: "5s"}

// TestShopifyBulkEndlessLineItems: one order followed by line items
// without end (and an objectCount that allows them) is refused at the
// per-order bound instead of held in memory (issue 24 item 2: 5.2 GB in
// 40 s).
func TestShopifyBulkEndlessLineItems(t *testing.T) {
	_, b, op, _, _ := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkEndlessLines, EndlessBytes: 64 << 20}, loopbackSim)
	got, beats, err := readOp(t, b, op)
	var bound *connectors.BulkBoundError
	require.ErrorAs(t, err, &bound)
	require.Contains(t, err.Error(), "line items")
	require.Empty(t, got, "the order never completed")
	require.Positive(t, beats, "the read beats while no batch completes")
}

// TestShopifyBulkEndlessOrders: a file that goes on past the operation's
// objectCount with further orders stops there (issue 24 item 2: 2.5
// million orders from one slice).
func TestShopifyBulkEndlessOrders(t *testing.T) {
	_, b, op, _, _ := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkEndlessOrders, EndlessBytes: 64 << 20}, loopbackSim)
	got, _, err := readOp(t, b, op)
	var bound *connectors.BulkBoundError
	require.ErrorAs(t, err, &bound)
	require.Contains(t, err.Error(), fmt.Sprintf("more than %d objects", op.ObjectCount))
	require.LessOrEqual(t, int64(len(got)), op.ObjectCount)
}

// TestShopifyBulkObjectCountLie: a file with more objects than its
// operation's objectCount is not that operation's result.
func TestShopifyBulkObjectCountLie(t *testing.T) {
	_, b, op, _, _ := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkCountLie}, loopbackSim)
	_, _, err := readOp(t, b, op)
	var bound *connectors.BulkBoundError
	require.ErrorAs(t, err, &bound)
	require.Contains(t, err.Error(), "objects")
}

// TestShopifyBulkGzipBomb: a gzip-encoded file that inflates without end
// stops at the operation's fileSize. (The orders of the batch it was
// reading are not stored: the file is not the operation's result, and the
// slice pages its window instead.)
func TestShopifyBulkGzipBomb(t *testing.T) {
	s, b, op, from, to := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkGzipBomb, EndlessBytes: 256 << 20}, loopbackSim)
	require.Positive(t, op.FileSize)
	got, _, err := readOp(t, b, op)
	var bound *connectors.BulkBoundError
	require.ErrorAs(t, err, &bound)
	require.Contains(t, err.Error(), fmt.Sprintf("past %d bytes", op.FileSize))
	require.NotEmpty(t, got)
	requireBulkTruth(t, s, from, to, got, false)
}

// TestShopifyBulkEndlessBlankLines: blank lines carry no object, so no
// objectCount bounds them (and this operation reports no fileSize): they
// are bounded themselves.
func TestShopifyBulkEndlessBlankLines(t *testing.T) {
	s, b, op, from, to := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkBlankLines, EndlessBytes: 256 << 20}, loopbackSim)
	require.Zero(t, op.FileSize, "not reported")
	got, _, err := readOp(t, b, op)
	var bound *connectors.BulkBoundError
	require.ErrorAs(t, err, &bound)
	require.Contains(t, err.Error(), "empty lines")
	require.NotEmpty(t, got)
	requireBulkTruth(t, s, from, to, got, false)
}

// TestShopifyBulkStalledBody: a host that stops sending mid-file is given
// up after the platform's timeout, a transient error the download
// retries, instead of holding the read open.
func TestShopifyBulkStalledBody(t *testing.T) {
	_, b, op, _, _ := completedBulk(t, sim.BulkConfig{Hostile: sim.BulkStall}, bulkSimOptions{loopbackHTTP: true, timeout: "1s"})
	got, _, err := readOp(t, b, op)
	var tr *connectors.TransientError
	require.ErrorAs(t, err, &tr)
	require.Contains(t, err.Error(), "no data for 1s")
	require.NotEmpty(t, got, "the first half arrived")
}

// canary is a metadata service on loopback: it counts the requests that
// reach it and answers with a secret.
func canary(t *testing.T, tls bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"id":"CANARY-SECRET-AKIA0000","token":"CANARY-SECRET"}` + "\n"))
	})
	srv := httptest.NewServer(h)
	if tls {
		srv.Close()
		srv = httptest.NewTLSServer(h)
	}
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestShopifyBulkResultURLSSRF: a result URL the platform points at the
// worker's own network is never fetched (issue 24 item 4): not a loopback
// port other than the simulator's own (even with the simulator's opt-in),
// not a redirect to one, not plain http without the opt-in, not a name
// that resolves to loopback (checked where it is dialed), and nothing of
// what such a URL answered reaches the error.
func TestShopifyBulkResultURLSSRF(t *testing.T) {
	plain, plainHits := canary(t, false)
	secure, secureHits := canary(t, true)
	secureByName := strings.Replace(secure.URL, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		name   string
		bulk   sim.BulkConfig
		opts   bulkSimOptions
		reason string
	}{
		{"url to another loopback port", sim.BulkConfig{Hostile: sim.BulkForeignURL, Target: plain.URL + "/latest/meta-data/iam"}, loopbackSim, "is not https"},
		{"redirect to another loopback port", sim.BulkConfig{Hostile: sim.BulkRedirect, Target: plain.URL + "/latest/meta-data/iam"}, loopbackSim, "is not https"},
		{"https by name to loopback", sim.BulkConfig{Hostile: sim.BulkForeignURL, Target: secureByName + "/latest/meta-data/iam"}, loopbackSim, "is a loopback address"},
		{"redirect to https by name on loopback", sim.BulkConfig{Hostile: sim.BulkRedirect, Target: secureByName + "/latest/meta-data/iam"}, loopbackSim, "is a loopback address"},
		{"link-local metadata", sim.BulkConfig{Hostile: sim.BulkForeignURL, Target: "https://169.254.169.254/latest/meta-data/"}, loopbackSim, "is a link-local address"},
		{"private address", sim.BulkConfig{Hostile: sim.BulkForeignURL, Target: "https://10.1.2.3/file.jsonl"}, loopbackSim, "is a private address"},
		{"plain http without the opt-in", sim.BulkConfig{}, bulkSimOptions{timeout: "5s"}, "is not https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, b, op, _, _ := completedBulk(t, tc.bulk, tc.opts)
			got, _, err := readOp(t, b, op)
			var perm *connectors.PermanentError
			require.ErrorAs(t, err, &perm)
			require.Contains(t, err.Error(), tc.reason)
			require.Contains(t, err.Error(), "bulk result URL refused")
			require.NotContains(t, err.Error(), "CANARY")
			require.Empty(t, got)
			require.Zero(t, plainHits.Load(), "the loopback service was reached")
			require.Zero(t, secureHits.Load(), "the loopback service was reached")
			if tc.bulk.Hostile == "" {
				require.Zero(t, s.Stats().Shops["acme"].BulkDownloads, "nothing was asked of the simulator")
			}
		})
	}
}

// TestShopifyBulkLoopbackOptIn: options.bulk_loopback_http is for a
// simulator on loopback only.
func TestShopifyBulkLoopbackOptIn(t *testing.T) {
	_, err := config.Parse([]byte(`
platforms:
  shop:
    kind: shopify
    endpoint: https://shop.myshopify.com
    credentials: {env: TOKEN}
    options: {bulk_loopback_http: true}
`))
	require.ErrorContains(t, err, "bulk_loopback_http")
}
