package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/dynamicconfig"

	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/fairness"
)

// B9 fairness: one huge account and many small ones on ONE task queue,
// served by a worker with few activity slots. The huge account queues its
// tasks first; the small ones queue theirs once the huge backlog is in the
// queue. Each run says how long the small accounts took to finish, with
// fairness keys (internal/fairness, what ordersync sends) and without,
// and on servers configured otherwise (fairness off; 4 partitions, the
// server's default and the PostgreSQL stack's).

// fairnessParams are B9's knobs (-cases b9).
type fairnessParams struct {
	Huge       int           `json:"huge_tasks"`
	HugeSplit  int           `json:"huge_tasks_per_workflow"`
	Small      int           `json:"small_accounts"`
	SmallTasks int           `json:"small_tasks_each"`
	Sleep      time.Duration `json:"activity_sleep_ns"`
	Slots      int           `json:"worker_activity_slots"`
	Runs       string        `json:"runs"`
}

func (p *fairnessParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Huge, "b9-huge", 2000, "B9: activity tasks of the huge account, queued first")
	// The server refuses more than 2,000 pending activities per workflow
	// (limit.numPendingActivities.error); ordersync's huge account is many
	// slices anyway.
	fs.IntVar(&p.HugeSplit, "b9-huge-per-workflow", 500, "B9: the huge account's tasks per workflow (a slice's pages)")
	fs.IntVar(&p.Small, "b9-small", 20, "B9: small accounts, queued after the huge account's backlog")
	fs.IntVar(&p.SmallTasks, "b9-small-tasks", 10, "B9: activity tasks of each small account")
	fs.DurationVar(&p.Sleep, "b9-sleep", 20*time.Millisecond, "B9: how long each activity sleeps")
	fs.IntVar(&p.Slots, "b9-slots", 4, "B9: the worker's activity slots (MaxConcurrentActivityExecutionSize)")
	fs.StringVar(&p.Runs, "b9-runs", "keys,no-keys",
		"B9: runs, comma-separated: keys, no-keys (fairness on, tasks without keys), keys-fairness-off (matching.enableFairness false), keys-4-partitions, no-keys-4-partitions")
}

// fairnessVariant is one run's server and whether tasks carry keys.
type fairnessVariant struct {
	keys       bool
	fairnessOn bool
	partitions int
}

func parseFairnessRun(name string) (fairnessVariant, error) {
	switch name {
	case "keys":
		return fairnessVariant{keys: true, fairnessOn: true, partitions: 1}, nil
	case "no-keys":
		return fairnessVariant{keys: false, fairnessOn: true, partitions: 1}, nil
	case "keys-fairness-off":
		return fairnessVariant{keys: true, fairnessOn: false, partitions: 1}, nil
	case "keys-4-partitions":
		return fairnessVariant{keys: true, fairnessOn: true, partitions: 4}, nil
	case "no-keys-4-partitions":
		return fairnessVariant{keys: false, fairnessOn: true, partitions: 4}, nil
	}
	return fairnessVariant{}, fmt.Errorf("B9: unknown run %q (keys, no-keys, keys-fairness-off, keys-4-partitions, no-keys-4-partitions)", name)
}

// fairnessRun is one run's numbers. Small-account times run from the
// account's start (its workflow started, its tasks queued moments later)
// to its last task done.
type fairnessRun struct {
	Name           string  `json:"name"`
	Keys           bool    `json:"fairness_keys"`
	ServerFairness bool    `json:"server_enable_fairness"`
	Partitions     int     `json:"partitions"`
	BacklogQueued  int64   `json:"huge_backlog_when_small_started"`
	SmallP50       float64 `json:"small_seconds_p50"`
	SmallP95       float64 `json:"small_seconds_p95"`
	SmallMax       float64 `json:"small_seconds_max"`
	// HugeAheadP50 and HugeAheadMax are how many of the huge account's
	// tasks ran between the small accounts' start and when half of them,
	// and all of them, were done: what they waited behind. On a queue
	// served first come, first served it is the whole backlog.
	HugeAheadP50 int64   `json:"huge_tasks_run_while_small_p50_waited"`
	HugeAheadMax int64   `json:"huge_tasks_run_while_small_max_waited"`
	HugeSeconds  float64 `json:"huge_seconds"`
	TasksPerSec  float64 `json:"tasks_per_second"`
	// Retries are task attempts after a timed-out first one.
	Retries int64  `json:"retries"`
	Note    string `json:"note,omitempty"`
}

