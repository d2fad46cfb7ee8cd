package sim

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// MaxUpdatesLimit caps Config.MaxUpdates so an order's versions fit in a
// fixed-size buffer when they are re-derived from its seed.
const MaxUpdatesLimit = 15

// Config describes the simulated platform.
type Config struct {
	// Seed makes the world reproducible: same seed, same clock readings, same orders.
	Seed int64
	// Shops are the accounts the platform hosts, each with its own bearer token.
	Shops []ShopConfig
	// AdminToken protects /admin/...; empty disables the admin API.
	AdminToken string
	// History is how far back the backlog of orders reaches from the start time.
	History time.Duration
	// HistoryOrders is the number of backlog orders per shop, spread uniformly over History.
	HistoryOrders int
	// LiveRate is the number of new orders per second per shop after the start
	// (a Poisson process on the simulator's clock).
	LiveRate float64
	// MaxUpdates is the maximum number of updates per order; each order gets
	// a uniform 0..MaxUpdates updates (status changes, total adjustments).
	MaxUpdates int
	// UpdateSpread is the time after creation within which an order's updates happen.
	UpdateSpread time.Duration
	// Late is the maximum visibility delay: a version updated at t is listed
	// from some time in [t, t+Late] on, still with updated_at t.
	Late time.Duration
	// MaxPageSize is the largest accepted limit (default 250).
	MaxPageSize int
	// RateLimit is the per-shop token bucket; RPS 0 means unlimited.
	RateLimit RateLimit
	// Faults are injected into otherwise valid list requests (and orders
	// queries of the Shopify surface).
	Faults Faults
	// ShopifyCost is each shop's bucket of points on the Shopify GraphQL
	// surface (shopify.go); RestoreRate 0 lifts it.
	ShopifyCost CostLimit
	// ShopifyLinePage is the most lines one nested lineItems page holds on
	// the Shopify surface, whatever first asks (default 3). Shopify serves
	// up to 250; a small page makes a client's follow-up queries happen.
	ShopifyLinePage int
	// ShopifyBulk plays the Shopify surface's bulk operations
	// (shopify_bulk.go).
	ShopifyBulk BulkConfig
	// Clock is the simulator's time source (default time.Now).
	Clock func() time.Time
	// AmazonTokenTTL is how long a pagination token of the Amazon surface
	// lasts (default 24h, as Amazon's); tests make it short.
	AmazonTokenTTL time.Duration
	// AmazonTokenError is the 400 the Amazon surface answers an expired
	// pagination token with, one of AmazonTokenErrors (default "expired":
	// "The paginationToken has expired."). Sellers report several texts
	// for the same refusal; tests play each.
	AmazonTokenError string
	// AmazonAccessTTL is how long the Amazon surface accepts an LWA access
	// token (default 1h). The token response still says expires_in 3600,
	// so a shorter value plays tokens that lapse mid-window: the client
	// gets 403 Unauthorized and must refresh.
	AmazonAccessTTL time.Duration
	// ShopifyAccessTTL is how long an expiring access token the Shopify
	// token endpoint issues lives (default 1h, as Shopify's; its
	// expires_in says so). Tests make it a minute or seconds.
	ShopifyAccessTTL time.Duration
	// ShopifyRefreshTTL is how long a Shopify refresh token lives (default
	// 90 days).
	ShopifyRefreshTTL time.Duration
	// Webhooks are the Shopify surface's webhook deliveries (webhooks.go).
	Webhooks WebhookConfig
	// Start, when set, is the instant the backlog ends and live creation
	// begins; by default the first clock reading. Restarting a simulator
	// with the same Seed and Start replays the same world, which is how
	// `ordersync dev` survives restarts.
	Start time.Time
}

