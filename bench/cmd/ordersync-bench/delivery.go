package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/natstest"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
)

// B8 delivery: how fast a Delivery workflow moves the change feed to a
// destination, and how long a change waits between the store and the
// destination. Per destination kind (a local webhook receiver, a real
// nats-server with JetStream), on a fresh system:
//
//  1. backlog: the cursors backfill shops × orders; the feed fills;
//  2. drain (throughput): the destination's Delivery workflow starts and
//     delivers the backlog while the cursors keep fetching live orders;
//     changes/s = the backlog's changes / (last of them confirmed − start);
//  3. lag: for a window of live orders, each change's time from its
//     commit in the store to its confirmation by the destination (the
//     receiver's handling of the batch; JetStream's stored timestamp).

// deliveryParams size B8; its flags are registered beside the others.
type deliveryParams struct {
	Kinds         string        `json:"kinds"`
	Shops         int           `json:"shops"`
	OrdersPerShop int           `json:"orders_per_shop"`
	LiveRate      float64       `json:"live_orders_per_second_per_shop"`
	BatchSize     int           `json:"batch_size"`
	MaxInFlight   int           `json:"max_in_flight"`
	Window        time.Duration `json:"lag_window_ns"`
	// Target is the webhook's changes/s target (issue 14), reported.
	Target float64 `json:"target_changes_per_second"`
}

func (p *deliveryParams) register(fs *flag.FlagSet) {
	fs.StringVar(&p.Kinds, "b8-kinds", "webhook,nats", "B8: destination kinds, comma-separated (each is one run)")
	fs.IntVar(&p.Shops, "b8-shops", 4, "B8: shops")
	fs.IntVar(&p.OrdersPerShop, "b8-orders", 25_000, "B8: backlog orders per shop (the backlog delivered in the drain)")
	fs.Float64Var(&p.LiveRate, "b8-live-rate", 20, "B8: new orders per second per shop while delivering (cursors keep fetching)")
	fs.IntVar(&p.BatchSize, "b8-batch-size", 100, "B8: the destination's batch_size")
	fs.IntVar(&p.MaxInFlight, "b8-max-in-flight", 4, "B8: the destination's max_in_flight")
	fs.DurationVar(&p.Window, "b8-window", 30*time.Second, "B8: window of live changes whose lag is measured")
	p.Target = 5000
}

// deliveryReport is B8's part of the results.
type deliveryReport struct {
	Params deliveryParams `json:"params"`
	Runs   []deliveryRun  `json:"runs"`
}

// deliveryRun is one destination kind's measurement.
type deliveryRun struct {
	Kind string `json:"kind"`
	// Backlog is how many changes the feed held when delivery started.
	Backlog       int64   `json:"backlog_changes"`
	DrainSeconds  float64 `json:"drain_seconds"`
	ChangesPerSec float64 `json:"changes_per_second"`
	// CPUSeconds is this process's CPU (server, worker, simulator and
	// receiver together) during the drain.
	CPUSeconds float64 `json:"drain_cpu_seconds"`
	LoadAfter  float64 `json:"load_average_after"`
	// Arrivals counts every change the destination got, redeliveries
	// included; Distinct once each.
	Arrivals   int     `json:"arrivals"`
	Distinct   int     `json:"distinct"`
	LagSamples int     `json:"lag_samples"`
	LagP50     float64 `json:"lag_p50_seconds"`
	LagP99     float64 `json:"lag_p99_seconds"`
	LagMax     float64 `json:"lag_max_seconds"`
	// Counts are the Delivery workflow's own totals at the end.
	Counts api.DeliveryCounts `json:"counts"`
	Runs   int                `json:"workflow_runs"`
	Note   string             `json:"note,omitempty"`
}

// confirmations is what a destination confirmed: per seq, when the store
// committed it and when the destination first confirmed it.
type confirmations struct {
	mu       sync.Mutex
	first    map[int64]confirmation
	arrivals int
}

