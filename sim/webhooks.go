package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The Shopify surface's webhooks: subscriptions an app makes through the
// Admin GraphQL API (webhookSubscriptionCreate, webhookSubscriptions,
// webhookSubscriptionDelete; shopify_webhooks_gql.go), and deliveries of
// orders/create, orders/updated and orders/cancelled to their URI when an
// order's version becomes visible, signed as Shopify signs them
// (X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the raw body with the
// app's client secret). As Shopify: a delivery not answered 2xx within
// Timeout is retried (Retries times, RetryInterval apart, quickly here;
// Shopify retries 8 times over 4 hours), and a subscription whose
// deliveries failed DeleteAfter times in a row is deleted (Shopify's
// documented rule for subscriptions made through the Admin API). Faults
// play what receivers see in practice: duplicates (same X-Shopify-Webhook-Id
// twice), delays, drops (never sent: polling must catch them) and forged
// deliveries beside the real ones (a wrong signature, as an attacker
// without the secret would send).

// WebhookConfig configures the deliveries; Secret empty turns them off.
type WebhookConfig struct {
	// Secret is the app's client secret the deliveries are signed with.
	Secret string `json:"secret"`
	// Duplicate, Drop and Forge are rates in [0,1]: a delivery sent twice,
	// never sent, or joined by a forged one.
	Duplicate float64 `json:"duplicate"`
	Drop      float64 `json:"drop"`
	Forge     float64 `json:"forge"`
	// DelayRate of the deliveries wait up to Delay (uniform) before sending.
	DelayRate float64       `json:"delay_rate"`
	Delay     time.Duration `json:"delay"`
	// Retries after a failed attempt (default 8), RetryInterval apart
	// (default 200ms).
	Retries       int           `json:"retries"`
	RetryInterval time.Duration `json:"retry_interval"`
	// DeleteAfter consecutive failed deliveries delete the subscription
	// (default 8, Shopify's).
	DeleteAfter int `json:"delete_after"`
	// Timeout of one attempt (default 5s, Shopify's).
	Timeout time.Duration `json:"timeout"`
	// Tick is how often the worlds are advanced to find new versions
	// while a subscription exists (default 100ms).
	Tick time.Duration `json:"tick"`
}

