package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/internal/receiver"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// serverNodesPlatforms: nodes-bulk backfills 6 minutes of history at 5
// requests/s (about 20 s of work), nodes-live catches up at once and
// follows the present; the webhook's rate keeps a backlog of changes in
// flight while the backfill runs.
const serverNodesPlatforms = `
default:
  kind: sim
  start: -6m
  interval: 10s
  overlap: 5s
  settle: 2s
  timeout: 3s
  retries: 10
  retry_interval: 200ms
  retry_backoff: 1.5
  max_retry_interval: 2s
  concurrency: 4
  page_size: 10
  max_pages: 5
platforms:
  nodes-bulk:
    endpoint: "{{SIM}}/shops/bulk"
    credentials: {env: ORDERSYNC_E2E_NODES_BULK_TOKEN}
    rate_limit: {rps: 5, burst: 2}
  nodes-live:
    endpoint: "{{SIM}}/shops/live"
    credentials: {env: ORDERSYNC_E2E_NODES_LIVE_TOKEN}
    rate_limit: {rps: 50, burst: 10}
destinations:
  nodes-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_NODES_HOOK_SECRET}
    batch_size: 20
    timeout: 2s
    retries: 30
    retry_interval: 200ms
    breaker_failures: 0
    rate_limit: {rps: 4, burst: 1}
`

const (
	serverNodesInterval = 10 * time.Second
	serverNodesSettle   = 2 * time.Second
	serverNodesOverlap  = 5 * time.Second
	// serverNodesFailover is what a node's death may add to a live
	// cursor's lag: ringpop's suspect period (5 s) before the survivor
	// takes the dead node's shards and task-queue partitions, a workflow
	// task that was on the dead node timing out (10 s) and running again,
	// an activity whose answer was lost retried after its timeout (3 s),
	// and a slice's own time. The lag bound is interval + settle +
	// this (the runs in docs/production.md measured 5.6-5.8 s for the
	// shards and a largest lag of 12-18 s).
	serverNodesFailover = 30 * time.Second
	serverNodesHookKey  = "whsec_bm9kZXMtd2ViaG9vay1zaWduaW5nLWtleS0xMjM0NTY3OA=="
)

var serverNodesShops = map[string]string{"nodes-bulk": "bulk", "nodes-live": "live"}

