package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/textclip"
)

// requireClipped checks that an error text fits the documented size once
// JSON-encoded (how history and logs keep it) and says it was clipped.
func requireClipped(t *testing.T, msg string) {
	t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b)-2, textclip.MessageMax, "error text of %d bytes", len(msg))
	require.Contains(t, msg, "[clipped, ")
}

// TestHugePlatformTextIsClipped: issue 24, item 1. An http-kind platform
// answers with a 700 KB id and a non-decimal total, a 700 KB updatedAt, a
// 1 MB error body: every connector error quotes the values clipped, so
// the error that reaches history stays within textclip.MessageMax.
func TestHugePlatformTextIsClipped(t *testing.T) {
	hugeID := strings.Repeat("7", 700<<10)
	ctrlID := strings.Repeat(`\u0001`, 400<<10) // JSON escapes: 400 KB of U+0001 once decoded
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"700 KB id and a non-decimal total", 200, `{"orders":[{"order_no":"` + hugeID + `","meta":{"modified":1},"money":{"amount":"ten"}}]}`},
		{"400 KB id of U+0001 and a non-decimal total", 200, `{"orders":[{"order_no":"` + ctrlID + `","meta":{"modified":1},"money":{"amount":"ten"}}]}`},
		{"700 KB updated_at", 200, `{"orders":[{"order_no":7,"meta":{"modified":"` + hugeID + `x"}}]}`},
		{"700 KB total", 200, `{"orders":[{"order_no":7,"meta":{"modified":1},"money":{"amount":"` + hugeID + `x"}}]}`},
		{"700 KB cursor", 200, `{"orders":[],"next":{"a":"` + hugeID + `"}}`},
		{"1 MB error body", 400, `{"error":{"detail":"` + strings.Repeat("no ", 350<<10) + `"}}`},
		{"1 MB plain error body", 503, strings.Repeat("x", 1<<20)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeBody(w, tc.status, []byte(tc.body))
			}))
			defer ts.Close()
			opts := map[string]any{"path": "/orders", "window": map[string]any{"from_param": "from", "to_param": "to"},
				"records_path": "orders", "pagination": map[string]any{"style": "cursor", "token_param": "c", "token_path": "next"},
				"errors": map[string]any{"message_path": "error.detail"}}
			_, err := genericConn(t, ts.URL, "k-123", opts).ListOrders(context.Background(), connectors.PageRequest{From: genFrom, To: genTo, Page: 1})
			require.Error(t, err)
			requireClipped(t, err.Error())
		})
	}
}

// TestHugeOrderIDFailsThePageActivityWithAClippedError: the same through
// the page activity (sim kind): the activity error that goes to history is
// bounded, whatever the connector wrapped around it.
func TestHugeOrderIDFailsThePageActivityWithAClippedError(t *testing.T) {
	id := strings.Repeat("\u0001", 400<<10)
	body := `{"orders":[{"id":` + mustJSON(t, id) + `,"status":"paid","created_at":"2026-03-01T09:00:00Z","updated_at":"2026-03-01T10:01:00Z","currency":"EUR","total":"ten"}]}`
	e := newEvilPlatform(t, func(evilRequest) (int, string) { return 200, body })
	p := e.platform(t, "evil-huge")
	pl := newPipeline(t)
	_, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	requireClipped(t, app.Message())
	require.Contains(t, app.Message(), `total "ten" is not a decimal number`, "the cause survives the clip")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
