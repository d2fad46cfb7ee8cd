package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/store"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeReceiver: the demo receiver counts signed batches, prints a
// line while the counts change, and stops when asked even though its
// context has not ended (ordersync dev failing after starting it).
func TestServeReceiver(t *testing.T) {
	var out syncBuffer
	app := &App{Out: &out}
	url, stop, err := ServeReceiver(context.Background(), app, "127.0.0.1:0", DemoReceiverName, DemoHookSecret, 20*time.Millisecond)
	require.NoError(t, err)

	b := delivery.WebhookBatch{ID: "demo-receiver-1-2", Type: "orders.changes", Destination: "demo-receiver", FromSeq: 1, ToSeq: 2,
		Changes: []store.Change{{Seq: 1, Platform: "sim-acme", OrderID: "1"}, {Seq: 2, Platform: "sim-globex", OrderID: "2"}}}
	body, err := json.Marshal(b)
	require.NoError(t, err)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(DemoHookSecret, "whsec_"))
	require.NoError(t, err)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", b.ID, ts, body)
	req, err := http.NewRequest(http.MethodPost, url+"orders", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("webhook-id", b.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	const line = "demo-receiver: 2 changes received (sim-acme 1, sim-globex 1), last seq 2\n"
	require.Eventually(t, func() bool { return strings.Contains(out.String(), line) }, 5*time.Second, 10*time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
	require.True(t, strings.HasSuffix(out.String(), line), "the final counts: %q", out.String())
	_, err = http.Get(url + "stats")
	require.Error(t, err, "stopped")

	_, _, err = ServeReceiver(context.Background(), app, "127.0.0.1:0", DemoReceiverName, "not a secret", time.Second)
	require.ErrorContains(t, err, "not whsec_ followed by base64")
}
