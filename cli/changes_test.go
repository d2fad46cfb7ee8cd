package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/order"
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

// TestChangesPayload: -o jsonl --payload prints each order in the form a
// destination with that payload receives: by default as stored (byte for
// byte what changes printed before), canonical with a canonical order
// valid under the schema and without the raw JSON, raw without the
// canonical order.
func TestChangesPayload(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	o := connectors.Order{Platform: "shop", ID: "1", Status: "paid", Currency: "EUR", Total: "2.00", CreatedAt: at, UpdatedAt: at,
		Raw: json.RawMessage(`{"id":"1","status":"paid"}`), HasLines: true, LineCount: 1,
		Lines: []connectors.OrderLine{{ID: "1", SKU: "S", Title: "T", Quantity: 2, UnitPrice: "1.00", Currency: "EUR"}}}
	o.Canonical = connectors.Canonical(config.Platform{Name: "shop", Kind: "sim"}, o)
	_, err = st.UpsertOrders(ctx, []connectors.Order{o})
	require.NoError(t, err)
	stored, err := st.Changes(ctx, store.ChangeQuery{Limit: 10})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	want, err := json.Marshal(stored[0])
	require.NoError(t, err)

	for _, tc := range []struct {
		payload          string
		raw, canonical   bool
		lines, identical bool
	}{
		{"", true, true, true, true},
		{"both", true, true, true, true},
		{"raw", true, false, true, false},
		{"canonical", false, true, false, false},
	} {
		t.Run("payload "+tc.payload, func(t *testing.T) {
			args := []string{"changes", "-o", "jsonl"}
			if tc.payload != "" {
				args = append(args, "--payload", tc.payload)
			}
			code, out, stderr := runCommand(t, nil, args...)
			require.Equal(t, 0, code, stderr)
			line := strings.TrimSpace(out)
			if tc.identical {
				require.Equal(t, string(want), line)
			}
			var c struct {
				Order map[string]json.RawMessage `json:"order"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &c))
			require.Equal(t, tc.raw, c.Order["raw"] != nil, line)
			require.Equal(t, tc.canonical, c.Order["canonical"] != nil, line)
			require.Equal(t, tc.lines, c.Order["lines"] != nil, line)
			if tc.canonical {
				require.NoError(t, order.ValidateCanonicalJSON(c.Order["canonical"]))
			}
		})
	}
	code, _, stderr := runCommand(t, nil, "changes", "-o", "jsonl", "--payload", "xml")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr, `--payload "xml": want one of both, raw, canonical`)
}