// ShopConfig is one simulated account.
type ShopConfig struct {
	Name  string `json:"name"`
	Token string `json:"token"`
	// ShopifyCost, when set, is this shop's bucket of points instead of
	// Config.ShopifyCost: one run can hold a shop on the standard
	// 1,000-point bucket (ShopifyStandardBucket) beside generous ones.
	ShopifyCost *CostLimit `json:"shopify_cost,omitempty"`
	// LiveRate and HistoryOrders, when above zero, replace Config's for
	// this shop: a shop on a small bucket gets a load it can keep up with.
	LiveRate      float64 `json:"live_rate,omitempty"`
	HistoryOrders int     `json:"history_orders,omitempty"`
}

// RateLimit is a token bucket: RPS requests per second sustained, Burst at once.
// RPS 0 disables it; Burst 0 means max(1, ceil(RPS)).
type RateLimit struct {
	RPS   float64 `json:"rps"`
	Burst int     `json:"burst"`
}

// CostLimit is a leaky bucket of query cost points, as Shopify's GraphQL
// Admin API keeps per app and shop: MaxAvailable points at most, restored
// at RestoreRate a second. MaxAvailable 0 means 20 seconds of restore.
type CostLimit struct {
	RestoreRate  float64 `json:"restore_rate"`
	MaxAvailable float64 `json:"max_available"`
}

// Faults are the rates, each in [0,1] and summing to at most 1, at which a
// valid list request is answered with a fault instead of its page.
type Faults struct {
	// Err5xx answers 503 with a JSON error.
	Err5xx float64 `json:"err_5xx"`
	// Hang sleeps HangFor (meant to exceed the client timeout), then either
	// answers normally or drops the connection.
	Hang float64 `json:"hang"`
	// Malformed answers 200 with a truncated or garbled JSON body.
	Malformed float64 `json:"malformed"`
	// EmptyPageWithToken answers an empty page whose next token resumes
	// exactly where the request started, so nothing is lost by following it.
	EmptyPageWithToken float64 `json:"empty_page_with_token"`
	// HangFor is how long a hang lasts (default 30s).
	HangFor time.Duration `json:"hang_for"`
}

func (f Faults) total() float64 { return f.Err5xx + f.Hang + f.Malformed + f.EmptyPageWithToken }

func (f Faults) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"Err5xx", f.Err5xx}, {"Hang", f.Hang}, {"Malformed", f.Malformed}, {"EmptyPageWithToken", f.EmptyPageWithToken}} {
		if r.v < 0 || r.v > 1 || r.v != r.v {
			return fmt.Errorf("fault rate %s must be in [0,1], got %v", r.name, r.v)
		}
	}
	if f.total() > 1 {
		return fmt.Errorf("fault rates sum to %v, must be at most 1", f.total())
	}
	if f.HangFor < 0 {
		return fmt.Errorf("fault HangFor must not be negative, got %s", f.HangFor)
	}
	return nil
}

func (rl RateLimit) validate() error {
	if rl.RPS < 0 || rl.RPS != rl.RPS || rl.Burst < 0 {
		return fmt.Errorf("rate limit needs RPS >= 0 and Burst >= 0, got %v/%d", rl.RPS, rl.Burst)
	}
	return nil
}

// DefaultConfig is a small demo platform: three shops, 90 days of backlog,
// a few live orders a minute, two-minute late visibility, 10 requests/s.
func DefaultConfig() Config {
	return Config{
		Seed: 1,
		Shops: []ShopConfig{
			{Name: "acme", Token: "acme-token"},
			{Name: "globex", Token: "globex-token"},
			{Name: "initech", Token: "initech-token"},
		},
		AdminToken:    "sim-admin-token",
		History:       90 * 24 * time.Hour,
		HistoryOrders: 5000,
		LiveRate:      0.05,
		MaxUpdates:    3,
		UpdateSpread:  72 * time.Hour,
		Late:          2 * time.Minute,
		MaxPageSize:   250,
		RateLimit:     RateLimit{RPS: 10, Burst: 20},
		ShopifyCost:   CostLimit{RestoreRate: 100, MaxAvailable: 2000},
		Faults:        Faults{HangFor: 30 * time.Second},
		Clock:         time.Now,
	}
}

var shopNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// withDefaults validates cfg and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Shops) == 0 {
		bad("at least one shop is required")
	}
	seen := map[string]bool{}
	for i, s := range c.Shops {
		if !shopNameRE.MatchString(s.Name) {
			bad("shop %d: name %q must be 1-63 characters of letters, digits, '.', '_' or '-'", i, s.Name)
		}
		if seen[s.Name] {
			bad("shop %q is listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Token == "" {
			bad("shop %q has no token", s.Name)
		}
	}
	if c.History < 0 || c.HistoryOrders < 0 || (c.HistoryOrders > 0 && c.History <= 0) {
		bad("history needs History > 0 when HistoryOrders > 0, got %s and %d", c.History, c.HistoryOrders)
	}
	if c.LiveRate < 0 || c.LiveRate != c.LiveRate {
		bad("LiveRate must not be negative, got %v", c.LiveRate)
	}
	if c.MaxUpdates < 0 || c.MaxUpdates > MaxUpdatesLimit {
		bad("MaxUpdates must be in [0,%d], got %d", MaxUpdatesLimit, c.MaxUpdates)
	}
	if c.UpdateSpread < 0 || c.Late < 0 {
		bad("UpdateSpread and Late must not be negative, got %s and %s", c.UpdateSpread, c.Late)
	}
	if (c.ShopifyAccessTTL != 0 && c.ShopifyAccessTTL < time.Second) || (c.ShopifyRefreshTTL != 0 && c.ShopifyRefreshTTL < time.Second) {
		// expires_in counts whole seconds: less than one would state 0.
		bad("ShopifyAccessTTL and ShopifyRefreshTTL must be at least 1s (or 0 for the default), got %s and %s", c.ShopifyAccessTTL, c.ShopifyRefreshTTL)
	}
	if c.AmazonTokenTTL < 0 || c.AmazonAccessTTL < 0 {
		bad("AmazonTokenTTL and AmazonAccessTTL must not be negative, got %s and %s", c.AmazonTokenTTL, c.AmazonAccessTTL)
	}
	if _, ok := amazonTokenErrorBodies[c.AmazonTokenError]; !ok && c.AmazonTokenError != "" {
		bad("AmazonTokenError %q is not one of %v", c.AmazonTokenError, AmazonTokenErrors)
	}
	if c.MaxPageSize < 0 {
		bad("MaxPageSize must not be negative, got %d", c.MaxPageSize)
	}
	if err := c.RateLimit.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ShopifyCost.RestoreRate < 0 || c.ShopifyCost.RestoreRate != c.ShopifyCost.RestoreRate || c.ShopifyCost.MaxAvailable < 0 {
		bad("ShopifyCost needs RestoreRate >= 0 and MaxAvailable >= 0, got %v/%v", c.ShopifyCost.RestoreRate, c.ShopifyCost.MaxAvailable)
	}
	for _, sc := range c.Shops {
		if sc.ShopifyCost != nil && (sc.ShopifyCost.RestoreRate < 0 || sc.ShopifyCost.RestoreRate != sc.ShopifyCost.RestoreRate || sc.ShopifyCost.MaxAvailable < 0) {
			bad("shop %q: ShopifyCost needs RestoreRate >= 0 and MaxAvailable >= 0, got %v/%v", sc.Name, sc.ShopifyCost.RestoreRate, sc.ShopifyCost.MaxAvailable)
		}
		if sc.LiveRate < 0 || sc.LiveRate != sc.LiveRate || sc.HistoryOrders < 0 {
			bad("shop %q: LiveRate and HistoryOrders must not be negative, got %v and %d", sc.Name, sc.LiveRate, sc.HistoryOrders)
		}
	}
	if c.ShopifyLinePage < 0 || c.ShopifyLinePage > shopifyMaxFirst {
		bad("ShopifyLinePage must be in [0,%d], got %d", shopifyMaxFirst, c.ShopifyLinePage)
	}
	if err := c.Faults.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.ShopifyBulk.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("sim config: %w", errors.Join(errs...))
	}
	if c.MaxPageSize == 0 {
		c.MaxPageSize = 250
	}
	if c.Faults.HangFor == 0 {
		c.Faults.HangFor = 30 * time.Second
	}
	if c.AmazonTokenTTL == 0 {
		c.AmazonTokenTTL = 24 * time.Hour
	}
	if c.AmazonTokenError == "" {
		c.AmazonTokenError = AmazonTokenExpired
	}
	if c.AmazonAccessTTL == 0 {
		c.AmazonAccessTTL = amazonAccessTTL
	}
	if c.ShopifyAccessTTL == 0 {
		c.ShopifyAccessTTL = shopifyAccessTTL
	}
	if c.ShopifyRefreshTTL == 0 {
		c.ShopifyRefreshTTL = shopifyRefreshTTL
	}
	if c.ShopifyCost.MaxAvailable == 0 {
		c.ShopifyCost.MaxAvailable = 20 * c.ShopifyCost.RestoreRate
	}
	c.Shops = append([]ShopConfig(nil), c.Shops...) // the caller's config stays as it was
	for i, sc := range c.Shops {
		if sc.ShopifyCost != nil && sc.ShopifyCost.MaxAvailable == 0 {
			own := *sc.ShopifyCost
			own.MaxAvailable = 20 * own.RestoreRate
			c.Shops[i].ShopifyCost = &own
		}
	}
	if c.ShopifyLinePage == 0 {
		c.ShopifyLinePage = 3
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.ShopifyBulk = c.ShopifyBulk.withDefaults()
	c.Shops = append([]ShopConfig(nil), c.Shops...)
	return c, nil
}