// No single Temporal server process (issue 29 item 3): `ordersync cluster
// --server-nodes 2` runs the server as two processes on one PostgreSQL,
// behind its load balancer; the workers and this test dial the balancer.
// One platform backfills a long history slowly (nodes-bulk) while the
// other follows the present (nodes-live), and every change goes to a
// webhook. Mid-backfill, with deliveries in flight, the node owning the
// most history shards is killed with SIGKILL. The survivor must take every
// shard, fetching and delivery must go on, nothing may be missing or
// stale, every change must reach the webhook, and the live platform's lag
// must stay within its bound across the kill.
func TestServerNodeKilledMidBackfillAndDelivery(t *testing.T) {
	parallel(t, timedPostgres)
	if testing.Short() {
		t.Skip("end-to-end: two Temporal server processes on PostgreSQL")
	}
	dsn := temporalPostgres(t)
	ordersyncBinary(t) // built before the simulator's clock starts
	began := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs  %s", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	// Two server nodes on fresh databases, every port picked by the kernel
	// (or picked again on a conflict).
	pg, err := cluster.PostgresFromDSN(dsn)
	require.NoError(t, err)
	db := uniqueName("e2e_temporal")
	admin := withDatabase(t, dsn, pg.AdminDatabase)
	dropAtCleanup(t, admin, db)
	dropAtCleanup(t, admin, db+"_visibility")
	storeDSN := freshPostgresStore(t)
	cl := startClusterCommand(t, withDatabase(t, dsn, db), "--server-only", "--server-nodes", "2", "--port", "0", "--ui-port", "0")
	addr := cl.waitLine(t, regexp.MustCompile(`^Ready: namespace `+postgresNamespace+` on (\S+)$`), 3*time.Minute)[1]
	nodes := cl.nodes(t)
	require.Len(t, nodes, 2, "two server nodes listed")
	logf("cluster up: load balancer %s in front of %v", addr, nodes)

	c, err := client.Dial(client.Options{HostPort: addr, Namespace: postgresNamespace, Logger: quietLogger{}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	adm, err := cluster.DialAdmin(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })

	// The simulator, the webhook receiver, the platforms file.
	cfg := sim.DefaultConfig()
	cfg.Seed = 29
	cfg.AdminToken = adminToken
	cfg.Shops = []sim.ShopConfig{
		{Name: "bulk", Token: "nodes-bulk-token", HistoryOrders: 600},
		{Name: "live", Token: "nodes-live-token", HistoryOrders: 40},
	}
	cfg.History = 6 * time.Minute
	cfg.LiveRate = 1
	cfg.MaxUpdates = 2
	cfg.UpdateSpread = 20 * time.Second
	cfg.Late = 2 * time.Second
	cfg.RateLimit = sim.RateLimit{}
	simulator, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := simulator.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })
	hook := newNodesHook(t)
	yaml := strings.NewReplacer("{{SIM}}", simSrv.URL, "{{HOOK}}", hook.url).Replace(serverNodesPlatforms)
	file, err := config.Parse([]byte(yaml))
	require.NoError(t, err)
	platformsPath := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(platformsPath, []byte(yaml), 0o644))
	env := append(postgresStack.env(addr, storeDSN, platformsPath),
		"ORDERSYNC_SIM_ADMIN_TOKEN="+adminToken,
		"ORDERSYNC_E2E_NODES_BULK_TOKEN=nodes-bulk-token",
		"ORDERSYNC_E2E_NODES_LIVE_TOKEN=nodes-live-token",
		"ORDERSYNC_E2E_NODES_HOOK_SECRET="+serverNodesHookKey,
	)

	// Two worker processes, dialling the balancer like every client.
	var workers []*workerProc
	for i := range 2 {
		w := startWorkerProc(t, fmt.Sprintf("worker-%d", i+1), env, "--stop-timeout", "5s")
		require.True(t, w.waitRunning(60*time.Second), "worker-%d did not start:\n%s", i+1, w.tail(4000))
		workers = append(workers, w)
	}
	// From the simulator's start, so a slow worker start loses no order.
	_, err = starter.EnsureCursors(context.Background(), c, file.Platforms, simulator.Started())
	require.NoError(t, err)
	for _, d := range file.Destinations {
		_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: api.DeliveryWorkflowID(d.Name), TaskQueue: d.TaskQueue},
			api.DeliveryWorkflowType, api.DeliveryInput{Destination: d.Settings()})
		require.NoError(t, err)
	}
	logf("workers running, cursors and delivery started")

	// The live platform's lag, sampled from here to the end.
	lag := startLagSampler(c, "nodes-live")
	t.Cleanup(func() { lag.stop() })

	// The moment: the live platform caught up, the bulk one mid-backfill,
	// changes accepted and not yet all delivered.
	var bulk api.CursorStatus
	var dst api.DeliveryStatus
	var head int64
	st, err := store.Open(context.Background(), storeDSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	nodesWait(t, 2*time.Minute, "the live platform caught up, the bulk one mid-backfill and deliveries in flight", func() (bool, string) {
		live, err1 := tryStatus(c, "nodes-live")
		b, err2 := tryStatus(c, "nodes-bulk")
		d, err3 := nodesDeliveryStatus(c, "nodes-hook")
		h, err4 := st.Head(context.Background())
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return false, err.Error()
		}
		bulk, dst, head = b, d, h.LastSeq
		why := fmt.Sprintf("live caught up %v; bulk watermark %s behind, %d pages; delivered %d of %d", live.CaughtUp,
			time.Since(b.Watermark).Round(time.Second), b.Counts.Pages, d.State.Acked, head)
		return live.CaughtUp && !b.CaughtUp && b.Counts.Pages >= 10 && time.Since(b.Watermark) > time.Minute && d.State.Acked > 0 && d.State.Acked < head, why
	})
	owners, err := adm.ShardOwners(context.Background(), cluster.DefaultHistoryShards)
	require.NoError(t, err)
	victim, survivor := nodes[0], nodes[1]
	if countOwned(owners, survivor.history) > countOwned(owners, victim.history) {
		victim, survivor = survivor, victim
	}
	require.Positive(t, countOwned(owners, victim.history), "the node to kill owns shards: %v", owners)

	logf("kill -9 server node %d (pid %d, %d of %d shards: %v); bulk watermark %s behind after %d pages, %d of %d changes delivered",
		victim.n, victim.pid, countOwned(owners, victim.history), cluster.DefaultHistoryShards, owners,
		time.Since(bulk.Watermark).Round(time.Second), bulk.Counts.Pages, dst.State.Acked, head)
	killed := time.Now()
	require.NoError(t, syscall.Kill(victim.pid, syscall.SIGKILL))
	cl.waitLine(t, regexp.MustCompile(fmt.Sprintf(`^Temporal node %d \(pid %d\) exited \(signal: killed\); 1 node\(s\) carry on`, victim.n, victim.pid)), 30*time.Second)

	// The survivor takes every shard...
	nodesWait(t, time.Minute, "the survivor owns every shard", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o, err := adm.ShardOwners(ctx, cluster.DefaultHistoryShards)
		if err != nil {
			return false, err.Error()
		}
		return countOwned(o, survivor.history) == int(cluster.DefaultHistoryShards), fmt.Sprint(o)
	})
	shardsTaken := time.Since(killed)
	logf("the survivor (node %d) owns all %d shards, %s after the kill", survivor.n, cluster.DefaultHistoryShards, shardsTaken.Round(100*time.Millisecond))
	// ... and fetching and delivery go on.
	nodesWait(t, 2*time.Minute, "fetching and delivery go on", func() (bool, string) {
		b, err1 := tryStatus(c, "nodes-bulk")
		d, err2 := nodesDeliveryStatus(c, "nodes-hook")
		if err := errors.Join(err1, err2); err != nil {
			return false, err.Error()
		}
		return b.Counts.Pages > bulk.Counts.Pages && d.State.Acked > dst.State.Acked,
			fmt.Sprintf("bulk pages %d (at the kill %d), delivered %d (at the kill %d)", b.Counts.Pages, bulk.Counts.Pages, d.State.Acked, dst.State.Acked)
	})
	logf("fetching and delivery go on on the survivor, %s after the kill", time.Since(killed).Round(100*time.Millisecond))

	// The backfill finishes; then nothing changes any more and both
	// cursors cover the settled world.
	nodesWait(t, 3*time.Minute, "the bulk platform caught up", func() (bool, string) {
		b, err := tryStatus(c, "nodes-bulk")
		if err != nil {
			return false, err.Error()
		}
		return b.CaughtUp, fmt.Sprintf("watermark %s behind", time.Since(b.Watermark).Round(time.Second))
	})
	logf("the bulk platform caught up")
	quiet := simulator.StopCreating()
	for _, p := range file.Platforms {
		nodesWait(t, 2*time.Minute, p.Name+" past the last change", func() (bool, string) {
			s, err := tryStatus(c, p.Name)
			if err != nil {
				return false, err.Error()
			}
			return !s.Watermark.Before(quiet.Add(serverNodesOverlap)), "watermark " + s.Watermark.Format(time.RFC3339)
		})
	}
	maxLag := lag.stop()

	// Nothing missing, nothing stale: `ordersync verify` against the
	// simulator's ground truth, as an operator would run it.
	for _, p := range file.Platforms {
		code, out, errOut := runOrdersync(t, env, "verify", "--platform", p.Name, "-o", "json")
		var res struct {
			Report verify.Report `json:"report"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), "verify output: %s %s", out, errOut)
		truth, err := simulator.Truth(serverNodesShops[p.Name], time.Time{})
		require.NoError(t, err)
		logf("ordersync verify --platform %s: exit %d, %d checked, %d missing, %d stale (truth holds %d orders)",
			p.Name, code, res.Report.Checked, len(res.Report.Missing), len(res.Report.Stale), len(truth.Orders))
		require.Zero(t, code, "verify --platform %s: %s %s", p.Name, out, errOut)
		require.Empty(t, res.Report.Missing, "%s: missing orders", p.Name)
		require.Empty(t, res.Report.Stale, "%s: stale orders", p.Name)
		require.Equal(t, len(truth.Orders), res.Report.Checked, "%s: verify checks every order the simulator made", p.Name)
	}

	// Every change delivered: the webhook got every change of the feed, each
	// order's in order, and `ordersync verify --destination` agrees.
	h, err := st.Head(context.Background())
	require.NoError(t, err)
	nodesWait(t, 2*time.Minute, "the webhook acknowledged the feed's head", func() (bool, string) {
		d, err := nodesDeliveryStatus(c, "nodes-hook")
		if err != nil {
			return false, err.Error()
		}
		return d.State.Acked >= h.LastSeq, fmt.Sprintf("acked %d of %d", d.State.Acked, h.LastSeq)
	})
	feed := allFeed(t, st)
	require.Len(t, feed, int(h.LastSeq), "nothing compacted: seqs 1..head")
	got := checkDelivered(feed, hook.changes())
	logf("webhook: %d changes accepted, %d arrivals, %d distinct, %d missing, %d extra, %d out of order",
		len(feed), got.Arrivals, got.Distinct, got.Missing, got.Extra, got.OutOfOrder)
	require.Zero(t, got.Missing, "accepted changes never delivered: %v", got.Problems)
	require.Zero(t, got.Extra, "changes delivered that the store did not accept: %v", got.Problems)
	require.Zero(t, got.OutOfOrder, "an order's changes out of order: %v", got.Problems)
	require.Zero(t, got.WentBack, "an order went back to an older version: %v", got.Problems)
	require.Zero(t, hook.badSignatures(), "every delivery carries a valid signature")
	code, out, errOut := runOrdersync(t, env, "verify", "--destination", "nodes-hook", "--settle", "0s", "-o", "json")
	var v struct {
		Total struct {
			Accepted  int64 `json:"accepted"`
			Delivered int64 `json:"delivered"`
		} `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), "verify --destination output: %s %s", out, errOut)
	require.Zero(t, code, "verify --destination: %s %s", out, errOut)
	require.Equal(t, int64(len(feed)), v.Total.Accepted)
	require.Equal(t, int64(len(feed)), v.Total.Delivered)

	// The lag bound held across the kill.
	bound := serverNodesInterval + serverNodesSettle + serverNodesFailover
	logf("measured: shards taken over %s after the kill; the live platform's lag at most %s across it (bound %s = interval + settle + failover budget); %d changes delivered",
		shardsTaken.Round(100*time.Millisecond), maxLag.Round(100*time.Millisecond), bound, len(feed))
	require.LessOrEqual(t, maxLag, bound, "the live platform's lag exceeded interval + settle + the failover budget")
	require.Positive(t, maxLag, "the lag was sampled")

	// Stopping the cluster stops every node it runs.
	for _, w := range workers {
		w.kill9() // done; a drain would only slow the cleanup down
	}
	stopping := time.Now()
	require.NoError(t, cl.stop(), "ordersync cluster exits cleanly on SIGTERM")
	logf("ordersync cluster stopped %s after SIGTERM", time.Since(stopping).Round(100*time.Millisecond))
	require.ErrorIs(t, syscall.Kill(survivor.pid, 0), syscall.ESRCH, "server node %d outlived the cluster command", survivor.n)
}

