package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

func TestChangesCommand(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	order := func(platform, id string, minute int) connectors.Order {
		return connectors.Order{Platform: platform, ID: id, Status: "paid", Currency: "EUR", Total: "1.00", CreatedAt: at,
			UpdatedAt: at.Add(time.Duration(minute) * time.Minute), HasLines: true, LineCount: 1,
			Lines: []connectors.OrderLine{{ID: "L1", SKU: "S", Title: "T", Quantity: 1, UnitPrice: "1.00", Currency: "EUR"}}}
	}
	_, err = st.UpsertOrders(ctx, []connectors.Order{order("a", "1", 0), order("b", "1", 0), order("a", "1", 1)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	tests := []struct {
		name     string
		args     []string
		wantSeqs []int64
		wantCode int
	}{
		{"all", []string{"changes", "-o", "jsonl"}, []int64{1, 2, 3}, 0},
		{"resume after the last printed", []string{"changes", "--since", "2", "-o", "jsonl"}, []int64{3}, 0},
		{"one platform", []string{"changes", "--platform", "b", "-o", "jsonl"}, []int64{2}, 0},
		{"negative since is a usage error", []string{"changes", "--since", "-1"}, nil, ExitUsage},
		{"jsonl only where supported", []string{"dlq", "list", "-o", "jsonl"}, nil, ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCommand(t, nil, tc.args...)
			require.Equal(t, tc.wantCode, code, stderr)
			if tc.wantCode != 0 {
				return
			}
			var seqs []int64
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var c store.Change
				require.NoError(t, json.Unmarshal([]byte(line), &c), line)
				require.Len(t, c.Order.Lines, 1, "the order comes with its lines")
				seqs = append(seqs, c.Seq)
			}
			require.Equal(t, tc.wantSeqs, seqs)
		})
	}
}
