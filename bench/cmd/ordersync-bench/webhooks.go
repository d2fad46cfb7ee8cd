package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

// B11 webhooks (issue 28; B9 and B10 were taken by fairness and the
// registry, so the webhooks case is b11): Shopify accounts whose webhooks
// reach serve's intake (webhook -> refetch) and whose cursors poll every
// webhook_interval while the fast path is live (hybrid pacing), beside
// accounts of the same order rate polled every interval without webhooks,
// in one run on one system:
//
//   - latency: for every order version that became visible at a webhook
//     account in the window, from the platform's update to the change's
//     confirmation by a webhook destination (the receiver's handling of
//     the batch; a version superseded before it was fetched counts as
//     confirmed with its successor), p99 against 2 s over >= 1,000 updates;
//   - cost: the simulator's count of platform requests (list pages and
//     GraphQL queries, refetches included) per order changed in the
//     window, webhook accounts against polled ones, at a busy shop's order
//     rate and at a quiet one's (a poll costs a request whether it finds
//     orders or not, a webhook costs a refetch per change).

// webhooksParams size B11; its flags are registered beside the others.
type webhooksParams struct {
	Shops           int           `json:"shops_per_group"`
	LiveRate        float64       `json:"live_orders_per_second_per_shop"`
	QuietRate       float64       `json:"quiet_orders_per_second_per_shop"`
	MaxUpdates      int           `json:"max_updates"`
	UpdateSpread    time.Duration `json:"update_spread_ns"`
	Interval        time.Duration `json:"interval_ns"`
	WebhookInterval time.Duration `json:"webhook_interval_ns"`
	Warmup          time.Duration `json:"warmup_ns"`
	Window          time.Duration `json:"window_ns"`
	// TargetP99 and MinUpdates are issue 28's bar.
	TargetP99  float64 `json:"target_p99_seconds"`
	MinUpdates int     `json:"min_updates"`
}

func (p *webhooksParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Shops, "b11-shops", 2, "B11: shops per group (webhooks with hybrid pacing; polling only)")
	fs.Float64Var(&p.LiveRate, "b11-live-rate", 0.35, "B11: new orders per second per busy shop")
	fs.Float64Var(&p.QuietRate, "b11-quiet-rate", 0.01, "B11: new orders per second per quiet shop (0: no quiet groups)")
	fs.IntVar(&p.MaxUpdates, "b11-max-updates", 2, "B11: updates per order, uniform 0..this")
	fs.DurationVar(&p.UpdateSpread, "b11-update-spread", 2*time.Minute, "B11: an order's updates fall within this after its creation")
	fs.DurationVar(&p.Interval, "b11-interval", time.Minute, "B11: interval of every account (the polled group polls at it)")
	fs.DurationVar(&p.WebhookInterval, "b11-webhook-interval", 15*time.Minute, "B11: webhook_interval of the webhook group")
	fs.DurationVar(&p.Warmup, "b11-warmup", 90*time.Second, "B11: time before the window (the hybrid cursors see the webhooks live)")
	fs.DurationVar(&p.Window, "b11-window", 15*time.Minute, "B11: measurement window (one webhook_interval covers one wide poll)")
	p.TargetP99, p.MinUpdates = 2, 1000
}

// webhooksGroup is one group's cost in the window.
type webhooksGroup struct {
	Name      string   `json:"name"`
	Webhooks  bool     `json:"webhooks"`
	Rate      float64  `json:"orders_per_second_per_shop"`
	Platforms []string `json:"platforms"`
	// Requests are the simulator's requests of the group's shops in the
	// window: list pages and GraphQL queries, refetches included.
	Requests int64 `json:"requests"`
	// Orders changed (created or updated) in the window, and their versions.
	Orders   int `json:"orders"`
	Versions int `json:"versions"`
	// Slices and Pages are the cursors' own counts in the window (the polls).
	Slices           int64   `json:"slices"`
	Pages            int64   `json:"pages"`
	RequestsPerOrder float64 `json:"requests_per_order"`
}

// webhooksResult is B11's result file.
type webhooksResult struct {
	Started time.Time      `json:"started"`
	Machine machine        `json:"machine"`
	Params  webhooksParams `json:"params"`
	// Updates are the webhook group's versions visible in the window;
	// Confirmed those (or a successor) a destination confirmed.
	Updates      int     `json:"updates"`
	Confirmed    int     `json:"confirmed"`
	NotConfirmed int     `json:"not_confirmed"`
	P50          float64 `json:"p50_seconds"`
	P90          float64 `json:"p90_seconds"`
	P99          float64 `json:"p99_seconds"`
	Max          float64 `json:"max_seconds"`
	// Groups: busy shops with webhooks and hybrid pacing, busy shops polled
	// at interval, and the same two at the quiet rate.
	Groups []webhooksGroup `json:"groups"`
	// Pacing is a webhook cursor's pacing at the window's end.
	Pacing *api.Pacing `json:"pacing,omitempty"`
	// Sim is the simulator's webhook counters.
	Sim        sim.WebhookStats `json:"sim_webhooks"`
	CPUSeconds float64          `json:"cpu_seconds"`
	LoadAfter  float64          `json:"load_average_after"`
	Note       string           `json:"note,omitempty"`
}