// clusterCmd is an `ordersync cluster` process whose output the test reads.
type clusterCmd struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string
	more chan struct{} // closed and replaced at each line
	done chan struct{}
	err  error // the exit's, once done is closed
}

// startClusterCommand runs `ordersync cluster --postgres dsn args...` with
// its data in a temp dir, stopped (SIGTERM, then SIGKILL) at cleanup.
func startClusterCommand(t *testing.T, dsn string, args ...string) *clusterCmd {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(ordersyncBinary(t), append([]string{"cluster", "--postgres", dsn}, args...)...)
	cmd.Env = append(environ(),
		"ORDERSYNC_DATA_DIR="+dir,
		"ORDERSYNC_TEMPORAL_NAMESPACE="+postgresNamespace,
		"ORDERSYNC_STORE_DSN=sqlite://"+filepath.Join(dir, "orders.db"),
		"ORDERSYNC_PLATFORMS_FILE="+filepath.Join(dir, "no-such-platforms.yaml"),
	)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	require.NoError(t, err)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	c := &clusterCmd{cmd: cmd, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out = append(c.out, sc.Text())
			close(c.more)
			c.more = make(chan struct{})
			c.mu.Unlock()
		}
		c.err = cmd.Wait()
		stderr.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.stop()
		if t.Failed() {
			b, _ := os.ReadFile(stderr.Name())
			t.Logf("ordersync cluster output:\n%s\n%s", strings.Join(c.lines(), "\n"), b)
			for _, log := range []string{"node-1.log", "node-2.log", "temporal-node-1.log", "temporal-node-2.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, "cluster", log))
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("%s:\n%s", log, b)
			}
		}
	})
	return c
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 90 s); the
// error is the exit's.
func (c *clusterCmd) stop() error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(90 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return c.err
}

