package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const bulkRunMutation = "mutation RunBulkOrders($query: String!) { bulkOperationRunQuery(query: $query, groupObjects: %v) { ... } }"

func bulkOrdersQuery(from, to time.Time) string {
	return `{ orders(query: ` + strconv.Quote(window(from, to)) + `, sortKey: UPDATED_AT) { edges { node { id lineItems { edges { node { id } } } } } } }`
}

type bulkAnswer struct {
	Data struct {
		Run struct {
			Op         *bulkNode `json:"bulkOperation"`
			UserErrors []struct {
				Code string `json:"code"`
			} `json:"userErrors"`
		} `json:"bulkOperationRunQuery"`
		Node *bulkNode `json:"node"`
	} `json:"data"`
}

func runBulk(t *testing.T, base string, grouped bool, from, to time.Time) bulkAnswer {
	t.Helper()
	code, body := gql(t, base, "acme", "acme-token", shopifyBulkRunOp, fmt.Sprintf(bulkRunMutation, grouped), map[string]any{"query": bulkOrdersQuery(from, to)})
	require.Equal(t, http.StatusOK, code, string(body))
	var a bulkAnswer
	require.NoError(t, json.Unmarshal(body, &a), string(body))
	return a
}

// TestShopifyBulkOutput: a job's JSONL holds every order of its window once
// with all its lines under __parentId: right below their order when
// grouped, after all the orders when not. From 2026-01 five jobs run at
// once; the sixth is refused with LIMIT_REACHED.
func TestShopifyBulkOutput(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(7, clk))
	clk.Add(time.Hour)
	from, to := clk.Now().Add(-30*time.Hour), clk.Now()
	want := listAll(t, ts.URL, "acme", "acme-token", from, to, 50)
	require.NotEmpty(t, want)

	for _, grouped := range []bool{true, false} {
		a := runBulk(t, ts.URL, grouped, from, to)
		require.NotNil(t, a.Data.Run.Op)
		id := a.Data.Run.Op.ID
		clk.Add(3 * time.Second)
		code, body := gql(t, ts.URL, "acme", "acme-token", shopifyBulkStatusOp, "query BulkOperationStatus($id: ID!) { ... }", map[string]any{"id": id})
		require.Equal(t, http.StatusOK, code)
		var st bulkAnswer
		require.NoError(t, json.Unmarshal(body, &st))
		require.Equal(t, "COMPLETED", st.Data.Node.Status)
		require.NotNil(t, st.Data.Node.URL)
		resp, err := http.Get(*st.Data.Node.URL)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(data))

		orders, lines := map[string]int{}, 0
		last, seenLine := "", false
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var obj struct {
				ID     string `json:"id"`
				Parent string `json:"__parentId"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &obj))
			if obj.Parent == "" {
				require.False(t, !grouped && seenLine, "ungrouped: orders first")
				orders[obj.ID]++
				last = obj.ID
				continue
			}
			seenLine = true
			lines++
			if grouped {
				require.Equal(t, last, obj.Parent, "grouped: a line right below its order")
			} else {
				require.Contains(t, orders, obj.Parent)
			}
		}
		require.Len(t, orders, len(want), "every order of the window")
		for id, n := range orders {
			require.Equal(t, 1, n, "order %s once", id)
		}
		count, _ := strconv.ParseInt(st.Data.Node.ObjectCount, 10, 64)
		require.Equal(t, int64(len(orders)+lines), count)
	}

	for i := range 5 {
		a := runBulk(t, ts.URL, true, from.Add(time.Duration(i)*time.Minute), to)
		require.NotNil(t, a.Data.Run.Op, "job %d of five", i+1)
	}
	a := runBulk(t, ts.URL, true, from, to)
	require.Nil(t, a.Data.Run.Op)
	require.Equal(t, "LIMIT_REACHED", a.Data.Run.UserErrors[0].Code)
	require.Equal(t, int64(7), s.Stats().Shops["acme"].BulkOperations)
}
