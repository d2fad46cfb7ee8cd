package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// seedOrders stores n orders of platform sim-a, order i updated i minutes
// after at, numbered #100i.
func seedOrders(t *testing.T, n int) time.Time {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer st.Close()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var batch []order.Order
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(1000000000 + i)
		u := at.Add(time.Duration(i) * time.Minute)
		batch = append(batch, order.Order{Platform: "sim-a", ID: id, Status: []string{"paid", "open"}[i%2], Currency: "EUR", Total: "1.00",
			CreatedAt: at, UpdatedAt: u, Raw: json.RawMessage(`{"secret":"\u001b[31mred"}`),
			Canonical: &order.Canonical{Schema: order.SchemaV1, Platform: "sim-a", OrderID: id, Number: fmt.Sprintf("#%d", 1000+i), UpdatedAt: u}})
	}
	_, err = st.UpsertOrders(ctx, batch)
	require.NoError(t, err)
	return at
}

func TestOrdersSearchCommandPages(t *testing.T) {
	at := seedOrders(t, 5)
	code, out, stderr := runCommand(t, nil, "orders", "search", "--platform", "sim-a", "--limit", "2", "-o", "json")
	require.Zero(t, code, stderr)
	var page store.SearchPage
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Orders, 2)
	require.Equal(t, "1000000005", page.Orders[0].ID, "newest first")
	require.NotEmpty(t, page.Next)

	code, out, stderr = runCommand(t, nil, "orders", "search", "--platform", "sim-a", "--limit", "2", "--after", page.Next)
	require.Zero(t, code, stderr)
	require.Contains(t, out, "1000000003")
	require.Contains(t, out, "more: --after ")

	code, out, _ = runCommand(t, nil, "orders", "search", "--number", "1002")
	require.Zero(t, code)
	require.Contains(t, out, "#1002")
	require.NotContains(t, out, "#1003")

	code, out, _ = runCommand(t, nil, "orders", "search", "--from", at.Add(2*time.Minute).Format(time.RFC3339), "--to", at.Add(4*time.Minute).Format(time.RFC3339), "--status", "paid", "-o", "json")
	require.Zero(t, code)
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Orders, 1)
	require.Equal(t, "1000000002", page.Orders[0].ID)

	for _, args := range [][]string{
		{"orders", "search", "--limit", "501"},
		{"orders", "search", "--after", "garbage"},
		{"orders", "search", "--from", "yesterday"},
		{"orders", "search", "--from", "-1h", "--to", "-2h"},
	} {
		code, _, stderr := runCommand(t, nil, args...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, stderr)
	}
}

func TestOrdersGetCommand(t *testing.T) {
	seedOrders(t, 2)
	c := &mocks.Client{}
	c.On("Close").Return()
	c.On("QueryWorkflow", mock.Anything, mock.Anything, "", api.QueryDeliveryPoison).Return(nil, serviceerror.NewNotFound("none"))
	code, out, stderr := runCommand(t, c, "orders", "get", "sim-a", "1000000002", "--raw")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "#1002")
	require.Contains(t, out, "VERSIONS (1 retained")
	require.NotContains(t, out, "\x1b", "platform text is escaped for the terminal")

	code, out, _ = runCommand(t, c, "orders", "get", "sim-a", "1000000002", "-o", "json")
	require.Zero(t, code)
	var o map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &o))
	require.Nil(t, o["raw"])
	require.Len(t, o["versions"], 1)

	code, _, stderr = runCommand(t, c, "orders", "get", "sim-a", "nope")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, stderr, "orders refetch sim-a nope")
}

func TestOrdersRefetchCommandRefusesBadInput(t *testing.T) {
	c := &mocks.Client{}
	c.On("Close").Return()
	for _, args := range [][]string{
		{"orders", "refetch", "sim-a"},
		{"orders", "refetch", "sim-a", "1", "--priority", "0"},
		{"orders", "refetch", "sim-a", "1", "--priority", "6"},
	} {
		code, _, stderr := runCommand(t, c, args...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, stderr)
	}
	code, _, stderr := runCommand(t, c, "orders", "refetch", "sim-nope", "1")
	require.Equal(t, ExitUsage, code, stderr)
	require.True(t, strings.Contains(stderr, "unknown platform"), stderr)
}