func (c *clusterCmd) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.out...)
}

// waitLine waits for a line re matches and returns its submatches.
func (c *clusterCmd) waitLine(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	for seen := 0; ; {
		c.mu.Lock()
		lines, more := c.out[seen:], c.more
		c.mu.Unlock()
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		seen += len(lines)
		select {
		case <-more:
		case <-c.done:
			t.Fatalf("ordersync cluster exited before printing a line matching %s:\n%s", re, strings.Join(c.lines(), "\n"))
		case <-deadline:
			t.Fatalf("no line matching %s within %s:\n%s", re, timeout, strings.Join(c.lines(), "\n"))
		}
	}
}

// clusterNode is a server node as `ordersync cluster` lists it.
type clusterNode struct {
	n, pid            int
	frontend, history string
}

func (n clusterNode) String() string {
	return fmt.Sprintf("node %d (pid %d, frontend %s, history %s)", n.n, n.pid, n.frontend, n.history)
}

var clusterNodeRE = regexp.MustCompile(`^Temporal node (\d+): +pid (\d+), frontend (\S+), history (\S+) `)

// nodes are the server nodes the command listed.
func (c *clusterCmd) nodes(t *testing.T) []clusterNode {
	t.Helper()
	var out []clusterNode
	for _, l := range c.lines() {
		if m := clusterNodeRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			pid, _ := strconv.Atoi(m[2])
			out = append(out, clusterNode{n: n, pid: pid, frontend: m[3], history: m[4]})
		}
	}
	return out
}