const b11Secret = "shpss_bench_5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b"

// b11Platforms is the platforms file: Shopify accounts on the simulator,
// the webhook group with webhook_interval, and the webhook destination.
func b11Platforms(p *webhooksParams, groups []webhooksGroup, hookURL string) func(url string) ([]byte, error) {
	return func(url string) ([]byte, error) {
		var b bytes.Buffer
		fmt.Fprintf(&b, `default:
  kind: shopify
  credentials: {env: %s}
  start: %q
  interval: %s
  overlap: 5s
  settle: 2s
  timeout: 10s
  retries: 10
  retry_interval: 200ms
  retry_backoff: 2
  max_retry_interval: 5s
  concurrency: 2
  rate_limit: {rps: 50, burst: 20}
  page_size: 250
  max_pages: 100
  options: {restore_rate: 2000, max_cost_available: 20000, bulk_backfill: false}
platforms:
`, tokenEnv, time.Now().UTC().Format(time.RFC3339), p.Interval)
		for _, g := range groups {
			for _, n := range g.Platforms {
				fmt.Fprintf(&b, "  %s:\n    endpoint: %q\n", n, url+"/shops/"+n)
				if g.Webhooks {
					fmt.Fprintf(&b, "    webhook_interval: %s\n", p.WebhookInterval)
				}
			}
		}
		fmt.Fprintf(&b, "destinations:\n  bench-b11:\n    kind: webhook\n    url: %q\n    secret: {env: %s}\n", hookURL, benchHookSecretEnv)
		b.WriteString("    batch_size: 100\n    max_in_flight: 1\n    timeout: 10s\n    retries: 10\n    retry_interval: 200ms\n    rate_limit: {rps: 10000, burst: 1000}\n")
		return b.Bytes(), nil
	}
}

// b11Confirmation is one change a destination confirmed.
type b11Confirmation struct {
	updated, at time.Time
}

// b11Receiver checks each delivery's signature as a Standard Webhooks
// receiver must and records per order the versions confirmed and when.
type b11Receiver struct {
	key []byte
	mu  sync.Mutex
	got map[string][]b11Confirmation // platform/order id
	bad int
}

