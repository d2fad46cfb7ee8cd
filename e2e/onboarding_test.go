package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/httpapi"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// The file holds one platform; the others are onboarded while the
// workers run.
const onboardingPlatforms = `
default:
  kind: sim
  start: -10m
  interval: 10s
  overlap: 3s
  settle: 1s
  timeout: 3s
  retries: 3
  retry_interval: 200ms
  concurrency: 3
  rate_limit: {rps: 200, burst: 20}
  page_size: 50
platforms:
  on-base:
    endpoint: "{{SIM}}/shops/base"
    credentials: {env: ORDERSYNC_E2E_BASE_TOKEN}
`

func onboardingSim() sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed = 25
	cfg.Shops = []sim.ShopConfig{{Name: "base", Token: "base-token"}, {Name: "a", Token: "a-token"},
		{Name: "c", Token: "c-token"}, {Name: "h", Token: "h-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 120
	cfg.LiveRate = 1
	cfg.Late = time.Second
	return cfg
}

// TestOnboardingAtRuntime: with workers running (and never restarted), a
// platform added through the CLI and one through the HTTP API start
// fetching within 30 s and end with 0 missing; one on a task queue no worker serves breaks neither
// status nor list for the others; a removed one stops within 30 s and
// nothing of it is fetched afterwards; its name is not reused by accident.
func TestOnboardingAtRuntime(t *testing.T) {
	parallel(t, light)
	testOnboarding(t, embeddedStack)
}

// TestOnboardingAtRuntimePostgres is the same on the production-shaped
// stack: `ordersync worker` processes (which register the file's platform
// themselves) and a PostgreSQL store and registry.
func TestOnboardingAtRuntimePostgres(t *testing.T) {
	parallel(t, heavyPostgres)
	testOnboarding(t, postgresStack)
}

// onboardingStack is st with the registry on, for the onboarding tests
// (platforms and destinations); the test is skipped in -short, and where
// it needs PostgreSQL and there is none.
func onboardingStack(t *testing.T, st stack) stack {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if st.workerProcesses > 0 {
		requirePostgres(t)
	}
	st.registry = true
	return st
}

func testOnboarding(t *testing.T, st stack) {
	st = onboardingStack(t, st)
	st.servedQueues = []string{"orders-sim"}
	s := startSystemOn(t, st, onboardingSim(), onboardingPlatforms)
	// Every order the simulator ever shows, history included.
	from := s.sim.Started().Add(-onboardingSim().History - time.Minute).Format(time.RFC3339)
	tuning := []string{"--set", "start=" + from, "--set", "interval=10s", "--set", "overlap=3s", "--set", "settle=1s",
		"--set", "timeout=3s", "--set", "retry_interval=200ms", "--set", "rate_limit={rps: 200, burst: 20}", "--set", "page_size=50"}

	code, out, errOut := s.runCLI("platform", "apply")
	require.Zero(t, code, "apply: %s%s", out, errOut)
	require.Contains(t, out, "on-base:")

	added := time.Now()
	args := append([]string{"platform", "add", "on-a", "--kind", "sim", "--endpoint", s.simSrv.URL + "/shops/a",
		"--credentials-env", "ORDERSYNC_E2E_A_TOKEN"}, tuning...)
	code, out, errOut = s.runCLI(args...)
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "on-a: added at revision")
	require.Contains(t, out, "task queue orders-sim")
	eventually(t, 30*time.Second, "on-a's first slice within 30 s of its add", func() bool {
		st, err := tryStatus(s.client, "on-a")
		return err == nil && st.Counts.SlicesCompleted > 0
	})
	t.Logf("on-a fetched its first slice %s after its add", time.Since(added).Round(100*time.Millisecond))

	// And one through the HTTP API a back office uses (ordersync serve).
	httpAPI := startAccountsAPI(t, s)
	added = time.Now()
	body := fmt.Sprintf(`{"name": "on-h", "kind": "sim", "endpoint": %q, "credentials": {"env": "ORDERSYNC_E2E_H_TOKEN"},
		"start": %q, "interval": "10s", "overlap": "3s", "settle": "1s", "timeout": "3s", "retry_interval": "200ms",
		"rate_limit": {"rps": 200, "burst": 20}, "page_size": 50}`, s.simSrv.URL+"/shops/h", from)
	status, answer := httpAPI.do(t, http.MethodPost, "/v1/platforms", body)
	require.Equal(t, http.StatusCreated, status, answer)
	require.Contains(t, answer, `"task_queue": "orders-sim"`)
	eventually(t, 30*time.Second, "on-h's first slice within 30 s of its add", func() bool {
		st, err := tryStatus(s.client, "on-h")
		return err == nil && st.Counts.SlicesCompleted > 0
	})
	t.Logf("on-h (HTTP API) fetched its first slice %s after its add", time.Since(added).Round(100*time.Millisecond))
	status, answer = httpAPI.do(t, http.MethodPost, "/v1/platforms", strings.Replace(body, `"kind": "sim"`, `"kind": "sim", "intervall": "1m"`, 1))
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer, "intervall", "the error names the field")

	// A platform on a queue no worker polls: its own rows fail, no other.
	args = append([]string{"platform", "add", "on-c", "--kind", "sim", "--endpoint", s.simSrv.URL + "/shops/c",
		"--credentials-env", "ORDERSYNC_E2E_C_TOKEN", "--set", "task_queue=orders-unserved"}, tuning...)
	code, out, errOut = s.runCLI(args...)
	require.Zero(t, code, "%s%s", out, errOut)
	code, out, _ = s.runCLI("platform", "status", "-o", "json")
	require.Equal(t, 1, code, "status says a platform could not be read")
	var rows []struct {
		Platform string `json:"platform"`
		Running  bool   `json:"running"`
		Error    string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	byName := map[string]int{}
	for i, r := range rows {
		byName[r.Platform] = i
	}
	require.Len(t, rows, 4, out)
	require.True(t, rows[byName["on-a"]].Running, out)
	require.True(t, rows[byName["on-base"]].Running, out)
	require.NotEmpty(t, rows[byName["on-c"]].Error, out)
	code, out, _ = s.runCLI("platform", "list")
	require.Zero(t, code, out)
	require.Regexp(t, `on-a\s+sim\s+orders-sim\s+running`, out)
	require.Regexp(t, `on-c\s+sim\s+orders-unserved\s+no answer`, out)

	// No loss for the platforms onboarded at runtime.
	stopped := s.sim.StopCreating()
	for _, p := range []string{"on-base", "on-a", "on-h"} {
		s.waitWatermark(p, stopped.Add(5*time.Second), 2*time.Minute)
	}
	for p, shop := range map[string]string{"on-base": "base", "on-a": "a", "on-h": "h"} {
		r := s.verify(p, shop)
		require.Greater(t, r.Checked, 100, "%s: the simulator made orders", p)
		require.Empty(t, r.Missing, "%s: missing orders", p)
		require.Empty(t, r.Stale, "%s: stale orders", p)
		t.Logf("%s: %d orders checked, 0 missing", p, r.Checked)
	}

	// Removal: the cursor ends within 30 s, and nothing more is asked of the shop.
	removed := time.Now()
	code, out, errOut = s.runCLI("platform", "remove", "on-a")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "on-a: removed at revision")
	eventually(t, 30*time.Second, "on-a's cursor to end", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := s.client.DescribeWorkflowExecution(ctx, api.CursorWorkflowID("on-a"), "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	t.Logf("on-a's cursor ended %s after its removal", time.Since(removed).Round(100*time.Millisecond))
	time.Sleep(2 * time.Second) // a request already on the wire may land
	before := s.sim.Stats().Shops["a"].Requests
	time.Sleep(8 * time.Second) // several slice intervals
	require.Equal(t, before, s.sim.Stats().Shops["a"].Requests, "nothing of on-a is fetched after its removal")

	// Removal through the API: the same as through the CLI.
	status, answer = httpAPI.do(t, http.MethodDelete, "/v1/platforms/on-h", "")
	require.Equal(t, http.StatusOK, status, answer)
	require.Contains(t, answer, `"state": "removed"`)

	code, out, _ = s.runCLI("platform", "list", "--state", "removed", "--no-cursors")
	require.Zero(t, code)
	require.Regexp(t, `on-a\s+sim\s+orders-sim\s+-\s+-\s+removed`, out)
	args = append([]string{"platform", "add", "on-a", "--kind", "sim", "--endpoint", s.simSrv.URL + "/shops/a",
		"--credentials-env", "ORDERSYNC_E2E_A_TOKEN"}, tuning...)
	code, _, errOut = s.runCLI(args...)
	require.Equal(t, 2, code, "a removed name is not reused by accident")
	require.Contains(t, errOut, "--reuse-removed")
}

// accountsAPI is `ordersync serve`'s handler over the system's registry.
type accountsAPI struct {
	url, token string
}

func startAccountsAPI(t *testing.T, s *system) accountsAPI {
	t.Helper()
	reg, ok := store.RegistryOf(s.store)
	require.True(t, ok)
	const token = "e2e-accounts-api-token"
	h, err := httpapi.New(&accounts.Service{Registry: reg, Engine: starter.Engine{Client: s.client}}, httpapi.Options{Token: token})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return accountsAPI{url: srv.URL, token: token}
}

func (a accountsAPI) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