func countOwned(owners map[int32]string, history string) int {
	n := 0
	for _, o := range owners {
		if o == history {
			n++
		}
	}
	return n
}

// nodesWait polls cond every half second until it holds; at the timeout the
// test fails with what and cond's last word.
func nodesWait(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (%s)", what, timeout, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// nodesDeliveryStatus queries a destination's Delivery workflow.
func nodesDeliveryStatus(c client.Client, dest string) (api.DeliveryStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st api.DeliveryStatus
	v, err := c.QueryWorkflow(ctx, api.DeliveryWorkflowID(dest), "", api.QueryDeliveryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// lagSampler records the largest lag (now - watermark) of a platform's
// cursor, sampled every second. A query that fails (a node just died) is
// skipped: the lag only grows until the watermark moves, so the next
// answer shows it.
type lagSampler struct {
	once sync.Once
	quit chan struct{}
	done chan struct{}
	max  time.Duration
}

func startLagSampler(c client.Client, platform string) *lagSampler {
	s := &lagSampler{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if st, err := tryStatus(c, platform); err == nil && st.CaughtUp {
				s.max = max(s.max, time.Since(st.Watermark))
			}
			select {
			case <-s.quit:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the largest lag seen.
func (s *lagSampler) stop() time.Duration {
	s.once.Do(func() { close(s.quit) })
	<-s.done
	return s.max
}

// nodesHook is a webhook receiver that checks each batch's signature and
// records every change it got, redeliveries included.
type nodesHook struct {
	url      string
	verifier *receiver.Verifier
	mu       sync.Mutex
	arrivals []store.Change
	badSig   int
}

func newNodesHook(t *testing.T) *nodesHook {
	t.Helper()
	v, err := receiver.NewVerifier(serverNodesHookKey)
	require.NoError(t, err)
	h := &nodesHook{verifier: v}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *nodesHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var b delivery.WebhookBatch
	if err := h.verifier.Verify(r.Header, body); err != nil || json.Unmarshal(body, &b) != nil {
		h.mu.Lock()
		h.badSig++
		h.mu.Unlock()
		http.Error(w, "bad signature or body", http.StatusUnauthorized)
		return
	}
	h.mu.Lock()
	h.arrivals = append(h.arrivals, b.Changes...)
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *nodesHook) changes() []store.Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]store.Change(nil), h.arrivals...)
}

func (h *nodesHook) badSignatures() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.badSig
}
