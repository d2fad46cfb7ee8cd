package connectors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

const shopifyBulkOnSim = `
platforms:
  shopify-acme:
    kind: shopify
    endpoint: %s
    credentials: {file: %s}
    timeout: %s
    options: {api_version: %q%s}
`

// startBulkSim starts a simulator with bulk settings and returns the bulk
// side of a shopify connector on shop acme.
func startBulkSim(t *testing.T, clk *fakeClock, version string, bulk sim.BulkConfig) (*sim.Simulator, connectors.BulkLister) {
	t.Helper()
	return startBulkSimWith(t, clk, version, bulk, bulkSimOptions{loopbackHTTP: true, timeout: "5s"})
}

// bulkSimOptions are the platform settings of a bulk test: loopbackHTTP
// sets options.bulk_loopback_http, the opt-in that lets the simulator
// serve result files over http from loopback.
type bulkSimOptions struct {
	loopbackHTTP bool
	timeout      string
}

func startBulkSimWith(t *testing.T, clk *fakeClock, version string, bulk sim.BulkConfig, o bulkSimOptions) (*sim.Simulator, connectors.BulkLister) {
	t.Helper()
	c := simConfig(11, clk)
	c.ShopifyBulk = bulk
	s, err := sim.New(c)
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	extra := ""
	if o.loopbackHTTP {
		extra = ", bulk_loopback_http: true"
	}
	f, err := config.Parse(fmt.Appendf(nil, shopifyBulkOnSim, srv.ShopURL("acme"), secretFile(t, "acme-token").File, o.timeout, version, extra))
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	b, ok := connectors.AsBulk(conn)
	require.True(t, ok, "the GraphQL connector runs bulk queries")
	return s, b
}

// readAll reads a result file from offset in batches and returns the
// orders and the offsets handed with each batch.
func readAll(t *testing.T, b connectors.BulkLister, url string, offset int64, batch int) ([]connectors.Order, []int64, error) {
	t.Helper()
	var got []connectors.Order
	var offsets []int64
	err := b.ReadBulk(context.Background(), connectors.BulkRead{URL: url, Offset: offset, Batch: batch}, func(orders []connectors.Order, next int64) error {
		require.LessOrEqual(t, len(orders), batch)
		got = append(got, orders...)
		offsets = append(offsets, next)
		return nil
	})
	return got, offsets, err
}

// requireTruth checks orders against the simulator: each once, at its
// visible version, with all its lines; all of the window's when complete.
func requireBulkTruth(t *testing.T, s *sim.Simulator, from, to time.Time, got []connectors.Order, complete bool) {
	t.Helper()
	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	byID := map[string]sim.TruthOrder{}
	for _, o := range truth.Orders {
		byID[o.ID] = o
	}
	seen := map[string]bool{}
	for _, o := range got {
		require.False(t, seen[o.ID], "order %s twice", o.ID)
		seen[o.ID] = true
		tr, ok := byID[o.ID]
		require.True(t, ok, "order %s is the simulator's", o.ID)
		require.Equal(t, tr.UpdatedAt.Truncate(time.Second), o.UpdatedAt)
		require.Equal(t, tr.Total, o.Total)
		lines, err := s.LineItems("acme", o.ID)
		require.NoError(t, err)
		require.True(t, o.HasLines)
		require.Len(t, o.Lines, len(lines), "order %s has all its lines", o.ID)
		for i, l := range lines {
			require.Equal(t, connectors.OrderLine{ID: l.ID, SKU: l.SKU, Title: l.Title, Quantity: l.Quantity, UnitPrice: l.Price, Currency: o.Currency}, o.Lines[i])
		}
	}
	if !complete {
		return
	}
	want := 0
	for _, tr := range truth.Orders {
		if !tr.UpdatedAt.Before(from) && tr.UpdatedAt.Before(to) {
			want++
			require.True(t, seen[tr.ID], "order %s updated at %s is in the window: missing", tr.ID, tr.UpdatedAt)
		}
	}
	require.Positive(t, want)
}

