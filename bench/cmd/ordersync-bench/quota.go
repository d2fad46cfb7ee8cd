package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// quotaResult is B6: one Amazon-shaped platform at its documented quota
// with a backlog far longer than the measurement, twice: at the real quota
// over a fixed window (few requests, the real waits: every slot is booked
// further ahead than an attempt may wait), and at the same quota sped up
// (a precise ratio over many requests).
type quotaResult struct {
	Real   *quotaRun `json:"real_quota,omitempty"`
	Scaled *quotaRun `json:"time_scaled,omitempty"`
	Note   string    `json:"note,omitempty"`
}

// quotaRun is one B6 run.
type quotaRun struct {
	Label string `json:"label"`
	// RPS and Burst are the quota of this run, at the simulator and in the
	// platforms file; TimeScale is RPS over the documented 0.0167.
	RPS       float64 `json:"rps"`
	Burst     int     `json:"burst"`
	TimeScale float64 `json:"time_scale"`
	Orders    int     `json:"backlog_orders"`
	// BacklogPages is the backlog in pages of page_size (kind default 100).
	BacklogPages int    `json:"backlog_pages"`
	Platforms    string `json:"platforms_file"`
	Worker       string `json:"worker"`
	// WindowSeconds runs from the first accepted request.
	WindowSeconds float64 `json:"window_seconds"`
	// Accepted requests from the first to the last accepted one in the
	// window; PostBurst those beyond the burst; SpanSeconds the time
	// between the first and the last. Ratio = PostBurst / (SpanSeconds x
	// RPS): a client that takes every slot the bucket refills scores 1.
	Accepted    int     `json:"accepted_requests"`
	PostBurst   int     `json:"post_burst_requests"`
	SpanSeconds float64 `json:"first_to_last_seconds"`
	Ratio       float64 `json:"ratio"`
	// MeanGapSeconds is the mean time between accepted requests after the
	// burst (1/RPS for a client at the quota), MaxGapSeconds the longest.
	MeanGapSeconds float64 `json:"post_burst_mean_gap_seconds"`
	MaxGapSeconds  float64 `json:"post_burst_max_gap_seconds"`
	RateLimited    int     `json:"rate_limited_429"`
	// From the worker's /metrics: failed FetchPage attempts by class, pages
	// stored, requests sent.
	APIErrors map[string]float64 `json:"api_errors_by_class"`
	Pages     float64            `json:"pages_stored"`
	Requests  float64            `json:"requests_sent"`
	// From the histories of every workflow of the run: activity attempts
	// beyond the first (retries), activity tasks and local attempts that
	// ended because no request slot was free (RequestSlotWait: ordersync
	// counts them as waits, not attempts), other failed attempts, timers.
	Retries          int            `json:"activity_retries"`
	SlotWaitTasks    int            `json:"slot_wait_activity_tasks"`
	SlotWaitLocal    int            `json:"slot_wait_local_attempts"`
	OtherFailures    map[string]int `json:"other_failed_attempts,omitempty"`
	Timers           int            `json:"timers"`
	Workflows        int            `json:"workflows"`
	WorkflowTasks    int            `json:"workflow_tasks"`
	WFTMaxSeconds    float64        `json:"workflow_task_max_seconds"`
	WFTP99Seconds    float64        `json:"workflow_task_p99_seconds"`
	WFTOverOneSecond int            `json:"workflow_tasks_over_1s"`
	// From the cursor's status.
	SlicesCompleted int64 `json:"slices_completed"`
	SlicesFailed    int64 `json:"slices_failed"`
	BreakerOpen     bool  `json:"breaker_open"`
	// CPU seconds of the child processes over the run: what running B6 in
	// the background took from the other cases.
	ServerCPUSeconds float64 `json:"server_process_cpu_seconds"`
	WorkerCPUSeconds float64 `json:"worker_process_cpu_seconds"`
	// AcceptedAt are the accepted requests' times after the first, seconds.
	AcceptedAt []float64 `json:"accepted_at_seconds"`
	Note       string    `json:"note,omitempty"`
}