func (w *b11Receiver) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	at := time.Now()
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, w.key)
	fmt.Fprintf(mac, "%s.%s.", r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	var b struct {
		Changes []struct {
			Platform  string    `json:"platform"`
			OrderID   string    `json:"order_id"`
			UpdatedAt time.Time `json:"updated_at"`
		} `json:"changes"`
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !hmac.Equal([]byte(r.Header.Get("webhook-signature")), []byte(want)) || json.Unmarshal(body, &b) != nil {
		w.bad++
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	for _, c := range b.Changes {
		k := c.Platform + "/" + c.OrderID
		w.got[k] = append(w.got[k], b11Confirmation{updated: c.UpdatedAt, at: at})
	}
	rw.WriteHeader(http.StatusNoContent)
}

// confirmedBy is when the destination first confirmed this version of the
// order or a newer one. Shopify states update times in whole seconds.
func (w *b11Receiver) confirmedBy(platform, id string, updated time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, c := range w.got[platform+"/"+id] {
		if !c.updated.Before(updated.Truncate(time.Second)) && (first.IsZero() || c.at.Before(first)) {
			first = c.at
		}
	}
	return first, !first.IsZero()
}

func runWebhooksBench(ctx context.Context, env *benchEnv, p *webhooksParams) (webhooksResult, error) {
	res := webhooksResult{Started: time.Now().UTC(), Machine: describeMachine(env.gcPercent), Params: *p}
	if p.WebhookInterval <= p.Interval || p.WebhookInterval%p.Interval != 0 {
		return res, fmt.Errorf("-b11-webhook-interval %s must be a whole multiple of -b11-interval %s, longer", p.WebhookInterval, p.Interval)
	}
	res.Groups = []webhooksGroup{{Name: "wh", Webhooks: true, Rate: p.LiveRate}, {Name: "poll", Rate: p.LiveRate}}
	if p.QuietRate > 0 {
		res.Groups = append(res.Groups, webhooksGroup{Name: "whq", Webhooks: true, Rate: p.QuietRate}, webhooksGroup{Name: "pollq", Rate: p.QuietRate})
	}
	secrets := webhooks.StaticSecrets{}
	simCfg := sim.DefaultConfig()
	for gi := range res.Groups {
		g := &res.Groups[gi]
		for i := range p.Shops {
			n := fmt.Sprintf("%s-%02d", g.Name, i)
			g.Platforms = append(g.Platforms, n)
			simCfg.Shops = append(simCfg.Shops, sim.ShopConfig{Name: n, Token: shopToken, LiveRate: g.Rate})
			if g.Webhooks {
				secrets[n] = b11Secret
			}
		}
	}

	// The destination's receiver.
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(benchHookSecret, "whsec_"))
	rcv := &b11Receiver{key: key, got: map[string][]b11Confirmation{}}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	hookSrv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hookSrv.Serve(hl) }()
	defer hookSrv.Close()
	os.Setenv(benchHookSecretEnv, benchHookSecret)

	simCfg.Seed = 28
	simCfg.AdminToken = "bench-admin"
	simCfg.History, simCfg.HistoryOrders = 0, 0
	simCfg.LiveRate, simCfg.MaxUpdates, simCfg.UpdateSpread, simCfg.Late = p.LiveRate, p.MaxUpdates, p.UpdateSpread, 0
	simCfg.RateLimit, simCfg.Faults = sim.RateLimit{}, sim.Faults{}
	simCfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	// No faults: B11 measures the fast path's latency; dropped, delayed and
	// forged events are the e2e test's (TestWebhooksFastPath).
	simCfg.Webhooks = sim.WebhookConfig{Secret: b11Secret, Tick: 20 * time.Millisecond}
	sys, err := startSystem(ctx, env.caseDir("b11"), systemOptions{sim: simCfg, serverDB: env.serverDB,
		platformsFile: b11Platforms(p, res.Groups, "http://"+hl.Addr().String()+"/hook")})
	if err != nil {
		return res, err
	}
	defer sys.stop()
	defer sys.sim.StopWebhooks()

	// Register the accounts (the intake routes by the registry) and run
	// serve's intake, as cli.webhookIntake builds it, the secret given
	// directly instead of through the credential store.
	reg, ok := store.RegistryOf(sys.store)
	if !ok {
		return res, fmt.Errorf("the store keeps no registry")
	}
	for _, pl := range sys.file.Platforms {
		e, err := accounts.PlatformEntry(pl, accounts.Active)
		if err != nil {
			return res, err
		}
		if _, err := reg.Put(ctx, e, 0); err != nil {
			return res, err
		}
	}
	intake, err := webhooks.New(webhooks.Options{Registry: reg, Log: sys.store, Secrets: secrets,
		Refetch: &orderops.Service{Store: sys.store, Registry: reg, Temporal: sys.client}, Logger: discardLogger()})
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = intake.Close(cctx)
	}()
	il, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	mux := http.NewServeMux()
	mux.Handle(webhooks.Prefix, intake)
	intakeSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = intakeSrv.Serve(il) }()
	defer intakeSrv.Close()
	for _, pl := range sys.file.Platforms {
		if _, ok := secrets[pl.Name]; !ok {
			continue
		}
		o, err := config.KindOptions[connectors.ShopifyOptions](pl)
		if err != nil {
			return res, err
		}
		admin := &webhooks.ShopifyAdmin{Endpoint: pl.Endpoint, APIVersion: o.APIVersion, Token: shopToken}
		if _, err := webhooks.Sync(ctx, admin, webhooks.IntakeURL("http://"+il.Addr().String(), "shopify", pl.Name), false); err != nil {
			return res, fmt.Errorf("subscribe %s: %w", pl.Name, err)
		}
	}
	if _, err := starter.EnsureDelivery(ctx, sys.client, sys.file.Destinations[0]); err != nil {
		return res, err
	}
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	env.logf("B11: %d shops per group, webhooks with webhook_interval %s or polled at interval %s, %g (busy) and %g (quiet) new orders/s each; warmup %s, window %s",
		p.Shops, p.WebhookInterval, p.Interval, p.LiveRate, p.QuietRate, p.Warmup, p.Window)
	if err := sleep(ctx, p.Warmup); err != nil {
		return res, err
	}

	counts := func() (map[string]sim.ShopStats, map[string]api.CursorStatus, error) {
		sts, err := sys.statuses(ctx, sys.file.Names())
		return sys.sim.Stats().Shops, sts, err
	}
	stop := env.profile("b11")
	c0 := cpuSeconds()
	from := sys.sim.Now()
	sim0, cur0, err := counts()
	if err != nil {
		stop()
		return res, err
	}
	if err := sleep(ctx, p.Window); err != nil {
		stop()
		return res, err
	}
	to := sys.sim.Now()
	sim1, cur1, err := counts()
	stop()
	res.CPUSeconds = cpuSeconds() - c0
	if err != nil {
		return res, err
	}
	if pc := cur1[res.Groups[0].Platforms[0]].Pacing; pc != nil {
		res.Pacing = pc
	}
	// Let the fast path finish the window's last updates.
	if err := sleep(ctx, 10*time.Second); err != nil {
		return res, err
	}
	res.LoadAfter = loadAverage()
	res.Sim = sys.sim.WebhookStats()

	var lat []float64
	group := func(g *webhooksGroup) error {
		measure := g.Webhooks
		for _, n := range g.Platforms {
			vs, err := sys.sim.VisibleBetween(n, from, to)
			if err != nil {
				return err
			}
			orders := map[string]bool{}
			for _, v := range vs {
				orders[v.ID] = true
				if !measure {
					continue
				}
				at, ok := rcv.confirmedBy(n, v.ID, v.UpdatedAt)
				if !ok {
					res.NotConfirmed++
					continue
				}
				lat = append(lat, at.Sub(v.VisibleAt).Seconds())
			}
			g.Orders += len(orders)
			g.Versions += len(vs)
			g.Requests += sim1[n].Requests - sim0[n].Requests
			g.Slices += cur1[n].Counts.SlicesCompleted - cur0[n].Counts.SlicesCompleted
			g.Pages += cur1[n].Counts.Pages - cur0[n].Counts.Pages
		}
		if g.Orders > 0 {
			g.RequestsPerOrder = float64(g.Requests) / float64(g.Orders)
		}
		return nil
	}
	for i := range res.Groups {
		if err := group(&res.Groups[i]); err != nil {
			return res, err
		}
		if res.Groups[i].Webhooks {
			res.Updates += res.Groups[i].Versions
		}
	}
	res.Confirmed = len(lat)
	sort.Float64s(lat)
	if len(lat) > 0 {
		res.P50, res.P90, res.P99, res.Max = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99), lat[len(lat)-1]
	}
	rcv.mu.Lock()
	if rcv.bad > 0 {
		res.Note = fmt.Sprintf("%d deliveries failed the receiver's signature or JSON check", rcv.bad)
	}
	rcv.mu.Unlock()
	if res.Updates < p.MinUpdates {
		res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" only %d updates in the window (issue 28 asks for %d): raise -b11-live-rate or -b11-window", res.Updates, p.MinUpdates))
	}
	return res, nil
}