type fairnessResult struct {
	Started time.Time      `json:"started"`
	Machine machine        `json:"machine"`
	Params  fairnessParams `json:"params"`
	Runs    []fairnessRun  `json:"runs"`
}

// fairnessLoadInput is one account's share of the load: Tasks activities
// at once, keyed by Account when Keyed.
type fairnessLoadInput struct {
	Account string
	Tasks   int
	Keyed   bool
	Sleep   time.Duration
}

// fairnessLoad schedules every task of its input at once and waits for all.
func fairnessLoad(ctx workflow.Context, in fairnessLoadInput) error {
	// A task whose start never reached a worker (a poll forwarded between
	// partitions that ended first) times out and runs again, as a page
	// would; the retries are counted.
	opts := workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1}}
	if in.Keyed {
		opts.Priority = fairness.Priority(in.Account)
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	fs := make([]workflow.Future, in.Tasks)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity(ctx, fairnessTaskName, in.Account, in.Sleep)
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

const (
	fairnessWorkflowName = "FairnessBenchLoad"
	fairnessTaskName     = "FairnessBenchTask"
	fairnessHuge         = "huge"
)

// fairnessCounter counts the tasks each account has run.
type fairnessCounter struct {
	hugeStarted atomic.Int64
	hugeDone    atomic.Int64
	retries     atomic.Int64
}

func (c *fairnessCounter) task(ctx context.Context, account string, sleep time.Duration) error {
	if activity.GetInfo(ctx).Attempt > 1 {
		c.retries.Add(1)
	}
	if account == fairnessHuge {
		c.hugeStarted.Add(1)
		defer c.hugeDone.Add(1)
	}
	select {
	case <-time.After(sleep):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runFairness runs B9: each run on a fresh embedded server.
func runFairness(ctx context.Context, env *benchEnv, p *fairnessParams) (fairnessResult, error) {
	res := fairnessResult{Started: time.Now().UTC(), Machine: describeMachine(env.gcPercent), Params: *p}
	for _, name := range strings.Split(p.Runs, ",") {
		name = strings.TrimSpace(name)
		v, err := parseFairnessRun(name)
		if err != nil {
			return res, err
		}
		r, err := runFairnessOnce(ctx, env, p, name, v)
		if err != nil {
			r.Note = err.Error()
			res.Runs = append(res.Runs, r)
			return res, fmt.Errorf("B9 %s: %w", name, err)
		}
		env.logf("B9 %s: small accounts p50 %.2fs p95 %.2fs max %.2fs; huge %.1fs", name, r.SmallP50, r.SmallP95, r.SmallMax, r.HugeSeconds)
		res.Runs = append(res.Runs, r)
	}
	return res, nil
}

func runFairnessOnce(ctx context.Context, env *benchEnv, p *fairnessParams, name string, v fairnessVariant) (fairnessRun, error) {
	r := fairnessRun{Name: name, Keys: v.keys, ServerFairness: v.fairnessOn, Partitions: v.partitions}
	ctx, cancel := context.WithTimeout(ctx, env.caseTimeout)
	defer cancel()
	dir := env.caseDir("b9-" + name)
	dbPath := ""
	if env.serverDB != "memory" {
		dbPath = filepath.Join(dir, "temporal.db")
	}
	srv, err := devserver.Start(devserver.Options{DatabasePath: dbPath, FrontendPort: -1, UIPort: 0,
		LogFile: filepath.Join(dir, "temporal.log"), LogLevel: "error",
		DynamicConfig: dynamicconfig.StaticClient{
			dynamicconfig.MatchingEnableFairness.Key():              v.fairnessOn,
			dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  v.partitions,
			dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): v.partitions,
		}})
	if err != nil {
		return r, err
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(), Logger: quietLogger{}})
	if err != nil {
		return r, err
	}
	defer c.Close()
	const queue = "orders-bench"
	counter := &fairnessCounter{}
	w := sdkworker.New(c, queue, sdkworker.Options{MaxConcurrentActivityExecutionSize: p.Slots})
	w.RegisterWorkflowWithOptions(fairnessLoad, workflow.RegisterOptions{Name: fairnessWorkflowName})
	w.RegisterActivityWithOptions(counter.task, activity.RegisterOptions{Name: fairnessTaskName})
	if err := w.Start(); err != nil {
		return r, err
	}
	defer w.Stop()

	start := func(id, account string, tasks int) (client.WorkflowRun, error) {
		opts := client.StartWorkflowOptions{ID: id, TaskQueue: queue}
		if v.keys {
			opts.Priority = fairness.Priority(account)
		}
		return c.ExecuteWorkflow(ctx, opts, fairnessWorkflowName,
			fairnessLoadInput{Account: account, Tasks: tasks, Keyed: v.keys, Sleep: p.Sleep})
	}
	hugeStart := time.Now()
	var huge []client.WorkflowRun
	for i, left := 0, p.Huge; left > 0; i++ {
		n := min(left, max(1, p.HugeSplit))
		run, err := start(fmt.Sprintf("huge-%d", i), fairnessHuge, n)
		if err != nil {
			return r, err
		}
		huge = append(huge, run)
		left -= n
	}
	r.BacklogQueued = waitForBacklog(ctx, env, c, srv.Namespace(), queue, counter, int64(p.Huge-p.Slots))

	type done struct {
		secs     float64
		hugeDone int64
		err      error
	}
	results := make([]done, p.Small)
	hugeBefore := counter.hugeDone.Load()
	var wg sync.WaitGroup
	for i := range p.Small {
		account := fmt.Sprintf("small-%02d", i+1)
		t0 := time.Now()
		run, err := start(account, account, p.SmallTasks)
		if err != nil {
			return r, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run.Get(ctx, nil)
			results[i] = done{secs: time.Since(t0).Seconds(), hugeDone: counter.hugeDone.Load(), err: err}
		}()
	}
	wg.Wait()
	for _, run := range huge {
		if err := run.Get(ctx, nil); err != nil {
			return r, fmt.Errorf("huge account's workflow %s: %w", run.GetID(), err)
		}
	}
	r.HugeSeconds = time.Since(hugeStart).Seconds()
	r.Retries = counter.retries.Load()
	r.TasksPerSec = float64(p.Huge+p.Small*p.SmallTasks) / r.HugeSeconds
	sort.Slice(results, func(i, j int) bool { return results[i].secs < results[j].secs })
	secs := make([]float64, len(results))
	for i, d := range results {
		if d.err != nil {
			return r, fmt.Errorf("small account: %w", d.err)
		}
		secs[i] = d.secs
	}
	r.SmallP50, r.SmallP95, r.SmallMax = quantile(secs, 0.5), quantile(secs, 0.95), secs[len(secs)-1]
	r.HugeAheadP50 = results[(len(results)-1)/2].hugeDone - hugeBefore
	r.HugeAheadMax = results[len(results)-1].hugeDone - hugeBefore
	return r, nil
}

// waitForBacklog waits until the huge account's tasks are in the queue:
// its backlog (as the server reports it) plus what already ran reaches
// want, or 20 s pass. It returns the backlog it saw last.
func waitForBacklog(ctx context.Context, env *benchEnv, c client.Client, namespace, queue string, counter *fairnessCounter, want int64) int64 {
	deadline := time.Now().Add(20 * time.Second)
	var backlog int64
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace:     namespace,
			TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_ACTIVITY,
			ReportStats:   true,
		})
		if err == nil {
			backlog = resp.GetStats().GetApproximateBacklogCount()
			if backlog+counter.hugeStarted.Load() >= want {
				return backlog
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	env.logf("B9: the huge account's backlog reached %d of %d tasks (plus %d run) before the small accounts started", backlog, want, counter.hugeStarted.Load())
	return backlog
}

func printFairness(w io.Writer, r fairnessResult) {
	p := r.Params
	fmt.Fprintf(w, "\nB9 fairness: one account with %d tasks queued first, %d accounts with %d each after it, one task queue, a worker with %d activity slots, %s per task\n",
		p.Huge, p.Small, p.SmallTasks, p.Slots, p.Sleep)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tkeys\tserver fairness\tpartitions\tbacklog at small start\tsmall p50 s\tp95 s\tmax s\thuge tasks run while small p50 / max waited\thuge s\ttasks/s\tretries")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%d\t%d\t%.2f\t%.2f\t%.2f\t%d / %d\t%.1f\t%.0f\t%d%s\n", run.Name, run.Keys, run.ServerFairness, run.Partitions,
			run.BacklogQueued, run.SmallP50, run.SmallP95, run.SmallMax, run.HugeAheadP50, run.HugeAheadMax,
			run.HugeSeconds, run.TasksPerSec, run.Retries, note(run.Note))
	}
	tw.Flush()
}

// writeFairness writes the result beside the other results as
// fairness-<start>.json (it is not part of latest.json, like B7).
func writeFairness(dir string, r fairnessResult) error {
	name := "fairness-" + r.Started.Format("20060102T150405Z") + ".json"
	fmt.Fprintf(os.Stderr, "B9 results: %s\n", filepath.Join(dir, name))
	return writeResultFile(dir, name, r)
}
