package devcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/internal/tserver"
)

// `ordersync cluster --server-nodes N` runs the Temporal server as N OS
// processes (`ordersync cluster node`, hidden) on the same PostgreSQL
// databases, behind a TCP load balancer on --port that every client dials:
// no single server process is a point of failure. See docs/production.md,
// "Several server nodes".

// maxServerNodes bounds --server-nodes: one machine's worth. Node n lays
// its ports out around --port+10n as a single server does around --port
// (cluster.StandardPorts); up to 9 nodes the blocks stay clear of each
// other and of Temporal's usual ports above (TestServerNodePortsNeverCollide).
const maxServerNodes = 9

// nodeReadyPrefix starts the line a node prints on stdout once its
// frontend accepts connections, followed by its nodeInfo as JSON.
const nodeReadyPrefix = "ordersync-node-ready "

// nodeInfo is where a node listens.
type nodeInfo struct {
	PID      int    `json:"pid"`
	Frontend string `json:"frontend"`
	History  string `json:"history"`
	Matching string `json:"matching"`
	Worker   string `json:"worker"`
	// MembershipPorts are the services' ringpop ports (frontend, history,
	// matching, worker), which the nodes gossip over.
	MembershipPorts []int  `json:"membership_ports"`
	Metrics         string `json:"metrics"`
}

// nodeOptions are the flags of `ordersync cluster node`.
type nodeOptions struct {
	postgres       string
	port           int
	clusterAddress string
	logFile        string
	maxConns       int
}