// printWebhooks prints B11's table.
func printWebhooks(w io.Writer, r webhooksResult) {
	p := r.Params
	fmt.Fprintf(w, "\nB11 webhooks: Shopify shops with webhooks (interval %s, webhook_interval %s) beside shops polled every %s, %d per group, %g (busy) and %g (quiet) new orders/s each, window %s\n",
		p.Interval, p.WebhookInterval, p.Interval, p.Shops, p.LiveRate, p.QuietRate, p.Window)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tresult\ttarget\tmet")
	fmt.Fprintf(tw, "platform update -> confirmed by the webhook destination\tp50 %.2fs, p90 %.2fs, p99 %.2fs, max %.2fs over %d updates (%d not confirmed)%s\tp99 <= %.0fs over >= %d updates\t%s\n",
		r.P50, r.P90, r.P99, r.Max, r.Confirmed, r.NotConfirmed, note(r.Note), p.TargetP99, p.MinUpdates,
		yes(r.NotConfirmed == 0 && r.Confirmed >= p.MinUpdates && r.P99 <= p.TargetP99))
	for _, g := range r.Groups {
		how := "polling every " + p.Interval.String()
		if g.Webhooks {
			how = "webhooks + polling every " + p.WebhookInterval.String() + " while live"
		}
		fmt.Fprintf(tw, "requests per order, %s, %g orders/s/shop\t%.2f (%d requests for %d orders, %d versions; %d polls, %d pages)\treported\t-\n",
			how, g.Rate, g.RequestsPerOrder, g.Requests, g.Orders, g.Versions, g.Slices, g.Pages)
	}
	if r.Pacing != nil && len(r.Groups) > 0 {
		fmt.Fprintf(tw, "pacing of %s at the end\tpolling every %s: %s\t-\t-\n", r.Groups[0].Platforms[0], r.Pacing.Interval, r.Pacing.Reason)
	}
	tw.Flush()
}

// writeWebhooks writes the result beside the other results as
// webhooks-<start>.json (not part of latest.json, like B9 and B10).
func writeWebhooks(dir string, r webhooksResult) error {
	name := "webhooks-" + r.Started.Format("20060102T150405Z") + ".json"
	fmt.Fprintf(os.Stderr, "B11 results: %s\n", filepath.Join(dir, name))
	return writeResultFile(dir, name, r)
}
