package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// sec-shop is a simulator shop whose token is the canary; sec-echo is a
// hostile platform that answers 401 and echoes the bearer token it was sent
// in its error message, the way some APIs quote a rejected key.
const secretsPlatforms = `
default:
  kind: sim
  start: -1m
  interval: 10s
  overlap: 2s
  settle: 1s
  timeout: 3s
  retries: 6
  retry_interval: 100ms
  retry_backoff: 1.5
  max_retry_interval: 1s
  concurrency: 3
  rate_limit: {rps: 200, burst: 50}
  page_size: 20
  resweep_delay: 5s
platforms:
  sec-shop:
    endpoint: "{{SIM}}/shops/sec"
    credentials: {env: ORDERSYNC_E2E_SEC_TOKEN}
  sec-echo:
    endpoint: "{{ECHO}}/shops/echo"
    credentials: {env: ORDERSYNC_E2E_SEC_TOKEN}
`

// TestSecretsAndOrdersStayOutOfHistory runs the system with a canary
// credential, with faults, dead letters, alerts, re-sweeps and operator
// signals, then exports every workflow run's history in the namespace and
// searches it, raw and with every payload decoded, for the canary and for
// personal data of the stored orders (invariant 4).
func TestSecretsAndOrdersStayOutOfHistory(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	canary := "canary-" + hex.EncodeToString(b)

	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid API key %s"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(echo.Close)

	cfg := sim.DefaultConfig()
	cfg.Seed = 41
	cfg.Shops = []sim.ShopConfig{{Name: "sec", Token: canary}}
	cfg.History = time.Minute
	cfg.HistoryOrders = 100
	cfg.LiveRate = 2
	cfg.Late = time.Second
	cfg.RateLimit = sim.RateLimit{}
	cfg.Faults = sim.Faults{Err5xx: 0.2, Malformed: 0.05, EmptyPageWithToken: 0.05}
	s := startSystem(t, cfg, strings.ReplaceAll(secretsPlatforms, "{{ECHO}}", echo.URL))
	s.startCursors()

	s.waitWatermark("sec-shop", time.Now().Add(-5*time.Second), 2*time.Minute)
	eventually(t, time.Minute, "the echo platform's slices in the dead-letter workflow", func() bool {
		entries, err := tryDeadLetters(s.client, "sec-echo")
		return err == nil && len(entries) > 0
	})
	// Operator traffic puts payloads into history too.
	ctx := context.Background()
	now := time.Now().UTC()
	require.NoError(t, s.client.SignalWorkflow(ctx, api.CursorWorkflowID("sec-shop"), "", api.SignalReprocess,
		api.ReprocessRequest{From: now.Add(-40 * time.Second), To: now.Add(-20 * time.Second)}))
	require.NoError(t, s.client.SignalWorkflow(ctx, api.DeadLetterWorkflowID("sec-echo"), "", api.SignalDeadLetterReprocess, api.DeadLetterSelector{All: true}))
	eventually(t, time.Minute, "a re-sweep and the reprocessed range", func() bool {
		st := s.status("sec-shop")
		for _, r := range append(st.InFlight, st.Queued...) {
			if !r.Resweep && !r.End.After(now.Add(-20*time.Second)) {
				return false
			}
		}
		return st.Counts.Resweeps > 0
	})

	personal := storedPersonalData(t, s, "sec-shop")
	require.NotEmpty(t, personal)
	histories := allHistories(t, s.client)
	require.Greater(t, len(histories), 10, "cursors, slices, dead letters")
	// Base64 of the canary at the start of an encoded value: only whole
	// 3-byte groups, whose encoding does not depend on what follows.
	whole := len(canary) / 3 * 4
	needles := map[string]string{
		"canary":            canary,
		"canary, base64":    base64.StdEncoding.EncodeToString([]byte(canary))[:whole],
		"canary, base64url": base64.URLEncoding.EncodeToString([]byte(canary))[:whole],
	}
	for i, p := range personal {
		needles[fmt.Sprintf("personal data %d", i)] = p
	}
	var references, redactions, decoded int
	for run, h := range histories {
		texts := append([][]byte{h}, decodedPayloads(t, h)...)
		for what, needle := range needles {
			for _, text := range texts {
				require.False(t, bytes.Contains(text, []byte(needle)), "%s found in the history of %s", what, run)
			}
		}
		for _, text := range texts {
			references += bytes.Count(text, []byte("ORDERSYNC_E2E_SEC_TOKEN"))
			redactions += bytes.Count(text, []byte(connectors.Redacted))
			decoded += bytes.Count(text, []byte(`"page_size"`))
		}
	}
	// Settings travel by reference: not even the credential's reference
	// (the variable's name) reaches history, only the registry holds it.
	// Controls: the search sees decoded inputs (their settings), and the
	// echo platform's quote of the key reached history redacted.
	require.Zero(t, references, "a workflow input or message holds the credential reference")
	require.Positive(t, decoded, "no decoded workflow input was searched")
	require.Positive(t, redactions, "the echoed key should appear redacted in a failure")
	t.Logf("%d workflow runs' histories searched for the canary (plain, base64, every payload decoded) and %d customer emails and names: none found; "+
		"no mention of the credential reference in %d decoded settings; %d redacted quotes of the key", len(histories), len(personal), decoded, redactions)
}

// storedPersonalData returns customer emails and names of stored orders.
func storedPersonalData(t *testing.T, s *system, platform string) []string {
	t.Helper()
	versions, err := s.store.OrderVersions(context.Background(), platform)
	require.NoError(t, err)
	var out []string
	for id := range versions {
		o, ok, err := s.store.GetOrder(context.Background(), platform, id)
		require.NoError(t, err)
		require.True(t, ok)
		var raw struct {
			Customer struct{ Name, Email string } `json:"customer"`
		}
		require.NoError(t, json.Unmarshal(o.Raw, &raw))
		require.NotEmpty(t, raw.Customer.Email, "the simulator's orders carry customer data")
		out = append(out, raw.Customer.Email, raw.Customer.Name)
		if len(out) >= 100 {
			break
		}
	}
	return out
}

// allHistories exports the history of every workflow run in the namespace,
// running or closed, keyed by "workflowID/runID".
func allHistories(t *testing.T, c client.Client) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{PageSize: 100, NextPageToken: token})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			out[id+"/"+run] = exportHistory(t, c, id, run)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}

// decodedPayloads base64-decodes every "data" field of an exported history
// (payloads, and any other base64 the export holds).
func decodedPayloads(t *testing.T, history []byte) [][]byte {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(history, &v))
	var out [][]byte
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "data" {
					if b, err := base64.StdEncoding.DecodeString(s); err == nil {
						out = append(out, b)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
