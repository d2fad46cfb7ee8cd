package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// TestConfigUpdateCannotPointCredentialsElsewhere sends a running cursor a
// valid `config` update that points its endpoint at another host and its
// credential at another secret, as anyone who can reach the Temporal
// frontend could. The worker's platforms file does not declare them: the
// next slice fails with a permanent error naming the field, lands in the
// dead-letter workflow and the cursor's last error, and the other host is
// never asked.
func TestConfigUpdateCannotPointCredentialsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	const otherSecret = "other-secret-of-the-worker"
	t.Setenv("ORDERSYNC_E2E_OTHER_SECRET", otherSecret)
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
	settings := s.status("cli-a").Settings
	settings.Endpoint = thief.URL + "/shops/a"
	settings.Credentials = config.CredentialRef{Env: "ORDERSYNC_E2E_OTHER_SECRET"}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	h, err := s.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: api.CursorWorkflowID("cli-a"), UpdateName: api.SignalConfig, Args: []any{settings},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	var st api.CursorStatus
	require.NoError(t, h.Get(ctx, &st), "the settings are well-formed; the worker is what refuses them")
	require.Equal(t, settings.Endpoint, st.Settings.Endpoint)

	const refusal = `cli-a: field "endpoint" of the settings differs from this worker's platforms file`
	var entries []api.DeadLetterEntry
	eventually(t, time.Minute, "a dead-lettered slice refused by the worker", func() bool {
		entries, err = tryDeadLetters(s.client, "cli-a")
		return err == nil && len(entries) > 0
	})
	require.Contains(t, entries[0].Error, refusal)
	require.Equal(t, 1, entries[0].Attempts, "a permanent error is not retried")
	eventually(t, 10*time.Second, "the refusal in the cursor's last error", func() bool {
		return strings.Contains(s.status("cli-a").LastError, refusal)
	})
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, asked, "the other host was never asked")
	for _, e := range entries {
		require.NotContains(t, e.Error, otherSecret)
	}
}