// amazonGetOrdersRPS is Amazon's documented getOrders usage plan.
const (
	amazonGetOrdersRPS   = 0.0167
	amazonGetOrdersBurst = 20
)

// met says whether a run meets issue 18's B6 targets.
func (r *quotaRun) met() bool {
	return r != nil && r.Note == "" && r.PostBurst > 0 && r.Ratio >= 0.97 && r.RateLimited == 0 &&
		sumValues(r.APIErrors) == 0 && r.Retries == 0 && len(r.OtherFailures) == 0 && r.SlicesFailed == 0 &&
		!r.BreakerOpen && r.WFTOverOneSecond == 0
}

func sumValues(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}

var quotaPlatformsTemplate = template.Must(template.New("quota").Parse(`# B6: kind amazon with its defaults (page size 100, interval 1h, settle 3m,
# retries, timeout) except the documented getOrders quota, scaled by {{.Scale}},
# and concurrency 4.
platforms:
  {{.Shop}}:
    kind: amazon
    endpoint: "{{.URL}}/shops/{{.Shop}}/amazon"
    credentials: {file: "{{.Secret}}"}
    start: "{{.Start}}"
    concurrency: 4
    rate_limit: {rps: {{.RPS}}, burst: {{.Burst}}}
    options:
      marketplace_ids: [{{.Marketplaces}}]
      token_url: "{{.URL}}/shops/{{.Shop}}/amazon/auth/o2/token"
`))

// requestLog records when the simulator answered each Amazon order search,
// and how.
type requestLog struct {
	mu   sync.Mutex
	at   []time.Time
	code []int
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/orders/2026-01-01/orders") {
			h.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.at = append(l.at, time.Now())
		l.code = append(l.code, rec.code)
		l.mu.Unlock()
	})
}

// firstAccepted is when the first request was accepted (zero: none yet).
func (l *requestLog) firstAccepted() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.code {
		if c == http.StatusOK {
			return l.at[i]
		}
	}
	return time.Time{}
}

// summarize fills r's request numbers from the requests up to end.
func (l *requestLog) summarize(r *quotaRun, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ok []time.Time
	for i, c := range l.code {
		if c == http.StatusTooManyRequests {
			r.RateLimited++
		}
		if c == http.StatusOK && !l.at[i].After(end) {
			ok = append(ok, l.at[i])
		}
	}
	r.Accepted = len(ok)
	if len(ok) == 0 {
		return
	}
	for _, t := range ok {
		r.AcceptedAt = append(r.AcceptedAt, float64(t.Sub(ok[0]).Milliseconds())/1000)
	}
	r.WindowSeconds = end.Sub(ok[0]).Seconds()
	r.SpanSeconds = ok[len(ok)-1].Sub(ok[0]).Seconds()
	r.PostBurst = max(0, len(ok)-r.Burst)
	if r.SpanSeconds > 0 {
		r.Ratio = float64(r.PostBurst) / (r.SpanSeconds * r.RPS)
	}
	if r.PostBurst > 0 {
		// The gaps after the burst: from the last burst request on.
		tail := ok[r.Burst-1:]
		for i := 1; i < len(tail); i++ {
			r.MaxGapSeconds = max(r.MaxGapSeconds, tail[i].Sub(tail[i-1]).Seconds())
		}
		r.MeanGapSeconds = tail[len(tail)-1].Sub(tail[0]).Seconds() / float64(len(tail)-1)
	}
}