func (c WebhookConfig) withDefaults() (WebhookConfig, error) {
	for _, r := range []float64{c.Duplicate, c.Drop, c.Forge, c.DelayRate} {
		if r < 0 || r > 1 || r != r {
			return c, fmt.Errorf("sim config: webhook fault rates must be in [0,1], got %v", r)
		}
	}
	if c.Delay < 0 || c.Retries < 0 || c.RetryInterval < 0 || c.DeleteAfter < 0 || c.Timeout < 0 || c.Tick < 0 {
		return c, fmt.Errorf("sim config: webhook durations and counts must not be negative")
	}
	if c.Retries == 0 {
		c.Retries = 8
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 200 * time.Millisecond
	}
	if c.DeleteAfter == 0 {
		c.DeleteAfter = 8
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Tick == 0 {
		c.Tick = 100 * time.Millisecond
	}
	return c, nil
}

// WebhookStats counts the deliveries.
type WebhookStats struct {
	// Events are order changes a subscription asked for.
	Events int64 `json:"events"`
	// Delivered were answered 2xx (duplicates included).
	Delivered int64 `json:"delivered"`
	// Retried attempts, and Failed deliveries (retries exhausted).
	Retried int64 `json:"retried"`
	Failed  int64 `json:"failed"`
	// Dropped were never sent; Duplicated sent twice; Delayed held back.
	Dropped    int64 `json:"dropped"`
	Duplicated int64 `json:"duplicated"`
	Delayed    int64 `json:"delayed"`
	// Forged deliveries sent, and how many the receiver accepted (2xx):
	// a receiver that checks signatures keeps ForgedAccepted at 0.
	Forged         int64 `json:"forged"`
	ForgedAccepted int64 `json:"forged_accepted"`
	// Deleted subscriptions (DeleteAfter failures in a row).
	Deleted int64 `json:"deleted"`
	// LastDelivered is when the last real delivery was answered 2xx.
	LastDelivered time.Time `json:"last_delivered"`
}

type webhookSub struct {
	id       int64
	shop     string
	topic    string // ORDERS_CREATE, ...
	uri      string
	created  time.Time
	failures int
}

func (s *webhookSub) gid() string {
	return "gid://shopify/WebhookSubscription/" + strconv.FormatInt(s.id, 10)
}

type webhookDelivery struct {
	sub     *webhookSub
	topic   string // orders/create, ...
	id      string // X-Shopify-Webhook-Id
	body    []byte
	forged  bool
	due     time.Time
	attempt int
}

// webhookHub holds the subscriptions and sends the deliveries.
type webhookHub struct {
	s      *Simulator
	cfg    WebhookConfig
	client *http.Client

	mu      sync.Mutex
	subs    map[string][]*webhookSub // by shop
	nextID  int64
	seq     int64
	rand    rng
	stats   WebhookStats
	ticking bool
	stop    chan struct{}
	stopped bool
	queue   []*webhookDelivery
	wake    chan struct{}
}

// webhookQueueLimit bounds the deliveries waiting; past it new ones are
// counted dropped (a receiver that cannot keep up loses events, which
// polling must catch).
const webhookQueueLimit = 100000

func newWebhookHub(s *Simulator, cfg WebhookConfig) (*webhookHub, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &webhookHub{s: s, cfg: cfg, subs: map[string][]*webhookSub{}, rand: newRNG(uint64(s.cfg.Seed), 0x5eb400c),
		stop: make(chan struct{}), wake: make(chan struct{}, 1), client: &http.Client{Timeout: cfg.Timeout}}
	for _, sh := range s.shops {
		name := sh.name
		sh.world.onShow = func(seq uint32, prev int8, k int, vs []version) { h.changed(name, seq, prev, k, vs) }
	}
	return h, nil
}

// WebhookStats counts the Shopify surface's webhook deliveries.
func (s *Simulator) WebhookStats() WebhookStats {
	s.webhooks.mu.Lock()
	defer s.webhooks.mu.Unlock()
	return s.webhooks.stats
}

// StopWebhooks stops advancing the worlds and sending deliveries.
func (s *Simulator) StopWebhooks() {
	h := s.webhooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.stopped = true
		close(h.stop)
	}
}

// DeleteWebhookSubscriptions deletes every subscription of shop, as
// Shopify does after failed deliveries or an app's uninstall: what
// `ordersync webhooks sync` must notice and repair.
func (s *Simulator) DeleteWebhookSubscriptions(shop string) int {
	h := s.webhooks
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.subs[shop])
	delete(h.subs, shop)
	return n
}

// subscribe adds a subscription (the shop's lock is held).
func (h *webhookHub) subscribe(shop, topic, uri string) *webhookSub {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	sub := &webhookSub{id: h.nextID, shop: shop, topic: topic, uri: uri, created: h.s.Now()}
	h.subs[shop] = append(h.subs[shop], sub)
	if !h.ticking && !h.stopped && h.cfg.Secret != "" {
		h.ticking = true
		go h.tick()
		go h.send()
	}
	return sub
}