// newClusterNode returns the hidden `cluster node` command that `cluster
// --server-nodes N` starts N of.
func newClusterNode(app *cli.App) *cobra.Command {
	var o nodeOptions
	cmd := &cobra.Command{
		Use:    "node",
		Hidden: true,
		Short:  "Run one Temporal server node of `ordersync cluster --server-nodes N` (which starts it)",
		Long: `Runs the four Temporal services (frontend, history, matching, worker) as one
node of a cluster on PostgreSQL databases that ` + "`ordersync cluster`" + ` set up. The
nodes find each other through the cluster_membership table and gossip over
their membership ports. Prints one line "` + strings.TrimSpace(nodeReadyPrefix) + ` {json}" once its
frontend accepts connections, then runs until SIGTERM or SIGINT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.postgres == "" {
				return cli.Usage(errors.New("--postgres (or ORDERSYNC_CLUSTER_POSTGRES_DSN) is required"))
			}
			if o.clusterAddress == "" {
				return cli.Usage(errors.New("--cluster-address is required: the load balancer's address every node's clients dial"))
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			return runClusterNode(ctx, app, o)
		},
	}
	// The DSN holds a password: the parent passes it in the environment,
	// not on a command line every local user can read in ps.
	cmd.Flags().StringVar(&o.postgres, "postgres", os.Getenv("ORDERSYNC_CLUSTER_POSTGRES_DSN"), "PostgreSQL URL of Temporal's databases (default $ORDERSYNC_CLUSTER_POSTGRES_DSN)")
	cmd.Flags().IntVar(&o.port, "port", tserver.Pick, "frontend port; the services' ports are laid out around it (cluster.StandardPorts); -1 picks every port free")
	cmd.Flags().StringVar(&o.clusterAddress, "cluster-address", "", "the address clients reach the cluster at (the load balancer in front of the nodes' frontends)")
	cmd.Flags().StringVar(&o.logFile, "log-file", "", "the Temporal server's log file (default stderr)")
	cmd.Flags().IntVar(&o.maxConns, "max-conns", 5, "connections per service on the main database (a quarter of it on visibility)")
	return cmd
}

func runClusterNode(ctx context.Context, app *cli.App, o nodeOptions) error {
	pg, err := cluster.PostgresFromDSN(o.postgres)
	if err != nil {
		return cli.Usage(fmt.Errorf("--postgres: %w", err))
	}
	pg.MaxConns = o.maxConns
	opts := cluster.Options{Postgres: pg, FrontendPort: o.port, ClusterAddress: o.clusterAddress, LogFile: o.logFile}
	if o.port > 0 {
		// A node restarted on the same ports takes over its own
		// membership rows at once rather than waiting its old self out.
		opts.Ports = cluster.StandardPorts(o.port)
	} else {
		opts.FrontendPort = tserver.Pick
	}
	srv, err := cluster.Start(opts)
	if err != nil {
		return err
	}
	r := srv.Options()
	addr := func(port int) string { return net.JoinHostPort(r.IP, strconv.Itoa(port)) }
	info := nodeInfo{PID: os.Getpid(), Frontend: srv.FrontendAddress(), History: addr(r.Ports.History),
		Matching: addr(r.Ports.Matching), Worker: addr(r.Ports.Worker),
		MembershipPorts: []int{r.Ports.FrontendMembership, r.Ports.HistoryMembership, r.Ports.MatchingMembership, r.Ports.WorkerMembership},
		Metrics:         srv.MetricsAddress()}
	b, err := json.Marshal(info)
	if err != nil {
		_ = srv.Stop()
		return err
	}
	fmt.Fprintf(app.Out, "%s%s\n", nodeReadyPrefix, b)
	<-ctx.Done()
	return srv.Stop()
}

// serverNode is one `ordersync cluster node` child.
type serverNode struct {
	n       int
	cmd     *exec.Cmd
	info    nodeInfo
	logPath string // its stdout and stderr
	tlog    string // the Temporal server's log
	ready   chan nodeInfo
	done    chan struct{}
	exitErr error // set before done closes
}

// serverNodes are the N nodes behind their load balancer, and the Web UI
// talking to the balancer.
type serverNodes struct {
	app      *cli.App
	lb       *cluster.Balancer
	ui       *tserver.UI
	uiAddr   string
	nodes    []*serverNode
	stopping atomic.Bool
}

func (s *serverNodes) FrontendAddress() string { return s.lb.Addr() }
func (s *serverNodes) UIAddress() string       { return s.uiAddr }

// Stop stops the UI, then drains every node (SIGTERM), then the balancer.
func (s *serverNodes) Stop() error {
	s.stopping.Store(true)
	if s.ui != nil {
		s.ui.Stop()
	}
	for _, n := range s.nodes {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, n := range s.nodes {
		select {
		case <-n.done:
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	}
	return s.lb.Close()
}

// nodePort is node n's frontend port: --port+10n, or -1 (pick every port)
// when the balancer's port is picked.
func nodePort(frontendPort, n int) int {
	if frontendPort == 0 {
		return tserver.Pick
	}
	return frontendPort + 10*n
}

// nodeListenPorts are every node's fixed ports, for the check before anything
// starts; none when they are picked.
func nodeListenPorts(frontendPort, nodes int) []listenPort {
	if frontendPort == 0 {
		return nil
	}
	var ps []listenPort
	for n := 1; n <= nodes; n++ {
		port := nodePort(frontendPort, n)
		p := cluster.StandardPorts(port)
		change := fmt.Sprintf("--port (node %d's ports lie around --port+%d as a single server's do around --port; --port 0 picks every port)", n, 10*n)
		for _, q := range []struct {
			what string
			port int
		}{{"frontend", port}, {"frontend membership", p.FrontendMembership}, {"history", p.History}, {"history membership", p.HistoryMembership},
			{"matching", p.Matching}, {"matching membership", p.MatchingMembership}, {"worker", p.Worker}, {"worker membership", p.WorkerMembership}, {"metrics", p.Metrics}} {
			ps = append(ps, listenPort{fmt.Sprintf("Temporal node %d %s", n, q.what), net.JoinHostPort(tserver.DefaultIP, strconv.Itoa(q.port)), change})
		}
	}
	return ps
}

// startServerNodes starts the balancer on --port, node 1, then the other
// nodes together, then the Web UI on the balancer, and waits until every
// node is in every service's ring.
func startServerNodes(ctx context.Context, app *cli.App, o clusterOptions, dir string) (*serverNodes, error) {
	listen := net.JoinHostPort(tserver.DefaultIP, strconv.Itoa(o.frontendPort))
	lb, err := cluster.StartBalancer(listen, nil)
	if err != nil {
		return nil, portTaken(listenPort{"Temporal frontends' load balancer", listen, "--port (0 picks a free port)"}, err.Error())
	}
	s := &serverNodes{app: app, lb: lb}
	fail := func(err error) (*serverNodes, error) {
		_ = s.Stop()
		return nil, err
	}
	// Node 1 first: on new databases every starting node writes the
	// cluster metadata row, and only one write may win.
	maxConns := max(3, 10/o.serverNodes) // N nodes within Debian PostgreSQL's 100 connections
	for _, group := range [][]int{{1}, seq(2, o.serverNodes)} {
		for _, n := range group {
			node, err := s.startNode(n, nodePort(o.frontendPort, n), maxConns, o.postgres, dir)
			if err != nil {
				return fail(err)
			}
			s.nodes = append(s.nodes, node)
		}
		for _, node := range s.nodes[len(s.nodes)-len(group):] {
			if err := node.waitReady(ctx, 3*time.Minute); err != nil {
				return fail(err)
			}
		}
	}
	var frontends []string
	for _, n := range s.nodes {
		frontends = append(frontends, n.info.Frontend)
		go s.watch(ctx, n)
	}
	lb.SetFrontends(frontends)
	if o.uiPort > 0 {
		if s.ui, err = tserver.StartUI(tserver.DefaultIP, o.uiPort, lb.Addr(), app.Process.TemporalNamespace); err != nil {
			return fail(portTaken(listenPort{"Temporal Web UI", net.JoinHostPort(tserver.DefaultIP, strconv.Itoa(o.uiPort)), "--ui-port (0: no Web UI)"}, err.Error()))
		}
		s.uiAddr = "http://" + net.JoinHostPort(tserver.DefaultIP, strconv.Itoa(o.uiPort))
	}
	if err := s.waitRing(ctx, 2*time.Minute); err != nil {
		return fail(err)
	}
	return s, nil
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// startNode starts node n; its stdout's ready line is read, the rest of
// its output goes to its log.
func (s *serverNodes) startNode(n, port, maxConns int, postgres, dir string) (*serverNode, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the ordersync binary: %w", err)
	}
	node := &serverNode{n: n, logPath: filepath.Join(dir, fmt.Sprintf("node-%d.log", n)),
		tlog: filepath.Join(dir, fmt.Sprintf("temporal-node-%d.log", n)), ready: make(chan nodeInfo, 1), done: make(chan struct{})}
	logFile, err := os.OpenFile(node.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", node.logPath, err)
	}
	node.cmd = exec.Command(self, "cluster", "node", "--port", strconv.Itoa(port), "--cluster-address", s.lb.Addr(),
		"--log-file", node.tlog, "--max-conns", strconv.Itoa(maxConns))
	node.cmd.Env = append(os.Environ(), "ORDERSYNC_CLUSTER_POSTGRES_DSN="+postgres)
	node.cmd.Stderr = logFile
	setNodeProcAttr(node.cmd) // stopped by this process only, and with it
	stdout, err := node.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := node.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start Temporal node %d: %w", n, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, nodeReadyPrefix); ok {
				var info nodeInfo
				if json.Unmarshal([]byte(rest), &info) == nil {
					node.ready <- info
					continue
				}
			}
			fmt.Fprintln(logFile, line)
		}
		node.exitErr = node.cmd.Wait()
		logFile.Close()
		close(node.done)
	}()
	return node, nil
}

// waitReady waits for the node's ready line.
func (n *serverNode) waitReady(ctx context.Context, timeout time.Duration) error {
	select {
	case n.info = <-n.ready:
		return nil
	case <-n.done:
		return fmt.Errorf("the Temporal node %d exited before it was ready (%v):\n%s", n.n, n.exitErr, tailOf(n.logPath, 2000))
	case <-time.After(timeout):
		return fmt.Errorf("the Temporal node %d was not ready within %s; log %s, server log %s", n.n, timeout, n.logPath, n.tlog)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch says when a node exits while the cluster runs: the others carry
// on (they take its shards and task queues), and nobody restarts it here,
// as a supervisor (systemd, Kubernetes) would in a deployment.
func (s *serverNodes) watch(ctx context.Context, n *serverNode) {
	<-n.done
	if s.stopping.Load() || ctx.Err() != nil {
		return
	}
	alive := 0
	for _, o := range s.nodes {
		select {
		case <-o.done:
		default:
			alive++
		}
	}
	fmt.Fprintf(s.app.Out, "Temporal node %d (pid %d) exited (%v); %d node(s) carry on; log %s\n", n.n, n.info.PID, n.exitErr, alive, n.logPath)
}

// waitRing waits until every node is in every service's ring, as the
// frontends behind the balancer see it.
func (s *serverNodes) waitRing(ctx context.Context, timeout time.Duration) error {
	admin, err := cluster.DialAdmin(s.lb.Addr())
	if err != nil {
		return err
	}
	defer admin.Close()
	deadline := time.Now().Add(timeout)
	var rings map[string][]string
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rings, err = admin.Rings(cctx)
		cancel()
		if err == nil && ringsFull(rings, len(s.nodes)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d Temporal nodes did not all join every ring within %s: rings %v, last error %v", len(s.nodes), timeout, rings, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func ringsFull(rings map[string][]string, n int) bool {
	for _, role := range []string{"frontend", "history", "matching", "worker"} {
		if len(rings[role]) != n {
			return false
		}
	}
	return true
}

// print lists the nodes and which history shards each owns.
func (s *serverNodes) print(ctx context.Context) {
	shards := map[string][]int32{}
	if admin, err := cluster.DialAdmin(s.lb.Addr()); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if owners, err := admin.ShardOwners(cctx, cluster.DefaultHistoryShards); err == nil {
			for id, owner := range owners {
				shards[owner] = append(shards[owner], id)
			}
		}
		cancel()
		admin.Close()
	}
	for _, n := range s.nodes {
		owned := shards[n.info.History]
		sort.Slice(owned, func(i, j int) bool { return owned[i] < owned[j] })
		fmt.Fprintf(s.app.Out, "Temporal node %d:   pid %d, frontend %s, history %s (shards %v), membership ports %v, metrics %s, log %s\n",
			n.n, n.info.PID, n.info.Frontend, n.info.History, owned, n.info.MembershipPorts, n.info.Metrics, n.tlog)
	}
}

// tailOf is the end of a log file, for an error.
func tailOf(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
