package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"text/template"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// tokenEnv holds the simulator shops' bearer token; every shop of a run
// shares it, and the platforms file refers to it (never the secret itself).
const tokenEnv = "ORDERSYNC_BENCH_SHOP_TOKEN"

const shopToken = "bench-shop-token"

// platformSettings are the per-platform settings a case runs with; they end
// up in a platforms file, exactly as an operator would write them.
type platformSettings struct {
	Start       time.Time `json:"start"`
	Interval    string    `json:"interval"`
	Overlap     string    `json:"overlap"`
	Settle      string    `json:"settle"`
	Timeout     string    `json:"timeout"`
	Concurrency int       `json:"concurrency"`
	RPS         float64   `json:"rate_limit_rps"`
	Burst       int       `json:"rate_limit_burst"`
	PageSize    int       `json:"page_size"`
	MaxPages    int       `json:"max_pages"`
	// BackfillMaxSpan is the platforms' backfill_max_span ("": the default).
	BackfillMaxSpan string `json:"backfill_max_span,omitempty"`
	// SharedQueue puts every platform on one task queue (quiet platforms
	// share one, as the design suggests); empty: one queue per platform.
	SharedQueue string `json:"shared_task_queue,omitempty"`
}

var platformsTemplate = template.Must(template.New("platforms").Parse(`default:
  kind: sim
  credentials: {env: ` + tokenEnv + `}
  start: "{{.S.Start.Format "2006-01-02T15:04:05Z07:00"}}"
  interval: {{.S.Interval}}
  overlap: {{.S.Overlap}}
  settle: {{.S.Settle}}
  timeout: {{.S.Timeout}}
  retries: 10
  retry_interval: 200ms
  retry_backoff: 2
  max_retry_interval: 5s
  concurrency: {{.S.Concurrency}}
  rate_limit: {rps: {{.S.RPS}}, burst: {{.S.Burst}}}
  page_size: {{.S.PageSize}}
  max_pages: {{.S.MaxPages}}
{{- if .S.BackfillMaxSpan}}
  backfill_max_span: {{.S.BackfillMaxSpan}}
{{- end}}
{{- if .S.SharedQueue}}
  task_queue: {{.S.SharedQueue}}
{{- end}}
platforms:
{{- range .Shops}}
  {{.}}:
    endpoint: "{{$.URL}}/shops/{{.}}"
{{- end}}
`))

// platformsYAML renders the platforms file for the shops (platform name =
// shop name) of a simulator listening at url.
func platformsYAML(s platformSettings, url string, shops []string) ([]byte, error) {
	var b bytes.Buffer
	err := platformsTemplate.Execute(&b, struct {
		S     platformSettings
		URL   string
		Shops []string
	}{s, url, shops})
	return b.Bytes(), err
}

// shops names n simulator shops.
func shops(n int) []sim.ShopConfig {
	out := make([]sim.ShopConfig, n)
	for i := range out {
		out[i] = sim.ShopConfig{Name: fmt.Sprintf("shop-%04d", i), Token: shopToken}
	}
	return out
}

func shopNames(cfg sim.Config) []string {
	names := make([]string, len(cfg.Shops))
	for i, s := range cfg.Shops {
		names[i] = s.Name
	}
	return names
}

// system is one case's running ordersync: an embedded Temporal server, the
// simulator, a SQLite store and a worker (in this process or a child); or,
// with systemOptions.postgres, the production-shaped stack (pgstack.go).
type system struct {
	dir       string
	srv       *devserver.Server
	namespace string
	client    client.Client
	sim       *sim.Simulator
	simSrv    *sim.Server
	file      *config.File
	fileRaw   []byte
	store     store.Store
	storeURL  string
	workers   *worker.Workers
	// child is the first worker process; children all of them.
	child     *exec.Cmd
	children  []*exec.Cmd
	childLogs []*os.File
	// pg is the PostgreSQL stack's server process and databases.
	pg *pgStack
	// metricsURLs are every worker's /metrics, processes and in-process
	// alike; metricsServers serve the in-process worker's.
	metricsURLs    []string
	metricsServers []*metrics.Server
	// registryOnly: the worker processes get no platforms file (B13).
	registryOnly bool
	// queryErrors counts status queries that failed (and were retried).
	queryErrors    int
	lastQueryError string
}

type systemOptions struct {
	sim       sim.Config
	settings  platformSettings
	serverDB  string // "file" (like `ordersync dev`) or "memory"
	childBin  string // run the worker as `childBin worker`; empty: in this process
	wrapStore func(store.Store) activities.OrderStore
	// extraYAML is appended to the platforms file (B8's destinations
	// block); the in-process worker then delivers to them too.
	extraYAML string
	// postgres, when set, runs the production-shaped stack instead of the
	// embedded server and SQLite (needs childBin).
	postgres *pgStackOptions
	// platformsFile, when set, writes the whole platforms file for the
	// simulator at url instead of the sim-kind template (B11's Shopify
	// accounts); extraYAML is still appended.
	platformsFile func(url string) ([]byte, error)
	// registryOnly starts the worker processes without a platforms file,
	// in a directory that holds none, so they serve the account registry
	// alone, as a fleet's workers do (B13); the file is then the bench's
	// template only.
	registryOnly bool
}