// ParseShops reads "name:token,name:token" (the --shops flag format).
func ParseShops(s string) ([]ShopConfig, error) {
	var shops []ShopConfig
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, token, ok := strings.Cut(part, ":")
		if !ok || name == "" || token == "" {
			return nil, fmt.Errorf("shop %q is not name:token", name)
		}
		shops = append(shops, ShopConfig{Name: name, Token: token})
	}
	if len(shops) == 0 {
		return nil, fmt.Errorf("no shops in %q", s)
	}
	return shops, nil
}

// RegisterFlags binds the settings to fs with c's current values as defaults,
// so a CLI can do cfg := DefaultConfig(); cfg.RegisterFlags(fs); fs.Parse(...).
// pflag users can add it with pflag.CommandLine.AddGoFlagSet(fs).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.Seed, "seed", c.Seed, "random seed; same seed and clock give the same orders")
	fs.Func("shops", "shops as name:token,name:token (default "+shopsString(c.Shops)+")", func(s string) error {
		shops, err := ParseShops(s)
		if err == nil {
			c.Shops = shops
		}
		return err
	})
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "bearer token for /admin/... (empty disables the admin API)")
	fs.DurationVar(&c.History, "history", c.History, "how far back the order backlog reaches")
	fs.IntVar(&c.HistoryOrders, "history-orders", c.HistoryOrders, "backlog orders per shop")
	fs.Float64Var(&c.LiveRate, "live-rate", c.LiveRate, "new orders per second per shop")
	fs.IntVar(&c.MaxUpdates, "max-updates", c.MaxUpdates, "maximum updates per order")
	fs.DurationVar(&c.UpdateSpread, "update-spread", c.UpdateSpread, "updates happen within this time after creation")
	fs.DurationVar(&c.Late, "late", c.Late, "maximum visibility delay of a new version")
	fs.IntVar(&c.MaxPageSize, "max-page-size", c.MaxPageSize, "largest accepted limit")
	fs.Float64Var(&c.RateLimit.RPS, "rps", c.RateLimit.RPS, "per-shop rate limit in requests/s (0: unlimited)")
	fs.IntVar(&c.RateLimit.Burst, "burst", c.RateLimit.Burst, "per-shop rate limit burst")
	fs.Float64Var(&c.ShopifyCost.RestoreRate, "shopify-restore-rate", c.ShopifyCost.RestoreRate, "Shopify GraphQL surface: points restored per second per shop (0: unlimited)")
	fs.Float64Var(&c.ShopifyCost.MaxAvailable, "shopify-max-cost", c.ShopifyCost.MaxAvailable, "Shopify GraphQL surface: bucket size in points")
	fs.IntVar(&c.ShopifyLinePage, "shopify-line-page", c.ShopifyLinePage, "Shopify GraphQL surface: most lines per nested lineItems page")
	fs.Float64Var(&c.Faults.Err5xx, "fault-5xx", c.Faults.Err5xx, "rate of 503 answers")
	fs.Float64Var(&c.Faults.Hang, "fault-hang", c.Faults.Hang, "rate of hanging requests")
	fs.Float64Var(&c.Faults.Malformed, "fault-malformed", c.Faults.Malformed, "rate of malformed JSON bodies")
	fs.Float64Var(&c.Faults.EmptyPageWithToken, "fault-empty-page", c.Faults.EmptyPageWithToken, "rate of empty pages that carry a next token")
	fs.DurationVar(&c.Faults.HangFor, "hang-for", c.Faults.HangFor, "how long a hanging request hangs")
	fs.DurationVar(&c.ShopifyBulk.Duration, "shopify-bulk-duration", c.ShopifyBulk.Duration, "Shopify GraphQL surface: how long a bulk query runs at least (0: 2s)")
	fs.DurationVar(&c.ShopifyBulk.PerOrder, "shopify-bulk-per-order", c.ShopifyBulk.PerOrder, "Shopify GraphQL surface: bulk query time added per order")
	fs.Float64Var(&c.ShopifyBulk.FailRate, "shopify-bulk-fail", c.ShopifyBulk.FailRate, "Shopify GraphQL surface: rate of bulk queries that fail with partial data")
	fs.Float64Var(&c.ShopifyBulk.DropRate, "shopify-bulk-drop", c.ShopifyBulk.DropRate, "Shopify GraphQL surface: rate of bulk result downloads cut off halfway")
	fs.DurationVar(&c.ShopifyBulk.URLTTL, "shopify-bulk-url-ttl", c.ShopifyBulk.URLTTL, "Shopify GraphQL surface: lifetime of a signed bulk result URL (0: 1h)")
	fs.StringVar(&c.ShopifyBulk.Hostile, "shopify-bulk-hostile", c.ShopifyBulk.Hostile, "Shopify GraphQL surface: a hostile bulk case to play (endless_lines, endless_orders, count_lie, gzip_bomb, blank_lines, redirect, foreign_url, stall, never_completes)")
	fs.StringVar(&c.ShopifyBulk.Target, "shopify-bulk-target", c.ShopifyBulk.Target, "Shopify GraphQL surface: where -shopify-bulk-hostile redirect and foreign_url send the client")
	fs.DurationVar(&c.AmazonTokenTTL, "amazon-token-ttl", c.AmazonTokenTTL, "lifetime of the Amazon surface's pagination tokens (0: 24h)")
	fs.StringVar(&c.AmazonTokenError, "amazon-token-error", c.AmazonTokenError, "the Amazon surface's 400 for an expired pagination token, one of "+strings.Join(AmazonTokenErrors, ", ")+" (empty: expired)")
	fs.DurationVar(&c.AmazonAccessTTL, "amazon-access-ttl", c.AmazonAccessTTL, "how long the Amazon surface accepts an access token; expires_in still says 1h (0: 1h)")
	fs.DurationVar(&c.ShopifyAccessTTL, "shopify-access-ttl", c.ShopifyAccessTTL, "how long an expiring Shopify access token lives (0: 1h)")
	c.Webhooks.RegisterFlags(fs) // webhooks.go
}

func shopsString(shops []ShopConfig) string {
	names := make([]string, len(shops))
	for i, s := range shops {
		names[i] = s.Name + ":***"
	}
	return strings.Join(names, ",")
}
