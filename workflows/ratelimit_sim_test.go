package workflows_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/workflows"
)

// countedSlots are shared request slots that are always free and count
// their bookings, at the rate each was booked at.
type countedSlots struct {
	mu    sync.Mutex
	rates []float64
}

func (c *countedSlots) Reserve(_ context.Context, _ string, rps float64, _ int, _ time.Duration) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rates = append(c.rates, rps)
	return 0, nil
}

func (c *countedSlots) Close() error { return nil }

func (c *countedSlots) booked() []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]float64(nil), c.rates...)
}

// TestSliceAboveTheSellersRealRateCompletes: an Amazon platform configured
// at 25 requests/s against a simulated seller whose real plan is 20/s (burst
// 1, stated in x-amzn-RateLimit-Limit on every answer, 429s included). The
// real FetchPage activity and connector run under the workflow; the
// simulator's clock is the workflow's, so its plan refills only while the
// slice waits. Pages are answered 429 first; each 429 is waited out
// on a durable timer, the slice completes with every order of its window
// and nothing is dead-lettered, although retries is 0 (issue 23, item 6:
// before, the 429s used up the attempts). The stated rate is learned.
func TestSliceAboveTheSellersRealRateCompletes(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(60 * time.Second)
	now := time.Now().UTC().Truncate(time.Second)
	env.SetStartTime(now)

	s, err := sim.New(sim.Config{Seed: 23, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}},
		History: 24 * time.Hour, HistoryOrders: 300, MaxUpdates: 2, UpdateSpread: time.Hour, MaxPageSize: 100,
		RateLimit: sim.RateLimit{RPS: 20, Burst: 1}, Clock: env.Now})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	rec := metrics.New()
	slots := &countedSlots{}
	limiters := activities.NewLimiters()
	limiters.Shared = slots
	declared := &config.File{}
	real := &activities.Activities{Store: st, Connectors: activities.NewConnectorCache(declared), Limiters: limiters, Metrics: rec}
	workflows.Register(env)
	env.RegisterActivity(real)
	var deadLetters []api.DeadLetterEntry
	env.OnActivity(real.RecordDeadLetter, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecordDeadLetterInput) error {
			deadLetters = append(deadLetters, in.Entry)
			return nil
		}).Maybe()

	secret := filepath.Join(t.TempDir(), "lwa.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"client_id":"c","client_secret":"s","refresh_token":"acme-token"}`), 0o600))
	base := ts.URL + "/shops/acme/amazon"
	p := testPlatform(t)
	p.Name, p.Kind = "amazon-acme", "amazon"
	p.RateLimit = config.RateLimit{RPS: 25, Burst: 1} // above the seller's real 20/s
	p.Retries, p.PageSize, p.Overlap = 0, 5, 0
	// The identity is the worker's (the registry's), never the input's.
	declared.Platforms = []config.Platform{{Name: p.Name, Kind: "amazon", Endpoint: base, Credentials: config.CredentialRef{File: secret},
		Options: map[string]any{"marketplace_ids": []any{sim.AmazonMarketplaceIDs[0], sim.AmazonMarketplaceIDs[1], sim.AmazonMarketplaceIDs[2]},
			"token_url": base + "/auth/o2/token"}}}

	start, end := now.Add(-12*time.Hour), now.Add(-3*time.Hour)
	env.ExecuteWorkflow(workflows.FetchSlice, api.SliceInput{Platform: p, Start: start, End: end})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res api.SliceResult
	require.NoError(t, env.GetWorkflowResult(&res))

	require.Equal(t, api.SliceCompleted, res.Outcome, res.Error)
	require.Empty(t, deadLetters)
	require.Equal(t, 20.0, res.StatedRate, "the seller's stated plan reaches the slice's result (and the cursor's status)")
	stats := s.Stats().Shops["acme"]
	require.Positive(t, stats.RateLimited, "the seller's plan refused requests")
	t.Logf("%d pages, %d requests, %d answered 429", res.Pages, stats.Requests, stats.RateLimited)
	require.Greater(t, res.Pages, 10)

	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	stored, err := st.OrderVersions(context.Background(), p.Name)
	require.NoError(t, err)
	want := 0
	for _, o := range truth.Orders {
		if !o.UpdatedAt.Before(start) && o.UpdatedAt.Before(end) {
			want++
			require.Contains(t, stored, o.ID, "order %s of the window is stored", o.ID)
		}
	}
	require.Greater(t, want, 10)
	rps, _ := real.Limiters.Effective(p)
	require.Equal(t, 20.0, rps, "paced at the seller's stated plan, below the configured 25/s")
	booked := slots.booked()
	require.Len(t, booked, int(stats.Requests), "one request per booked slot")
	require.Equal(t, 25.0, booked[0], "the first request knows only the setting")
	require.Equal(t, 20.0, booked[len(booked)-1], "later ones book at the stated plan")
}
