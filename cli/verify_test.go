package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// TestVerifyComparesLines fills a store from the simulator through the sim
// connector (no Temporal: --until stands in for the watermark), then
// changes the lines of stored orders: verify reports them as "lines
// differ" and exits 1, and --lines=false does not look.
func TestVerifyComparesLines(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	_, file, dsn := startVerifySim(t, now)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer st.Close()

	f, err := config.LoadFile(file)
	require.NoError(t, err)
	p, _ := f.Get("sim-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	var ids []string
	for token, page := "", 1; ; page++ {
		pg, err := conn.ListOrders(ctx, connectors.PageRequest{From: now.Add(-72 * time.Hour), To: now, Token: token, PageSize: 25, Page: page})
		require.NoError(t, err)
		_, err = st.UpsertOrders(ctx, pg.Orders)
		require.NoError(t, err)
		for _, o := range pg.Orders {
			ids = append(ids, o.ID)
		}
		if token = pg.NextToken; token == "" {
			break
		}
	}
	require.Greater(t, len(ids), 20)

	from := now.Add(-72 * time.Hour)
	verifyArgs := []string{"verify", "--platform", "sim-acme", "--from", from.Format(time.RFC3339), "--until", now.Format(time.RFC3339),
		"--sim-admin-token", "admin-token", "-f", file}
	code, out, errOut := runCommand(t, nil, verifyArgs...)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, fmt.Sprintf("sim-acme: %d orders updated before %s (since %s) checked: 0 missing, 0 stale, 0 lines differ, 0 extra",
		len(ids), now.Format(time.RFC3339), from.Format(time.RFC3339)))

	// The same versions, with other lines: a quantity changed, a line dropped.
	changed, shrunk := storedOrder(t, st, ids[3]), storedOrder(t, st, ids[7])
	changed.Lines[0].Quantity++
	shrunk.Lines = shrunk.Lines[:0]
	res, err := st.UpsertOrders(ctx, []connectors.Order{changed.Order, shrunk.Order})
	require.NoError(t, err)
	require.Equal(t, store.UpsertResult{Updated: 2}, res, "same updated_at, other lines: applied")

	code, out, errOut = runCommand(t, nil, verifyArgs...)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, "0 missing, 0 stale, 2 lines differ, 0 extra")
	require.Contains(t, out, "lines differ "+ids[3])
	require.Contains(t, errOut, "0 missing, 0 stale, 2 lines differ")

	code, out, _ = runCommand(t, nil, append(verifyArgs, "-o", "json")...)
	require.Equal(t, ExitFailure, code)
	var doc struct{ Report verify.Report }
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.ElementsMatch(t, []string{ids[3], ids[7]}, doc.Report.LinesDiffer)

	code, out, errOut = runCommand(t, nil, append(verifyArgs, "--lines=false")...)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "0 missing, 0 stale, 0 lines differ, 0 extra")
}

func storedOrder(t *testing.T, st store.Store, id string) store.StoredOrder {
	t.Helper()
	o, ok, err := st.GetOrder(context.Background(), "sim-acme", id)
	require.NoError(t, err)
	require.True(t, ok, id)
	require.NotEmpty(t, o.Lines, id)
	return o
}

// startVerifySim starts a simulator with shop acme (its clock held at now,
// 48 hours of history), writes a platforms file naming it sim-acme and
// points the store at a fresh SQLite file: what the verify tests share.
func startVerifySim(t *testing.T, now time.Time) (*sim.Simulator, string, string) {
	t.Helper()
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	s, err := sim.New(sim.Config{Seed: 7, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}, AdminToken: "admin-token",
		History: 48 * time.Hour, HistoryOrders: 60, MaxUpdates: 3, UpdateSpread: 24 * time.Hour, Late: time.Minute,
		Clock: func() time.Time { return now }})
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("ORDERSYNC_TEST_ACME_TOKEN", "acme-token")
	file := writePlatforms(t, fmt.Sprintf(`
platforms:
  sim-acme:
    kind: sim
    endpoint: %s
    credentials: {env: ORDERSYNC_TEST_ACME_TOKEN}
`, srv.ShopURL("acme")))
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	return s, file, dsn
}