type confirmation struct{ committed, confirmed time.Time }

// changeStamp is the part of a delivered change the bench reads.
type changeStamp struct {
	Seq         int64     `json:"seq"`
	CommittedAt time.Time `json:"committed_at"`
}

func (c *confirmations) add(cs []changeStamp, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arrivals += len(cs)
	for _, ch := range cs {
		if _, ok := c.first[ch.Seq]; !ok {
			c.first[ch.Seq] = confirmation{committed: ch.CommittedAt, confirmed: at}
		}
	}
}

// upTo counts the confirmed seqs <= head and when the last of them was
// confirmed.
func (c *confirmations) upTo(head int64) (int64, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	var last time.Time
	for seq, cf := range c.first {
		if seq <= head {
			n++
			if cf.confirmed.After(last) {
				last = cf.confirmed
			}
		}
	}
	return n, last
}

// lags are the commit-to-confirmation times of the changes committed in
// [from, to), sorted; missing counts those not confirmed.
func (c *confirmations) lags(from, to time.Time) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []float64
	for _, cf := range c.first {
		if !cf.committed.Before(from) && cf.committed.Before(to) {
			out = append(out, cf.confirmed.Sub(cf.committed).Seconds())
		}
	}
	sort.Float64s(out)
	return out
}

const benchHookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const benchHookSecretEnv = "ORDERSYNC_BENCH_HOOK_SECRET"

// webhookReceiver checks each delivery's signature as a Standard Webhooks
// receiver must, reads the changes' seqs and commit times, and confirms.
type webhookReceiver struct {
	key  []byte
	conf *confirmations
	bad  int
	mu   sync.Mutex
}

func (w *webhookReceiver) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, w.key)
	fmt.Fprintf(mac, "%s.%s.", r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	var b struct {
		Changes []changeStamp `json:"changes"`
	}
	if !hmac.Equal([]byte(r.Header.Get("webhook-signature")), []byte(want)) || json.Unmarshal(body, &b) != nil {
		w.mu.Lock()
		w.bad++
		w.mu.Unlock()
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.conf.add(b.Changes, time.Now())
	rw.WriteHeader(http.StatusNoContent)
}

// deliveryDestination is the destinations block of one B8 run.
func deliveryDestination(p *deliveryParams, kind, url string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "destinations:\n  bench-%s:\n    kind: %s\n    url: %q\n", kind, kind, url)
	if kind == "webhook" {
		fmt.Fprintf(&b, "    secret: {env: %s}\n", benchHookSecretEnv)
	} else {
		b.WriteString("    subject: bench\n")
	}
	fmt.Fprintf(&b, "    batch_size: %d\n    max_in_flight: %d\n    timeout: 10s\n    retries: 10\n    retry_interval: 200ms\n", p.BatchSize, p.MaxInFlight)
	// B8 measures the destination's pace, not a configured limit.
	b.WriteString("    rate_limit: {rps: 10000, burst: 1000}\n")
	return b.String()
}

func runDelivery(ctx context.Context, env *benchEnv, p *deliveryParams) (deliveryReport, error) {
	rep := deliveryReport{Params: *p}
	var errs []error
	for _, kind := range strings.Split(p.Kinds, ",") {
		kind = strings.TrimSpace(kind)
		if kind == "" {
			continue
		}
		r, err := runDeliveryKind(ctx, env, p, kind)
		if err != nil {
			r.Note = "error: " + err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", kind, err))
		}
		rep.Runs = append(rep.Runs, r)
	}
	return rep, errors.Join(errs...)
}

