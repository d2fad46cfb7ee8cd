package activities

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

func TestWebhookAlerterPostsJSONWithIdempotencyKey(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		require.Equal(t, "dead_letter/slice/x/1", r.Header.Get("Idempotency-Key"))
		var a api.Alert
		require.NoError(t, json.NewDecoder(r.Body).Decode(&a))
		require.Equal(t, "shop", a.Platform)
		if n == 1 {
			http.Error(w, "try later", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	alert := api.Alert{Kind: api.AlertDeadLetter, Platform: "shop", Key: "dead_letter/slice/x/1", Message: "m"}
	w := NewWebhookAlerter(srv.URL)
	err := w.Alert(context.Background(), alert)
	require.ErrorContains(t, err, "HTTP 502", "a failed delivery is an error, so Temporal retries it")
	require.NoError(t, w.Alert(context.Background(), alert))
	require.EqualValues(t, 2, calls.Load())
}
