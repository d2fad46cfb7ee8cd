package activities

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

// TestSplitLanes: every change of one order of the range is in one lane,
// lanes are in seq order and at most limit long, and together they hold
// exactly the changes up to the range's end, which is where a lane filled.
func TestSplitLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		lanes, limit, orders := 2+rng.IntN(6), 1+rng.IntN(5), 1+rng.IntN(12)
		var changes []store.Change
		seq := int64(rng.IntN(50))
		after := seq
		for range rng.IntN(60) {
			seq += 1 + int64(rng.IntN(3)) // gaps: a destination limited to some platforms
			changes = append(changes, store.Change{Seq: seq, Platform: "p", OrderID: fmt.Sprint(rng.IntN(orders))})
		}
		to, got := splitLanes(after, changes, lanes, limit)
		name := fmt.Sprintf("round %d: %d lanes of %d", round, lanes, limit)

		laneOfOrder := map[string]int{}
		var all []int64
		for _, lb := range got {
			require.NotEmpty(t, lb.Seqs, name)
			require.LessOrEqual(t, len(lb.Seqs), limit, name)
			require.True(t, slices.IsSorted(lb.Seqs), name)
			for _, s := range lb.Seqs {
				i := slices.IndexFunc(changes, func(c store.Change) bool { return c.Seq == s })
				o := changes[i].OrderID
				if l, ok := laneOfOrder[o]; ok {
					require.Equal(t, l, lb.Lane, "%s: order %s in two lanes", name, o)
				}
				laneOfOrder[o] = lb.Lane
				all = append(all, s)
			}
		}
		slices.Sort(all)
		var want []int64
		for _, c := range changes {
			if c.Seq <= to {
				want = append(want, c.Seq)
			}
		}
		require.Equal(t, want, all, "%s: the lanes hold the range, gap-free", name)
		if len(changes) == 0 {
			require.Equal(t, after, to)
			continue
		}
		if len(want) < len(changes) {
			// The range stopped at a change whose lane was full.
			next := changes[len(want)]
			l := LaneOf(next.Platform, next.OrderID, lanes)
			i := slices.IndexFunc(got, func(lb api.LaneBatch) bool { return lb.Lane == l })
			require.GreaterOrEqual(t, i, 0, name)
			require.Len(t, got[i].Seqs, limit, "%s: range cut before a change of a lane that is not full", name)
		}
	}
}

// laneStore holds three versions each of orders a..e of platform "shop",
// with an order of "other" after each round: seqs 1..18, every sixth is
// "other"'s.
func laneStore(t *testing.T) store.Store {
	t.Helper()
	st := feedStore(t, 0)
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	for v := range 3 {
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			_, err := st.UpsertOrders(context.Background(), []connectors.Order{{Platform: "shop", ID: id, Status: fmt.Sprint("v", v),
				Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at.Add(time.Duration(v) * time.Minute)}})
			require.NoError(t, err)
		}
		_, err := st.UpsertOrders(context.Background(), []connectors.Order{{Platform: "other", ID: fmt.Sprint(v), Status: "paid",
			Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at}})
		require.NoError(t, err)
	}
	return st
}

func TestWebhookDeliveryInLanes(t *testing.T) {
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := laneStore(t)
	a := webhookActivities(t, st, srv.URL)
	ctx := context.Background()

	next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", Limit: 4, Lanes: 3})
	require.NoError(t, err)
	require.Empty(t, next.Seqs)
	require.NotEmpty(t, next.Lanes)
	for _, lb := range next.Lanes {
		res, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: next.After, To: next.To},
			Expect: len(lb.Seqs), Lane: lb.Lane, Lanes: 3, Seqs: lb.Seqs})
		require.NoError(t, err)
		require.Equal(t, len(lb.Seqs), res.Delivered)
	}
	require.Len(t, rc.got, len(next.Lanes))
	laneOfOrder := map[string]int{}
	n := 0
	for i, b := range rc.got {
		lb := next.Lanes[i]
		require.Equal(t, fmt.Sprintf("oms-%d-%d-lane%dof3", lb.Seqs[0], next.To, lb.Lane+1), b.ID)
		require.Equal(t, []int{lb.Lane + 1, 3}, []int{b.Lane, b.Lanes})
		var seqs []int64
		for _, c := range b.Changes {
			seqs = append(seqs, c.Seq)
			require.Equal(t, "shop", c.Platform, "only the destination's platforms")
			if l, ok := laneOfOrder[c.OrderID]; ok {
				require.Equal(t, l, b.Lane, "order %s in two lanes", c.OrderID)
			}
			laneOfOrder[c.OrderID] = b.Lane
		}
		require.Equal(t, lb.Seqs, seqs, "the lane's changes, in seq order")
		n += len(seqs)
	}
	count, err := st.CountChanges(ctx, "shop", next.After, next.To)
	require.NoError(t, err)
	require.Equal(t, int64(n), count, "the lanes hold every change of the range")
}

func TestLaneRequestGuards(t *testing.T) {
	st := laneStore(t)
	a := webhookActivities(t, st, "http://127.0.0.1:1")
	ctx := context.Background()
	tests := []struct {
		name string
		req  api.DeliverRequest
		want string
		typ  string
	}{
		{"not a lane", api.DeliverRequest{SeqRange: api.SeqRange{To: 9}, Expect: 1, Lane: 3, Lanes: 3, Seqs: []int64{1}}, "lane 3 of 3 is not a lane", ErrPermanent},
		{"seqs outside the range", api.DeliverRequest{SeqRange: api.SeqRange{After: 2, To: 9}, Expect: 2, Lane: 0, Lanes: 2, Seqs: []int64{1, 3}}, "outside (2, 9]", ErrPermanent},
		{"seqs out of order", api.DeliverRequest{SeqRange: api.SeqRange{To: 9}, Expect: 2, Lane: 0, Lanes: 2, Seqs: []int64{3, 1}}, "not in order", ErrPermanent},
		{"count mismatch", api.DeliverRequest{SeqRange: api.SeqRange{To: 9}, Expect: 3, Lane: 0, Lanes: 2, Seqs: []int64{1, 2}}, "2 seqs for 3 changes", ErrPermanent},
		{"a seq of another platform", api.DeliverRequest{SeqRange: api.SeqRange{To: 9}, Expect: 2, Lane: 0, Lanes: 2, Seqs: []int64{1, 6}}, "listed 2, found 1", ErrChangesGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Destination = "oms"
			_, err := a.DeliverChanges(ctx, tc.req)
			require.ErrorContains(t, err, tc.want)
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr))
			require.Equal(t, tc.typ, appErr.Type())
			require.True(t, appErr.NonRetryable())
		})
	}
}