func startSystem(ctx context.Context, dir string, o systemOptions) (*system, error) {
	s := &system{dir: dir, registryOnly: o.registryOnly}
	ok := false
	defer func() {
		if !ok {
			s.stop()
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	os.Setenv(tokenEnv, shopToken)
	var err error
	if s.sim, err = sim.New(o.sim); err != nil {
		return nil, err
	}
	if s.simSrv, err = s.sim.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	if o.postgres != nil {
		if err := s.startPostgresStack(ctx, o); err != nil {
			return nil, err
		}
		ok = true
		return s, nil
	}
	s.storeURL = "sqlite://" + filepath.Join(dir, "orders.db")
	if o.serverDB == "none" { // the direct loop: simulator and store only
		if err := s.startStore(ctx, o); err != nil {
			return nil, err
		}
		ok = true
		return s, nil
	}
	dbPath := ""
	if o.serverDB != "memory" {
		dbPath = filepath.Join(dir, "temporal.db")
	}
	if s.srv, err = devserver.Start(devserver.Options{
		DatabasePath: dbPath, FrontendPort: -1, UIPort: 0,
		LogFile: filepath.Join(dir, "temporal.log"), LogLevel: "error",
	}); err != nil {
		return nil, err
	}
	s.namespace = s.srv.Namespace()
	if s.client, err = client.Dial(client.Options{HostPort: s.srv.FrontendAddress(), Namespace: s.namespace, Logger: quietLogger{}}); err != nil {
		return nil, err
	}
	if err := s.startStore(ctx, o); err != nil {
		return nil, err
	}
	if o.childBin != "" {
		if err := s.startChild(o.childBin, s.srv.FrontendAddress(), "worker.log"); err != nil {
			return nil, err
		}
	} else {
		var st activities.OrderStore = s.store
		if o.wrapStore != nil {
			st = o.wrapStore(s.store)
		}
		rec, err := s.inProcessMetrics()
		if err != nil {
			return nil, err
		}
		if s.workers, err = worker.Start(worker.Options{Client: s.client, Store: st, Platforms: s.file.Platforms,
			Feed: s.store, Destinations: s.file.Destinations, Metrics: rec,
			StopTimeout: 5 * time.Second, Alerter: activities.LogAlerter{Logger: discardLogger()}, Logger: discardLogger()}); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

func (s *system) platformsPath() string { return filepath.Join(s.dir, "platforms.yaml") }
func (s *system) storeDSN() string      { return s.storeURL }

// startStore writes the platforms file and opens the store.
func (s *system) startStore(ctx context.Context, o systemOptions) error {
	var err error
	if o.platformsFile != nil {
		s.fileRaw, err = o.platformsFile(s.simSrv.URL)
	} else {
		s.fileRaw, err = platformsYAML(o.settings, s.simSrv.URL, shopNames(o.sim))
	}
	if err != nil {
		return err
	}
	s.fileRaw = append(s.fileRaw, o.extraYAML...)
	if s.file, err = config.Parse(s.fileRaw); err != nil {
		return fmt.Errorf("bench platforms file: %w", err)
	}
	if err := os.WriteFile(s.platformsPath(), s.fileRaw, 0o644); err != nil {
		return err
	}
	s.store, err = store.Open(ctx, s.storeDSN())
	return err
}

// startChild runs one more `ordersync worker` against this system's server
// and store, logging to logName in the case's directory, with its metrics
// (and so its status poller) on, each process on its own port.
func (s *system) startChild(bin, address, logName string) error {
	metricsAddr, err := freeAddress()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(s.dir, logName))
	if err != nil {
		return err
	}
	s.childLogs = append(s.childLogs, logf)
	cmd := exec.Command(bin, "worker", "--stop-timeout", "5s")
	cmd.Env = append(os.Environ(),
		"ORDERSYNC_TEMPORAL_ADDRESS="+address,
		"ORDERSYNC_TEMPORAL_NAMESPACE="+s.namespace,
		"ORDERSYNC_STORE_DSN="+s.storeDSN(),
		"ORDERSYNC_METRICS_ADDRESS="+metricsAddr,
		"ORDERSYNC_LOG_LEVEL=warn",
	)
	if s.registryOnly {
		// The default platforms.yaml is looked for in the working directory;
		// a relative binary path would be too.
		if abs, err := filepath.Abs(bin); err == nil {
			cmd.Path = abs
		}
		cmd.Dir = filepath.Join(s.dir, "registry-worker")
		if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
			return err
		}
	} else {
		cmd.Env = append(cmd.Env, "ORDERSYNC_PLATFORMS_FILE="+s.platformsPath())
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker process %s: %w", bin, err)
	}
	if s.child == nil {
		s.child = cmd
	}
	s.children = append(s.children, cmd)
	url := "http://" + metricsAddr + "/metrics"
	s.metricsURLs = append(s.metricsURLs, url)
	return waitMetrics(url, logf.Name(), time.Minute)
}

func (s *system) startCursors(ctx context.Context) error {
	// Start cursors a few at a time: a thousand sequential starts take long.
	g := newGroup(8)
	now := time.Now()
	for _, p := range s.file.Platforms {
		g.Go(func() error {
			_, err := starter.EnsureCursor(ctx, s.client, p, now)
			return err
		})
	}
	return g.Wait()
}

func (s *system) status(ctx context.Context, platform string) (api.CursorStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := s.client.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
	if err != nil {
		return api.CursorStatus{}, err
	}
	var st api.CursorStatus
	return st, v.Get(&st)
}

// statuses queries every cursor, a few at a time.
func (s *system) statuses(ctx context.Context, platforms []string) (map[string]api.CursorStatus, error) {
	var mu sync.Mutex
	out := make(map[string]api.CursorStatus, len(platforms))
	g := newGroup(8)
	for _, p := range platforms {
		g.Go(func() error {
			st, err := s.status(ctx, p)
			if err != nil {
				return fmt.Errorf("status of %s: %w", p, err)
			}
			mu.Lock()
			out[p] = st
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// waitWatermarks polls until every platform's watermark reaches t.
func (s *system) waitWatermarks(ctx context.Context, t time.Time, timeout time.Duration) (map[string]api.CursorStatus, error) {
	return s.waitWatermarksEvery(ctx, t, timeout, 500*time.Millisecond)
}

// watchBatch is how many cursors one step of a pass asks at once.
const watchBatch = 8

// waitWatermarksEvery is waitWatermarks that pauses `pause` between passes.
// Every status query is a workflow task on the worker and a round trip
// through the server, which the benchmark would otherwise charge to
// ordersync, so a pass asks as few cursors as it can: the pending ones in
// order, a batch at a time, and it ends at the first batch that holds a
// cursor not there yet (the pass after starts with it). A cursor that got
// there is asked no more. The last cursor to arrive is still seen within
// one pause, but a backfill's ten cursors cost a query or two a pass
// rather than ten, and a fleet's thousand are not asked back to back.
func (s *system) waitWatermarksEvery(ctx context.Context, t time.Time, timeout, pause time.Duration) (map[string]api.CursorStatus, error) {
	deadline := time.Now().Add(timeout)
	pending := s.file.Names()
	done := map[string]api.CursorStatus{}
	last := map[string]api.CursorStatus{} // the latest answer of a cursor not there yet
	for {
		for len(pending) > 0 {
			batch := pending[:min(watchBatch, len(pending))]
			sts, err := s.statuses(ctx, batch)
			if err != nil && ctx.Err() != nil {
				return done, err
			}
			if err != nil {
				s.queryErrors++
				s.lastQueryError = err.Error()
			}
			var still []string
			for _, p := range batch {
				if st, ok := sts[p]; !ok || st.Watermark.Before(t) {
					still = append(still, p)
					if ok {
						last[p] = st
					}
				} else {
					done[p] = st
				}
			}
			pending = append(still, pending[len(batch):]...)
			if len(still) > 0 {
				break
			}
		}
		if len(pending) == 0 {
			return done, nil
		}
		if time.Now().After(deadline) {
			where := "its status query failed"
			if st, ok := last[pending[0]]; ok {
				where = "at " + st.Watermark.Format(time.RFC3339)
			}
			return done, fmt.Errorf("%d platforms did not reach watermark %s within %s (e.g. %s, %s)",
				len(pending), t.Format(time.RFC3339), timeout, pending[0], where)
		}
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(pause):
		}
	}
}

func (s *system) stop() {
	if s.workers != nil {
		s.workers.Stop()
	}
	for _, srv := range s.metricsServers {
		_ = srv.Close()
	}
	// Every worker drains at once (SIGTERM), before the server goes.
	var wg sync.WaitGroup
	for _, child := range s.children {
		if child.Process == nil {
			continue
		}
		_ = child.Process.Signal(syscall.SIGTERM)
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() { _ = child.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = child.Process.Kill()
				<-done
			}
		}()
	}
	wg.Wait()
	for _, f := range s.childLogs {
		f.Close()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.srv != nil {
		_ = s.srv.Stop()
	}
	if s.pg != nil {
		if s.store != nil {
			_ = s.store.Close() // before its database is dropped
			s.store = nil
		}
		s.pg.stop()
	}
	if s.simSrv != nil {
		_ = s.simSrv.Close()
	}
	if s.store != nil {
		_ = s.store.Close()
	}
}