// TestShopifyBulkLifecycle: created, running, completed; the JSONL result
// streams in batches, every order with all its lines, and a read resumed
// at a batch's offset gets exactly the rest.
func TestShopifyBulkLifecycle(t *testing.T) {
	clk := newFakeClock()
	s, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: 10 * time.Second})
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	op, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkCreated, op.Status)
	require.Contains(t, op.Query, connectors.ShopifySearchWindow(from, to))

	clk.AdvanceTo(clk.Now().Add(time.Second))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkRunning, op.Status)
	require.Empty(t, op.URL)

	clk.AdvanceTo(clk.Now().Add(10 * time.Second))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkCompleted, op.Status)
	require.NotEmpty(t, op.URL)

	got, offsets, err := readAll(t, b, op.URL, 0, 7)
	require.NoError(t, err)
	requireBulkTruth(t, s, from, to, got, true)
	children := 0
	for _, o := range got {
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(o.Raw, &raw))
		for _, conn := range []string{"lineItems", "shippingLines", "discountApplications"} {
			var c struct {
				Nodes []map[string]any `json:"nodes"`
			}
			require.NoError(t, json.Unmarshal(raw[conn], &c), "Raw has every connection as {nodes}: %s", conn)
			for _, n := range c.Nodes {
				require.NotContains(t, n, "__parentId", "child rows go back under their order without it")
			}
			if conn == "lineItems" {
				require.Len(t, c.Nodes, len(o.Lines))
			}
			children += len(c.Nodes)
		}
	}
	require.Equal(t, int64(len(got)+children), op.ObjectCount, "orders and their connections' nodes are the objects")
	require.Greater(t, len(offsets), 3)

	// Resumed after the third batch: the rest, nothing before it.
	rest, _, err := readAll(t, b, op.URL, offsets[2], 7)
	require.NoError(t, err)
	require.Equal(t, got[21:], rest)
	// Resumed at the end: nothing left.
	none, _, err := readAll(t, b, op.URL, offsets[len(offsets)-1], 7)
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestShopifyBulkFailedWithPartialData: a FAILED operation names its error
// and hands a partialDataUrl whose orders are whole, lines and all.
func TestShopifyBulkFailedWithPartialData(t *testing.T) {
	clk := newFakeClock()
	s, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: time.Second, FailRate: 1})
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	for try := 0; ; try++ {
		op, err := b.StartBulk(ctx, from, to, nil)
		require.NoError(t, err)
		clk.AdvanceTo(clk.Now().Add(2 * time.Second))
		op, err = b.BulkStatus(ctx, op.ID, nil)
		require.NoError(t, err)
		require.Equal(t, connectors.BulkFailed, op.Status)
		require.Equal(t, "INTERNAL_SERVER_ERROR", op.ErrorCode)
		require.Empty(t, op.URL)
		if op.PartialDataURL == "" {
			require.Less(t, try, 10, "some failure leaves partial data")
			continue
		}
		got, _, err := readAll(t, b, op.PartialDataURL, 0, 50)
		require.NoError(t, err)
		requireBulkTruth(t, s, from, to, got, false)
		require.NotEmpty(t, got)
		return
	}
}

// TestShopifyBulkExpiredURL: a signed URL past its time is refused as
// expired; a fresh look signs a new one that opens; a result past its
// retention is EXPIRED with no URL.
func TestShopifyBulkExpiredURL(t *testing.T) {
	clk := newFakeClock()
	_, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: time.Second, URLTTL: time.Minute, ResultTTL: time.Hour})
	ctx := context.Background()
	op, err := b.StartBulk(ctx, clk.Now().Add(-25*time.Hour), clk.Now(), nil)
	require.NoError(t, err)
	clk.AdvanceTo(clk.Now().Add(2 * time.Second))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	old := op.URL

	clk.AdvanceTo(clk.Now().Add(2 * time.Minute))
	_, _, err = readAll(t, b, old, 0, 10)
	var expired *connectors.BulkURLExpiredError
	require.ErrorAs(t, err, &expired)

	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.NotEqual(t, old, op.URL)
	got, _, err := readAll(t, b, op.URL, 0, 10)
	require.NoError(t, err)
	require.NotEmpty(t, got)

	clk.AdvanceTo(clk.Now().Add(2 * time.Hour))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkExpired, op.Status)
	require.Empty(t, op.URL)
}