func runDeliveryKind(ctx context.Context, env *benchEnv, p *deliveryParams, kind string) (deliveryRun, error) {
	res := deliveryRun{Kind: kind}
	dir := env.caseDir("b8-" + kind)
	conf := &confirmations{first: map[int64]confirmation{}}
	var url string
	switch kind {
	case "webhook":
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(benchHookSecret, "whsec_"))
		rcv := &webhookReceiver{key: key, conf: conf}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, err
		}
		srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		defer func() {
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.bad > 0 {
				res.Note += fmt.Sprintf(" %d deliveries failed the receiver's signature or JSON check", rcv.bad)
			}
		}()
		url = "http://" + l.Addr().String() + "/hook"
		os.Setenv(benchHookSecretEnv, benchHookSecret)
	case "nats":
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, err
		}
		natsURL, stop, err := natstest.Run(dir)
		if err != nil {
			return res, err
		}
		defer stop()
		stopConsumer, err := consumeJetStream(ctx, natsURL, conf)
		if err != nil {
			return res, err
		}
		defer stopConsumer()
		url = natsURL
	default:
		return res, fmt.Errorf("unknown destination kind %q (webhook or nats)", kind)
	}

	const history = 30 * time.Minute
	simCfg := sim.DefaultConfig()
	simCfg.Seed = 18
	simCfg.Shops = shops(p.Shops)
	simCfg.AdminToken = "bench-admin"
	simCfg.History, simCfg.HistoryOrders = history, p.OrdersPerShop
	simCfg.LiveRate = p.LiveRate
	simCfg.MaxUpdates, simCfg.UpdateSpread, simCfg.Late = 2, time.Minute, time.Second
	simCfg.RateLimit, simCfg.Faults = sim.RateLimit{}, sim.Faults{}
	settings := platformSettings{
		Start: time.Now().UTC().Add(-history - 2*time.Minute).Truncate(time.Second), Interval: "10s", Overlap: "5s", Settle: "2s",
		Timeout: "30s", Concurrency: 4, RPS: 1000, Burst: 1000, PageSize: 250, MaxPages: 100, BackfillMaxSpan: "1h",
	}
	sys, err := startSystem(ctx, dir, systemOptions{sim: simCfg, settings: settings, serverDB: env.serverDB,
		extraYAML: deliveryDestination(p, kind, url)})
	if err != nil {
		return res, err
	}
	defer sys.stop()

	// 1. Backlog: the cursors fetch the history; nothing is delivered yet.
	env.logf("B8 %s: backlog of %d orders over %d shops", kind, p.Shops*p.OrdersPerShop, p.Shops)
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	if _, err := sys.waitWatermarks(ctx, time.Now().Add(-10*time.Second), env.caseTimeout); err != nil {
		return res, fmt.Errorf("backlog: %w", err)
	}
	head, err := sys.store.Head(ctx)
	if err != nil {
		return res, err
	}
	if res.Backlog, err = sys.store.CountChanges(ctx, "", 0, head.LastSeq); err != nil {
		return res, err
	}

	// 2. Drain: deliver the backlog while the cursors fetch live orders.
	dest := sys.file.Destinations[0]
	env.logf("B8 %s: delivering %d changes, batch_size %d, max_in_flight %d", kind, res.Backlog, dest.BatchSize, dest.MaxInFlight)
	stopProfile := env.profile("b8-" + kind)
	t0, c0 := time.Now(), cpuSeconds()
	if _, err := starter.EnsureDelivery(ctx, sys.client, dest); err != nil {
		stopProfile()
		return res, err
	}
	drained, last, err := waitConfirmed(ctx, conf, head.LastSeq, res.Backlog, env.caseTimeout)
	stopProfile()
	res.CPUSeconds = cpuSeconds() - c0
	if err != nil {
		return res, fmt.Errorf("drain: %d of %d changes confirmed: %w", drained, res.Backlog, err)
	}
	res.DrainSeconds = last.Sub(t0).Seconds()
	res.ChangesPerSec = float64(res.Backlog) / res.DrainSeconds
	env.logf("B8 %s: %d changes in %.1fs: %.0f changes/s", kind, res.Backlog, res.DrainSeconds, res.ChangesPerSec)

	// 3. Lag: live changes, from commit to confirmation.
	from := time.Now()
	if err := sleep(ctx, p.Window); err != nil {
		return res, err
	}
	to := time.Now()
	if head, err = sys.store.Head(ctx); err != nil {
		return res, err
	}
	want, err := sys.store.CountChanges(ctx, "", 0, head.LastSeq)
	if err != nil {
		return res, err
	}
	if n, _, err := waitConfirmed(ctx, conf, head.LastSeq, want, time.Minute); err != nil {
		res.Note += fmt.Sprintf(" lag window: %d of %d changes confirmed: %v", n, want, err)
	}
	lags := conf.lags(from, to)
	res.LagSamples = len(lags)
	if len(lags) > 0 {
		res.LagP50, res.LagP99, res.LagMax = quantile(lags, 0.5), quantile(lags, 0.99), lags[len(lags)-1]
	}
	res.LoadAfter = loadAverage()
	conf.mu.Lock()
	res.Arrivals, res.Distinct = conf.arrivals, len(conf.first)
	conf.mu.Unlock()
	if st, err := deliveryStatus(ctx, sys, dest.Name); err == nil {
		res.Counts, res.Runs = st.State.Counts, st.State.Runs
	}
	res.Note = strings.TrimSpace(res.Note)
	return res, nil
}