func (h *webhookHub) list(shop string) []webhookSub {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]webhookSub, 0, len(h.subs[shop]))
	for _, s := range h.subs[shop] {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (h *webhookHub) remove(shop string, id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.removeLocked(shop, id)
}

func (h *webhookHub) removeLocked(shop string, id int64) bool {
	for i, s := range h.subs[shop] {
		if s.id == id {
			h.subs[shop] = append(h.subs[shop][:i:i], h.subs[shop][i+1:]...)
			return true
		}
	}
	return false
}

// tick advances every shop's world, so versions become visible (and
// deliveries go out) without a client's request.
func (h *webhookHub) tick() {
	t := time.NewTicker(h.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		now := h.s.now()
		for _, sh := range h.s.shops {
			sh.mu.Lock()
			sh.world.advance(now)
			sh.mu.Unlock()
		}
	}
}

// changed is the world's hook: order seq shows version k now (prev before;
// -1: none). Called with the shop's lock held.
func (h *webhookHub) changed(shop string, seq uint32, prev int8, k int, vs []version) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.subs[shop]
	if len(subs) == 0 || h.cfg.Secret == "" {
		return
	}
	v := vs[k]
	topics := []string{"orders/updated"}
	switch {
	case prev < 0:
		topics = []string{"orders/create"}
	case v.status == statusCancelled && vs[prev].status != statusCancelled:
		topics = []string{"orders/cancelled", "orders/updated"}
	}
	id := orderID(seq)
	n, _ := strconv.ParseInt(id, 10, 64)
	var cancelledAt any
	if v.status == statusCancelled {
		cancelledAt = shopifySeconds(v.updated)
	}
	financial, _ := ShopifyFinancialStatus(v.status.String())
	body, _ := json.Marshal(map[string]any{"id": n, "admin_graphql_api_id": shopifyOrderGID + id, "name": "#" + id,
		"updated_at": shopifySeconds(v.updated), "cancelled_at": cancelledAt, "financial_status": financial})
	now := time.UnixMicro(h.s.now())
	for _, topic := range topics {
		want := map[string]string{"orders/create": "ORDERS_CREATE", "orders/updated": "ORDERS_UPDATED", "orders/cancelled": "ORDERS_CANCELLED"}[topic]
		for _, sub := range subs {
			if sub.topic != want {
				continue
			}
			h.stats.Events++
			h.seq++
			d := &webhookDelivery{sub: sub, topic: topic, id: fmt.Sprintf("%08x-sim-%d", h.rand.next()&0xffffffff, h.seq), body: body, due: now}
			if h.rand.float() < h.cfg.Drop {
				h.stats.Dropped++
				continue
			}
			if h.rand.float() < h.cfg.DelayRate && h.cfg.Delay > 0 {
				h.stats.Delayed++
				d.due = now.Add(time.Duration(h.rand.intn(int64(h.cfg.Delay))))
			}
			h.enqueue(d)
			if h.rand.float() < h.cfg.Duplicate {
				h.stats.Duplicated++
				dup := *d
				dup.due = d.due.Add(time.Duration(h.rand.intn(int64(500 * time.Millisecond))))
				h.enqueue(&dup)
			}
			if h.rand.float() < h.cfg.Forge {
				h.stats.Forged++
				h.enqueue(&webhookDelivery{sub: sub, topic: topic, id: fmt.Sprintf("forged-%d", h.seq), body: body, forged: true, due: now})
			}
		}
	}
}

// enqueue adds d (h.mu held).
func (h *webhookHub) enqueue(d *webhookDelivery) {
	if len(h.queue) >= webhookQueueLimit {
		h.stats.Dropped++
		return
	}
	h.queue = append(h.queue, d)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// RegisterFlags binds the webhook settings to fs (Config.RegisterFlags
// calls it), so `ordersync sim` plays them too.
func (c *WebhookConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Secret, "webhook-secret", c.Secret, "Shopify surface: sign webhook deliveries with this app client secret (empty: no deliveries)")
	fs.Float64Var(&c.Duplicate, "webhook-duplicate", c.Duplicate, "Shopify surface: rate of webhook deliveries sent twice")
	fs.Float64Var(&c.Drop, "webhook-drop", c.Drop, "Shopify surface: rate of webhook deliveries never sent")
	fs.Float64Var(&c.Forge, "webhook-forge", c.Forge, "Shopify surface: rate of webhook deliveries joined by a forged one (wrong signature)")
	fs.Float64Var(&c.DelayRate, "webhook-delay-rate", c.DelayRate, "Shopify surface: rate of webhook deliveries held back up to -webhook-delay")
	fs.DurationVar(&c.Delay, "webhook-delay", c.Delay, "Shopify surface: longest hold-back of a delayed webhook delivery")
}

// SetWebhookFaults changes the delivery faults (Duplicate, Drop, Forge,
// DelayRate, Delay) of the running simulator; the rest of f is ignored.
func (s *Simulator) SetWebhookFaults(f WebhookConfig) error {
	h := s.webhooks
	h.mu.Lock()
	defer h.mu.Unlock()
	next := h.cfg
	next.Duplicate, next.Drop, next.Forge, next.DelayRate, next.Delay = f.Duplicate, f.Drop, f.Forge, f.DelayRate, f.Delay
	next, err := next.withDefaults()
	if err != nil {
		return err
	}
	h.cfg = next
	return nil
}
