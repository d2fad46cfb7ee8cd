package e2e

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/receiver"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

const destOnboardingSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func destOnboardingSim() sim.Config {
	cfg := onboardingSim()
	cfg.Seed = 26
	cfg.LiveRate = 2
	return cfg
}

// TestDestinationOnboardingAtRuntime: with workers running (and never
// restarted), a webhook destination added through the CLI receives the
// change feed; removed through the CLI, its Delivery ends, its consumer
// row is gone, nothing more is sent to it, and compaction frees the
// changes it held.
func TestDestinationOnboardingAtRuntime(t *testing.T) {
	parallel(t, light)
	testDestinationOnboarding(t, embeddedStack)
}

// TestDestinationOnboardingAtRuntimePostgres is the same on the
// production-shaped stack: `ordersync worker` processes and a PostgreSQL
// store, feed and registry.
func TestDestinationOnboardingAtRuntimePostgres(t *testing.T) {
	parallel(t, heavyPostgres)
	testDestinationOnboarding(t, postgresStack)
}

func testDestinationOnboarding(t *testing.T, st stack) {
	st = onboardingStack(t, st)
	// The repository's receiver checks every signature and counts what it got.
	rcv, err := receiver.New("e2e-dest", destOnboardingSecret)
	require.NoError(t, err)
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	// A secret file, which worker processes started before the add can read.
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(destOnboardingSecret), 0o600))

	s := startSystemOn(t, st, destOnboardingSim(), onboardingPlatforms)
	code, out, errOut := s.runCLI("platform", "apply")
	require.Zero(t, code, "apply: %s%s", out, errOut)
	ctx := context.Background()
	eventually(t, time.Minute, "the first changes in the feed", func() bool {
		h, err := s.store.Head(ctx)
		return err == nil && h.LastSeq > 0
	})

	added := time.Now()
	code, out, errOut = s.runCLI("deliveries", "add", "e2e-dest", "--kind", "webhook", "--url", hook.URL,
		"--secret-file", secretFile, "--set", "batch_size=20", "--set", "timeout=2s", "--set", "retry_interval=100ms",
		"--set", "rate_limit={rps: 50, burst: 10}")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "e2e-dest: added at revision")
	require.Contains(t, out, "task queue deliveries")
	head, err := s.store.Head(ctx)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "e2e-dest to acknowledge the feed as it stood at its add", func() bool {
		return acked(t, s.store)["e2e-dest"] >= head.LastSeq
	})
	t.Logf("e2e-dest received %d changes, through seq %d, %s after its add", rcv.Stats().Changes, head.LastSeq,
		time.Since(added).Round(100*time.Millisecond))
	require.GreaterOrEqual(t, rcv.Stats().Changes, head.LastSeq, "every change up to its add arrived (counted once)")
	require.Zero(t, rcv.Stats().Rejected, "every delivery's signature checked out")
	code, out, _ = s.runCLI("deliveries", "list")
	require.Zero(t, code, out)
	require.Regexp(t, `e2e-dest\s+`, out)

	// An edit that moves it to another task queue: the workers serve the
	// new queue, and delivery goes on from where it was.
	code, out, errOut = s.runCLI("deliveries", "edit", "e2e-dest", "--set", "task_queue=deliveries-e2e")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "task queue deliveries-e2e")
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	desc, err := s.client.DescribeWorkflowExecution(dctx, api.DeliveryWorkflowID("e2e-dest"), "")
	cancel()
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	require.Equal(t, "deliveries-e2e", desc.GetWorkflowExecutionInfo().GetTaskQueue())
	var later store.FeedHead
	eventually(t, time.Minute, "new changes after the move", func() bool {
		later, err = s.store.Head(ctx)
		return err == nil && later.LastSeq > head.LastSeq
	})
	eventually(t, 30*time.Second, "e2e-dest to go on from the new queue", func() bool {
		return acked(t, s.store)["e2e-dest"] >= later.LastSeq
	})
	require.GreaterOrEqual(t, rcv.Stats().Changes, later.LastSeq, "nothing skipped across the move")

	// Paused, it holds the feed: compaction keeps every change after its
	// acknowledgement, however old.
	code, out, errOut = s.runCLI("deliveries", "pause", "e2e-dest")
	require.Zero(t, code, "%s%s", out, errOut)
	heldFrom := acked(t, s.store)["e2e-dest"]
	eventually(t, time.Minute, "changes after e2e-dest's acknowledgement", func() bool {
		h, err := s.store.Head(ctx)
		return err == nil && h.LastSeq >= heldFrom+5
	})
	time.Sleep(time.Second) // older than the 1ms retention below, by far
	code, out, errOut = s.runCLI("changes", "compact", "--retention", "1ms")
	require.Zero(t, code, "%s%s", out, errOut)
	first := firstRetained(t, s.store)
	ack := acked(t, s.store)["e2e-dest"]
	require.LessOrEqual(t, first, ack+1, "compaction kept every change e2e-dest has not acknowledged")
	held, err := s.store.Head(ctx)
	require.NoError(t, err)
	require.Greater(t, held.LastSeq, ack, "there are such changes")
	t.Logf("paused e2e-dest holds the feed from seq %d (head %d, %d retained)", first, held.LastSeq, held.Retained)

	removed := time.Now()
	code, out, errOut = s.runCLI("deliveries", "remove", "e2e-dest")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "e2e-dest: removed at revision")
	t.Logf("remove returned after %s", time.Since(removed).Round(100*time.Millisecond))
	// remove returns once the Delivery has ended and the row is released.
	dctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	desc, err = s.client.DescribeWorkflowExecution(dctx, api.DeliveryWorkflowID("e2e-dest"), "")
	cancel()
	require.NoError(t, err)
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status, "the Delivery ended")
	t.Logf("the Delivery ended: %s", status)
	_, held2 := acked(t, s.store)["e2e-dest"]
	require.False(t, held2, "the consumer row is gone")

	sent := rcv.Stats().Changes
	snapshot, err := s.store.Head(ctx)
	require.NoError(t, err)
	time.Sleep(time.Second)
	code, out, errOut = s.runCLI("changes", "compact", "--retention", "1ms")
	require.Zero(t, code, "%s%s", out, errOut)
	n, err := strconv.Atoi(regexp.MustCompile(`removed (\d+) changes`).FindStringSubmatch(out)[1])
	require.NoError(t, err)
	require.Greater(t, n, 0, "compaction frees what e2e-dest held")
	require.Greater(t, firstRetained(t, s.store), snapshot.LastSeq, "every change up to the removal is freed")
	t.Logf("after the removal compaction freed %d changes", n)

	time.Sleep(3 * time.Second) // new changes keep arriving in the feed
	require.Equal(t, sent, rcv.Stats().Changes, "nothing is sent to a removed destination")
	_, held2 = acked(t, s.store)["e2e-dest"]
	require.False(t, held2, "and nothing acknowledges for it again")
	code, out, _ = s.runCLI("deliveries", "list")
	require.Zero(t, code, out)
	require.NotContains(t, out, "e2e-dest")
	code, _, errOut = s.runCLI("deliveries", "add", "e2e-dest", "--kind", "webhook", "--url", hook.URL, "--secret-file", secretFile)
	require.Equal(t, 2, code, "a removed name is not reused by accident")
	require.Contains(t, errOut, "--reuse-removed")
}

// acked is the feed's consumer rows.
func acked(t *testing.T, st store.Store) map[string]int64 {
	t.Helper()
	acks, err := st.Acks(context.Background())
	require.NoError(t, err)
	return acks
}

// firstRetained is the lowest seq the feed still holds (head+1 when none).
func firstRetained(t *testing.T, st store.Store) int64 {
	t.Helper()
	first, err := st.Changes(context.Background(), store.ChangeQuery{Limit: 1, KeysOnly: true})
	require.NoError(t, err)
	if len(first) == 0 {
		h, err := st.Head(context.Background())
		require.NoError(t, err)
		return h.LastSeq + 1
	}
	return first[0].Seq
}