// waitConfirmed polls until want changes with seq <= head are confirmed.
func waitConfirmed(ctx context.Context, conf *confirmations, head, want int64, timeout time.Duration) (int64, time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, last := conf.upTo(head)
		if n >= want {
			return n, last, nil
		}
		if time.Now().After(deadline) {
			return n, last, fmt.Errorf("not within %s", timeout)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return n, last, err
		}
	}
}

// consumeJetStream creates the stream the destination publishes to and
// records each stored message's change with the stream's timestamp (when
// JetStream stored it: the confirmation the sender waits for).
func consumeJetStream(ctx context.Context, url string, conf *confirmations) (func(), error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, Duplicates: 2 * time.Minute})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("create stream: %w", err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		nc.Close()
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var c changeStamp
		md, err := m.Metadata()
		if err != nil || json.Unmarshal(m.Data(), &c) != nil {
			return
		}
		conf.add([]changeStamp{c}, md.Timestamp)
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() { cc.Stop(); nc.Close() }, nil
}

func deliveryStatus(ctx context.Context, sys *system, name string) (api.DeliveryStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := sys.client.QueryWorkflow(ctx, api.DeliveryWorkflowID(name), "", api.QueryDeliveryStatus)
	if err != nil {
		return api.DeliveryStatus{}, err
	}
	var st api.DeliveryStatus
	return st, v.Get(&st)
}

// printRows adds B8's rows to the results table.
func (r *deliveryReport) printRows(tw *tabwriter.Writer) {
	for _, run := range r.Runs {
		setting := fmt.Sprintf("%s, %d backlog changes (%d shops), batch_size %d, max_in_flight %d, cursors fetching %g orders/s/shop",
			run.Kind, run.Backlog, r.Params.Shops, r.Params.BatchSize, r.Params.MaxInFlight, r.Params.LiveRate)
		result := fmt.Sprintf("%.0f changes/s (%.1fs, %.1f CPU s); lag p50 %.2fs, p99 %.2fs, max %.2fs over %d changes; %d arrivals for %d changes; %d batches, %d failures",
			run.ChangesPerSec, run.DrainSeconds, run.CPUSeconds, run.LagP50, run.LagP99, run.LagMax, run.LagSamples,
			run.Arrivals, run.Distinct, run.Counts.Batches, run.Counts.Failures)
		result += note(run.Note)
		target, met := "reported", "-"
		if run.Kind == "webhook" && r.Params.BatchSize == 100 {
			target, met = fmt.Sprintf(">= %.0f changes/s", r.Params.Target), yes(run.Note == "" && run.ChangesPerSec >= r.Params.Target)
		}
		fmt.Fprintf(tw, "B8 delivery\t%s\t%s\t%s\t%s\n", setting, result, target, met)
	}
}