// runQuota runs one B6 run: the simulator in this process (it answers a
// request a minute at the real quota), the Temporal server and the worker
// as child processes (`ordersync dev --server-only`, `ordersync worker`),
// so a run in the background while other cases measure this process's CPU
// adds nothing to it.
func runQuota(ctx context.Context, env *benchEnv, p *params, label string, scale float64, window time.Duration) (quotaRun, error) {
	res := quotaRun{Label: label, RPS: amazonGetOrdersRPS * scale, Burst: amazonGetOrdersBurst, TimeScale: scale,
		Orders: p.B6Orders, BacklogPages: (p.B6Orders + 99) / 100, Worker: "ordersync worker process",
		APIErrors: map[string]float64{}}
	if env.workerBin == "" {
		return res, errors.New("B6 runs the server and the worker as child processes: it needs -ordersync")
	}
	dir := env.caseDir("b6-" + label)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	interval := time.Hour // kind amazon's default
	bp := backfillParams{Shops: 1, OrdersPerShop: p.B6Orders, History: p.B6History, UpdateSpread: "1m", MaxUpdates: 0}
	simCfg, from, _ := backfillWorld(bp, interval)
	simCfg.RateLimit = sim.RateLimit{RPS: res.RPS, Burst: res.Burst}
	simulator, err := sim.New(simCfg)
	if err != nil {
		return res, err
	}
	shop := simCfg.Shops[0].Name
	reqs := &requestLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	simHTTP := &http.Server{Handler: reqs.wrap(simulator.Handler()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = simHTTP.Serve(ln) }()
	defer simHTTP.Close()
	simURL := "http://" + ln.Addr().String()

	secret := filepath.Join(dir, "amazon-secret.json")
	if err := os.WriteFile(secret, []byte(`{"client_id":"amzn1.application-oa2-client.bench","client_secret":"bench","refresh_token":"`+shopToken+`"}`), 0o600); err != nil {
		return res, err
	}
	var yaml strings.Builder
	if err := quotaPlatformsTemplate.Execute(&yaml, map[string]any{
		"Scale": scale, "Shop": shop, "URL": simURL, "Secret": secret, "Start": from.Format(time.RFC3339),
		"RPS": strconv.FormatFloat(res.RPS, 'f', -1, 64), "Burst": res.Burst,
		"Marketplaces": strings.Join(sim.AmazonMarketplaceIDs, ", "),
	}); err != nil {
		return res, err
	}
	res.Platforms = yaml.String()
	file, err := config.Parse([]byte(res.Platforms))
	if err != nil {
		return res, fmt.Errorf("B6 platforms file: %w", err)
	}
	platformsPath := filepath.Join(dir, "platforms.yaml")
	if err := os.WriteFile(platformsPath, []byte(res.Platforms), 0o644); err != nil {
		return res, err
	}
	storeDSN := "sqlite://" + filepath.Join(dir, "orders.db")
	st, err := store.Open(ctx, storeDSN)
	if err != nil {
		return res, err
	}
	defer st.Close()

	srv, err := startServerProcess(ctx, env.workerBin, dir)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	c, err := client.Dial(client.Options{HostPort: srv.address, Namespace: srv.namespace, Logger: quietLogger{}})
	if err != nil {
		return res, err
	}
	defer c.Close()
	metricsAddr, err := freeAddress()
	if err != nil {
		return res, err
	}
	worker, err := startWorkerProcess(env.workerBin, dir, srv.address, srv.namespace, storeDSN, platformsPath, metricsAddr)
	if err != nil {
		return res, err
	}
	defer worker.stop()

	platform := file.Platforms[0]
	if _, err := starter.EnsureCursor(ctx, c, platform, time.Now()); err != nil {
		return res, err
	}
	env.logf("B6 %s: %s at %g requests/s (burst %d), %d orders of backlog; measuring %s from the first request",
		label, shop, res.RPS, res.Burst, p.B6Orders, window)
	var first time.Time
	for first = reqs.firstAccepted(); first.IsZero(); first = reqs.firstAccepted() {
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return res, err
		}
		if time.Since(srv.started) > 2*time.Minute {
			return res, errors.New("no request reached the simulator within 2 minutes")
		}
	}
	end := first.Add(window)
	if err := sleep(ctx, time.Until(end)); err != nil {
		return res, err
	}
	reqs.summarize(&res, end)
	if left := res.BacklogPages - res.Accepted; left <= 0 {
		res.Note = "the backlog ran out within the window: make -b6-orders larger"
	}
	if err := scrapeMetrics(ctx, "http://"+metricsAddr+"/metrics", &res); err != nil {
		res.Note = joinNote(res.Note, "metrics: "+err.Error())
	}
	if v, err := c.QueryWorkflow(ctx, api.CursorWorkflowID(platform.Name), "", api.QueryStatus); err != nil {
		res.Note = joinNote(res.Note, "status: "+err.Error())
	} else {
		var cs api.CursorStatus
		if err := v.Get(&cs); err == nil {
			res.SlicesCompleted, res.SlicesFailed, res.BreakerOpen = cs.Counts.SlicesCompleted, cs.Counts.SlicesFailed, cs.BreakerOpen
		}
	}
	h, err := scanHistories(ctx, c, srv.namespace)
	if err != nil {
		res.Note = joinNote(res.Note, "histories: "+err.Error())
	}
	res.Retries, res.SlotWaitTasks, res.SlotWaitLocal, res.OtherFailures, res.Timers = h.retries, h.slotWaitTasks, h.slotWaitLocal, h.otherFailures, h.timers
	res.Workflows, res.WorkflowTasks, res.WFTMaxSeconds, res.WFTOverOneSecond = h.workflows, len(h.wft), h.wftMax(), h.wftOver(time.Second)
	res.WFTP99Seconds = h.wftQuantile(0.99)
	res.ServerCPUSeconds, res.WorkerCPUSeconds = procCPU(srv.cmd.Process.Pid), procCPU(worker.cmd.Process.Pid)
	return res, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// scrapeMetrics reads the worker's ordersync_* counters.
func scrapeMetrics(ctx context.Context, url string, r *quotaRun) error {
	return scrapeSeries(ctx, url, func(name, labels string, v float64) {
		switch name {
		case "ordersync_api_errors_total":
			r.APIErrors[labelValue(labels, "class")] += v
		case "ordersync_pages_total":
			r.Pages += v
		case "ordersync_requests_total":
			r.Requests += v
		}
	})
}

func labelValue(labels, key string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// childProcess is a process this benchmark started and stops.
type childProcess struct {
	cmd       *exec.Cmd
	log       *os.File
	address   string
	namespace string
	started   time.Time
}

func (c *childProcess) stop() {
	if c == nil || c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	if c.log != nil {
		c.log.Close()
	}
}

// startServerProcess runs `ordersync dev --server-only` on a free port and
// waits for it to say where its frontend listens.
func startServerProcess(ctx context.Context, bin, dir string) (*childProcess, error) {
	addr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"dev", "--server-only", "--port", port, "--ui-port", "0", "--db", filepath.Join(dir, "temporal.db")}
	env := []string{"ORDERSYNC_DATA_DIR=" + dir, "ORDERSYNC_TEMPORAL_NAMESPACE=default", "ORDERSYNC_LOG_LEVEL=warn"}
	return startServerChild(ctx, bin, dir, args, env, "default", "Temporal frontend: ", 90*time.Second)
}

// startServerChild runs `bin args...` (a command that starts a Temporal
// server and prints "Temporal frontend: <address> ...") and waits until it
// prints a line starting with ready.
func startServerChild(ctx context.Context, bin, dir string, args, env []string, namespace, ready string, timeout time.Duration) (*childProcess, error) {
	logf, err := os.Create(filepath.Join(dir, "server.out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	what := bin + " " + strings.Join(args[:min(2, len(args))], " ")
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	c := &childProcess{cmd: cmd, log: logf, namespace: namespace, started: time.Now()}
	found, gone := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(out)
		sent, address := false, ""
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if a, ok := strings.CutPrefix(sc.Text(), "Temporal frontend: "); ok && address == "" {
				address = strings.Fields(a)[0]
			}
			if strings.HasPrefix(sc.Text(), ready) && address != "" && !sent {
				found <- address
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case c.address = <-found:
		return c, nil
	case <-gone:
		select {
		case c.address = <-found:
			return c, nil
		default:
		}
		c.stop()
		return nil, fmt.Errorf("%s ended before it was ready (see %s)", what, logf.Name())
	case <-time.After(timeout):
		c.stop()
		return nil, fmt.Errorf("%s was not ready within %s (see %s)", what, timeout, logf.Name())
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
}

// startWorkerProcess runs `ordersync worker` with its metrics on metricsAddr.
func startWorkerProcess(bin, dir, address, namespace, storeDSN, platformsPath, metricsAddr string) (*childProcess, error) {
	logf, err := os.Create(filepath.Join(dir, "worker.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "worker", "--stop-timeout", "5s")
	cmd.Env = append(os.Environ(),
		"ORDERSYNC_TEMPORAL_ADDRESS="+address,
		"ORDERSYNC_TEMPORAL_NAMESPACE="+namespace,
		"ORDERSYNC_STORE_DSN="+storeDSN,
		"ORDERSYNC_PLATFORMS_FILE="+platformsPath,
		"ORDERSYNC_METRICS_ADDRESS="+metricsAddr,
		"ORDERSYNC_LOG_LEVEL=warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start worker process %s: %w", bin, err)
	}
	return &childProcess{cmd: cmd, log: logf, started: time.Now()}, nil
}

// runInBackground starts run at once and returns a function that waits for
// its result.
func runInBackground(run func() (quotaRun, error)) func() (*quotaRun, error) {
	type out struct {
		r   quotaRun
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := run()
		ch <- out{r, err}
	}()
	return func() (*quotaRun, error) {
		o := <-ch
		return &o.r, o.err
	}
}

func printQuota(w io.Writer, b *quotaResult) {
	if b == nil {
		return
	}
	for _, r := range []*quotaRun{b.Real, b.Scaled} {
		if r == nil {
			continue
		}
		setting := fmt.Sprintf("kind amazon, quota %g req/s (burst %d, %s: x%g), %d-page backlog, concurrency 4, %s",
			r.RPS, r.Burst, r.Label, r.TimeScale, r.BacklogPages, r.Worker)
		result := fmt.Sprintf("%d requests after the burst in %.0fs: %.3f x quota (mean gap %.1fs, max %.1fs); %d x 429; %.0f failed attempts %v, %d retries, %d slices failed; %d slot waits (%d local, %d activity tasks, counted as waits); workflow tasks: %d, max %.2fs, p99 %.2fs, %d over 1s",
			r.PostBurst, r.SpanSeconds, r.Ratio, r.MeanGapSeconds, r.MaxGapSeconds, r.RateLimited,
			sumValues(r.APIErrors), r.APIErrors, r.Retries, r.SlicesFailed, r.SlotWaitLocal+r.SlotWaitTasks, r.SlotWaitLocal, r.SlotWaitTasks,
			r.WorkflowTasks, r.WFTMaxSeconds, r.WFTP99Seconds, r.WFTOverOneSecond)
		if len(r.OtherFailures) > 0 {
			result += fmt.Sprintf("; other failures %v", r.OtherFailures)
		}
		result += fmt.Sprintf("; its server and worker processes used %.0fs and %.0fs of CPU", r.ServerCPUSeconds, r.WorkerCPUSeconds)
		result += note(r.Note)
		fmt.Fprintf(w, "B6 quota (%s)\t%s\t%s\t>= 0.97 x quota after the burst, 0 429s, no failed attempt, no workflow task > 1s\t%s\n",
			r.Label, setting, result, yes(r.met()))
	}
	if b.Note != "" {
		fmt.Fprintf(w, "B6 quota\t\t[%s]\t\t\n", b.Note)
	}
}
