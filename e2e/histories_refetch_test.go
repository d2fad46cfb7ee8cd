package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// refetchRecordRPS is the simulator's rate while the rate-limit wait is
// recorded: one request every 20 s, so the refetch that follows the
// request which took the bucket's one token is answered 429 however slow
// the machine is, and waits most of 20 s on its timer.
const refetchRecordRPS = 0.05

// TestRecordHistoriesRefetch records the Refetch workflow's replay
// histories from real runs, started as `orders refetch` starts them
// (orderops.Service): an order the platform has, stored
// (refetch_stored.json); an id the platform does not know
// (refetch_not_found.json); and an order whose first get-one call the
// platform answers 429, so the refetch waits on a durable timer and then
// stores it (refetch_rate_limit_wait.json). No cursor runs: the store
// lacks every order, and the refetches are the platform's only callers,
// so its rate-limit bucket is theirs alone. Like TestRecordHistories it
// runs only under ORDERSYNC_RECORD_HISTORIES (make histories), into the
// same new release folder.
func TestRecordHistoriesRefetch(t *testing.T) {
	parallel(t, light)
	write := releaseWriter(t)
	s := startSystem(t, recordSim(), recordPlatforms)
	ctx := context.Background()

	// The platform in the registry, where orderops reads its task queue and
	// settings; registered without the account service, which would start
	// its cursor.
	reg, ok := store.RegistryOf(s.store)
	require.True(t, ok, "the store keeps a registry")
	p, ok := s.file.Get("rec")
	require.True(t, ok)
	e, err := accounts.PlatformEntry(p, accounts.Active)
	require.NoError(t, err)
	_, err = reg.Put(ctx, e, 0)
	require.NoError(t, err)
	svc := &orderops.Service{Store: s.store, Registry: reg, Temporal: s.client}

	refetch := func(id string) (orderops.Refetch, []byte) {
		t.Helper()
		rs, err := svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: "rec", IDs: []string{id}})
		require.NoError(t, err)
		require.Len(t, rs, 1)
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		svc.Wait(wctx, rs)
		cancel()
		return rs[0], exportHistory(t, s.client, rs[0].WorkflowID, rs[0].RunID)
	}
	truth, err := s.sim.Truth("rec", s.sim.Now())
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(truth.Orders), 2)

	// Stored: the store lacked the order, and holds the platform's version
	// now.
	have := truth.Orders[0]
	r, h := refetch(have.ID)
	require.Equal(t, api.RefetchCreated, r.Outcome, "refetch of %s: %s", have.ID, r.Error)
	require.Zero(t, r.Waits)
	requireStored(t, s, have.ID, have.UpdatedAt)
	require.NotContains(t, string(h), "EVENT_TYPE_TIMER_STARTED", "no wait")
	write("refetch_stored.json", h)

	// Not found: an id of the simulator's form past its last order.
	const unknown = "1999999999"
	r, h = refetch(unknown)
	require.Equal(t, api.RefetchNotFound, r.Outcome, "refetch of %s: %s", unknown, r.Error)
	_, ok, err = s.store.GetOrder(ctx, "rec", unknown)
	require.NoError(t, err)
	require.False(t, ok, "nothing stored for an id the platform does not know")
	write("refetch_not_found.json", h)

	// The rate: one request every 20 s, its one token taken just before
	// the refetch asks, so the platform answers the refetch 429 with a
	// Retry-After; the workflow sleeps that long and its second call
	// stores the order.
	require.NoError(t, s.sim.SetRateLimit(sim.RateLimit{RPS: refetchRecordRPS, Burst: 1}))
	limited := truth.Orders[1]
	takeSimToken(t, s, "rec", "rec-token", limited.ID)
	before := s.sim.Stats().Shops["rec"].RateLimited
	r, h = refetch(limited.ID)
	require.Equal(t, api.RefetchCreated, r.Outcome, "refetch of %s: %s", limited.ID, r.Error)
	require.Positive(t, r.Waits, "the refetch waited for the platform's rate")
	require.Greater(t, s.sim.Stats().Shops["rec"].RateLimited, before, "the platform answered the refetch 429")
	requireStored(t, s, limited.ID, limited.UpdatedAt)
	require.Contains(t, string(h), "EVENT_TYPE_TIMER_FIRED", "the wait is a durable timer")
	write("refetch_rate_limit_wait.json", h)
}

// requireStored requires the store to hold the order at the platform's
// version seen before the refetch, or a newer one.
func requireStored(t *testing.T, s *system, id string, platform time.Time) {
	t.Helper()
	o, ok, err := s.store.GetOrder(context.Background(), "rec", id)
	require.NoError(t, err)
	require.True(t, ok, "order %s stored", id)
	require.False(t, o.UpdatedAt.Before(platform), "order %s: stored %s, the platform had %s", id, o.UpdatedAt, platform)
}

// takeSimToken asks the simulator's shop for an order directly until it
// answers 200, honouring its Retry-After: the answer took the bucket's one
// token, so the shop's next request is answered 429 until a token has
// refilled (1/rps later).
func takeSimToken(t *testing.T, s *system, shop, token, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequest(http.MethodGet, s.simSrv.URL+"/shops/"+shop+"/orders/"+id, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return
		case http.StatusTooManyRequests:
			secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
			require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
			require.True(t, time.Now().Add(time.Duration(secs)*time.Second).Before(deadline), "the simulator kept answering 429")
			time.Sleep(time.Duration(secs) * time.Second)
		default:
			t.Fatalf("the simulator answered %d to a get-one request for %s", resp.StatusCode, id)
		}
	}
}
