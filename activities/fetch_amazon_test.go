package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// stepClock is a clock a test moves by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// TestFetchPageRestartsAnAmazonWindowOneRequestPerSlot: FetchPage with the
// real Amazon connector against the simulator, whose page tokens lapse
// while the slice stalls and are refused with each text sellers report.
// Every request the seller sees was booked a slot of its own (the refusal
// and the restart are two requests, two slots: before, the restart was
// sent at once on the refusal's slot), and the window ends with every
// order in the store.
func TestFetchPageRestartsAnAmazonWindowOneRequestPerSlot(t *testing.T) {
	for _, text := range sim.AmazonTokenErrors {
		t.Run(text, func(t *testing.T) {
			ctx := context.Background()
			clk := &stepClock{t: time.Now().UTC().Truncate(time.Second)}
			s, err := sim.New(sim.Config{Seed: 7, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}},
				History: 24 * time.Hour, HistoryOrders: 200, MaxUpdates: 2, UpdateSpread: time.Hour, MaxPageSize: 100,
				AmazonTokenTTL: time.Minute, AmazonTokenError: text, Clock: clk.Now})
			require.NoError(t, err)
			srv, err := s.Start("127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			secret := filepath.Join(t.TempDir(), "lwa.json")
			require.NoError(t, os.WriteFile(secret, []byte(`{"client_id":"c","client_secret":"s","refresh_token":"acme-token"}`), 0o600))
			base := srv.ShopURL("acme") + "/amazon"
			f, err := config.Parse(fmt.Appendf(nil, "platforms:\n  amazon-acme:\n    kind: amazon\n    endpoint: %s\n    credentials: {file: %s}\n    page_size: 10\n    options:\n      marketplace_ids: [%s, %s, %s]\n      token_url: %s/auth/o2/token\n",
				base, secret, sim.AmazonMarketplaceIDs[0], sim.AmazonMarketplaceIDs[1], sim.AmazonMarketplaceIDs[2], base))
			require.NoError(t, err)
			p, _ := f.Get("amazon-acme")
			st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
			require.NoError(t, err)
			defer st.Close()
			slots := &fakeSlots{}
			limiters := NewLimiters()
			limiters.Shared = slots
			acts := &Activities{Store: st, Connectors: NewConnectorCache(f), Limiters: limiters}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(acts)

			from, to := clk.Now().Add(-20*time.Hour), clk.Now().Add(-3*time.Hour)
			in := FetchPageInput{Platform: p.Settings(), SliceID: "slice/amazon-acme/w", From: from, To: to, Page: 1}
			restarts := 0
			for ; in.Page < 100; in.Page++ {
				if in.Page == 3 || in.Page == 7 {
					clk.Add(2 * time.Minute) // the slice stalls past its token's lifetime
				}
				v, err := env.ExecuteActivity(acts.FetchPage, in)
				require.NoError(t, err, "page %d", in.Page)
				var r FetchPageResult
				require.NoError(t, v.Get(&r))
				if r.Fetched == 0 && r.NextToken != "" {
					restarts++
				}
				if r.NextToken == "" {
					break
				}
				in.Token = r.NextToken
			}
			require.Equal(t, 2, restarts, "each lapsed token restarted the window once")
			stats := s.Stats().Shops["acme"]
			require.EqualValues(t, 2, stats.BadRequests)
			require.Len(t, slots.rates, int(stats.Requests), "one request per booked slot")

			truth, err := s.Truth("acme", time.Time{})
			require.NoError(t, err)
			stored, err := st.OrderVersions(ctx, p.Name)
			require.NoError(t, err)
			want := 0
			for _, o := range truth.Orders {
				if !o.UpdatedAt.Before(from) && o.UpdatedAt.Before(to) {
					want++
					require.Equal(t, o.UpdatedAt, stored[o.ID].UTC(), "order %s", o.ID)
				}
			}
			require.Greater(t, want, 30, "several pages")
		})
	}
}