// TestShopifyBulkOneAtATime: before API 2026-01 a shop runs one bulk query:
// another window waits (BulkBusyError), while starting the same query again
// (an answer lost) adopts the running operation.
func TestShopifyBulkOneAtATime(t *testing.T) {
	clk := newFakeClock()
	s, b := startBulkSim(t, clk, "2025-10", sim.BulkConfig{Duration: time.Minute})
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now().Add(-time.Hour)
	first, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)

	_, err = b.StartBulk(ctx, from.Add(time.Hour), to, nil)
	var busy *connectors.BulkBusyError
	require.ErrorAs(t, err, &busy)
	require.Contains(t, err.Error(), "OPERATION_IN_PROGRESS")

	again, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "the same query is the same operation")
	require.Equal(t, int64(1), s.Stats().Shops["acme"].BulkOperations)

	clk.AdvanceTo(clk.Now().Add(2 * time.Minute))
	_, err = b.StartBulk(ctx, from.Add(time.Hour), to, nil)
	require.NoError(t, err, "the first has ended")
}

// TestShopifyBulkCancel: a running operation is cancelled; cancelling an
// ended one is no error.
func TestShopifyBulkCancel(t *testing.T) {
	clk := newFakeClock()
	_, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: time.Minute})
	ctx := context.Background()
	op, err := b.StartBulk(ctx, clk.Now().Add(-25*time.Hour), clk.Now(), nil)
	require.NoError(t, err)
	require.NoError(t, b.CancelBulk(ctx, op.ID, nil))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkCanceled, op.Status)
	require.NoError(t, b.CancelBulk(ctx, op.ID, nil), "already ended")
}

// TestShopifyBulkCutOffDownload: a download that breaks off is a transient
// error after the batches it completed, which a resumed read finishes.
func TestShopifyBulkCutOffDownload(t *testing.T) {
	clk := newFakeClock()
	s, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: time.Second, DropRate: 1})
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	op, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	clk.AdvanceTo(clk.Now().Add(2 * time.Second))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	got, offsets, err := readAll(t, b, op.URL, 0, 5)
	var tr *connectors.TransientError
	require.ErrorAs(t, err, &tr)
	require.NotEmpty(t, offsets, "the first half arrived")
	require.Equal(t, int64(1), s.Stats().Shops["acme"].BulkDropped)
	// Every order handed over so far is whole; what a batch left unstored
	// is read again from the last offset.
	stored := got
	require.NoError(t, s.SetShopifyBulk(sim.BulkConfig{Duration: time.Second}))
	rest, _, err := readAll(t, b, op.URL, offsets[len(offsets)-1], 5)
	require.NoError(t, err)
	requireBulkTruth(t, s, from, to, append(stored, rest...), true)
}

// TestShopifyBulkNoDuplicateStart: from API 2026-01 a shop runs five bulk
// queries, so a retried start is not refused; the connector finds the
// operation an earlier attempt started (bulkOperations) instead of holding
// a second slot, and five others fill the shop until one ends.
func TestShopifyBulkNoDuplicateStart(t *testing.T) {
	clk := newFakeClock()
	s, b := startBulkSim(t, clk, connectors.DefaultShopifyAPIVersion, sim.BulkConfig{Duration: time.Minute})
	ctx := context.Background()
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	first, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	again, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "the same query is the same operation")
	require.Equal(t, int64(1), s.Stats().Shops["acme"].BulkOperations)

	for i := 1; i < 5; i++ {
		_, err := b.StartBulk(ctx, from.Add(time.Duration(i)*time.Minute), to, nil)
		require.NoError(t, err, "operation %d of five", i+1)
	}
	_, err = b.StartBulk(ctx, from.Add(time.Hour), to, nil)
	var busy *connectors.BulkBusyError
	require.ErrorAs(t, err, &busy)
	require.Contains(t, err.Error(), "LIMIT_REACHED")
}
