package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
)

// TestConfigUpdateCannotPointCredentialsElsewhere sends a running cursor a
// valid `config` update that, besides a tuning change, points its endpoint
// at another host and its credential at another secret, as an old CLI or
// anyone who can reach the Temporal frontend could. Settings travel by
// reference: the update is accepted with the identity fields ignored (they
// are the registry's), the tuning change takes effect, slices keep
// completing against the registered endpoint, nothing is dead-lettered,
// and the other host is never asked.
func TestConfigUpdateCannotPointCredentialsElsewhere(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	const otherSecret = "other-secret-of-the-worker"
	setenv(t, "ORDERSYNC_E2E_OTHER_SECRET", otherSecret)
	var mu sync.Mutex
	var asked []string
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"orders":[]}`))
	}))
	t.Cleanup(thief.Close)

	s := startSystem(t, cliSim(), cliPlatforms)
	s.startCursors()
	before := s.status("cli-a")
	raw, err := json.Marshal(before.Settings)
	require.NoError(t, err)
	var forged map[string]any
	require.NoError(t, json.Unmarshal(raw, &forged))
	forged["endpoint"] = thief.URL + "/shops/a"
	forged["credentials"] = map[string]any{"env": "ORDERSYNC_E2E_OTHER_SECRET"}
	forged["allow_plaintext"] = true
	forged["page_size"] = before.Settings.PageSize - 1 // the tuning change that must take effect

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	h, err := s.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: api.CursorWorkflowID("cli-a"), UpdateName: api.SignalConfig, Args: []any{forged},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	var st api.CursorStatus
	require.NoError(t, h.Get(ctx, &st), "identity fields are ignored, not refused")
	require.Equal(t, before.Settings.PageSize-1, st.Settings.PageSize, "the tuning change took effect")
	after, _ := json.Marshal(st.Settings)
	require.NotContains(t, string(after), thief.URL, "settings hold no endpoint")
	require.NotContains(t, string(after), "ORDERSYNC_E2E_OTHER_SECRET", "settings hold no credential reference")

	done := st.Counts.SlicesCompleted
	eventually(t, time.Minute, "slices completing against the registered endpoint after the update", func() bool {
		return s.status("cli-a").Counts.SlicesCompleted >= done+3
	})
	entries, err := tryDeadLetters(s.client, "cli-a")
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was dead-lettered")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, asked, "the other host was never asked")
}
