package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/mock/gomock"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/store"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func testPlatform() config.Platform {
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.Endpoint, p.TaskQueue = "shop", "sim", "http://127.0.0.1:1/shops/x", "orders-shop"
	p.Credentials = config.CredentialRef{Env: "X"}
	p.RateLimit = config.RateLimit{RPS: 1000, Burst: 10}
	return p
}

type fixture struct {
	acts  *Activities
	conn  *MockConnector
	store *MockOrderStore
	env   *testsuite.TestActivityEnvironment
}

func newFixture(t *testing.T) *fixture {
	ctrl := gomock.NewController(t)
	f := &fixture{conn: NewMockConnector(ctrl), store: NewMockOrderStore(ctrl)}
	src := NewMockConnectorSource(ctrl)
	src.EXPECT().Connector(gomock.Any()).Return(f.conn, nil).AnyTimes()
	f.acts = &Activities{Store: f.store, Connectors: src, Limiters: NewLimiters()}
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestActivityEnvironment()
	f.env.RegisterActivity(f.acts)
	return f
}

func input() FetchPageInput {
	return FetchPageInput{Platform: testPlatform().Settings(), SliceID: "slice/shop/a-b", From: t0, To: t0.Add(time.Hour), Token: "tok", Page: 2}
}

func TestFetchPageStoresAndReturnsOnlyCounts(t *testing.T) {
	f := newFixture(t)
	orders := []connectors.Order{
		{ID: "1", UpdatedAt: t0.Add(time.Minute)},
		{ID: "2", UpdatedAt: t0.Add(2 * time.Hour)}, // outside the asked window: stored, counted
	}
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, req connectors.PageRequest) (connectors.Page, error) {
		require.NotNil(t, req.Meter, "cost-metered platforms book their points on the activity's meter")
		req.Meter = nil
		require.Equal(t, connectors.PageRequest{From: t0, To: t0.Add(time.Hour), Token: "tok", PageSize: 100, Page: 2}, req)
		return connectors.Page{Orders: orders, NextToken: "next"}, nil
	})
	f.store.EXPECT().UpsertOrders(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, got []connectors.Order) (store.UpsertResult, error) {
		require.Len(t, got, 2)
		for _, o := range got {
			require.Equal(t, "shop", o.Platform, "the platform name is set by the activity")
		}
		return store.UpsertResult{Inserted: 1, Unchanged: 1}, nil
	})
	val, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
	require.NoError(t, err)
	var res FetchPageResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, FetchPageResult{NextToken: "next", Fetched: 2, Inserted: 1, Unchanged: 1, OutsideRange: 1}, res)
}

func TestFetchPageClassifiesErrors(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		wantType     string
		nonRetryable bool
	}{
		{"rate limited", &connectors.RateLimitError{Platform: "shop", RetryAfter: 7 * time.Second}, ErrRateLimited, true},
		{"transient", &connectors.TransientError{Platform: "shop", Msg: "HTTP 503"}, ErrTransient, false},
		{"malformed", &connectors.MalformedError{Platform: "shop", Page: 2, Offset: 10, Err: errors.New("eof")}, ErrMalformed, false},
		{"permanent", &connectors.PermanentError{Platform: "shop", Status: 401, Msg: "bad token"}, ErrPermanent, true},
		{"unknown", errors.New("boom"), ErrTransient, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{}, tt.err)
			_, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, tt.wantType, app.Type())
			require.Equal(t, tt.nonRetryable, app.NonRetryable())
			require.Contains(t, app.Error(), "page 2 of slice/shop/a-b", "the error names page and slice")
			if tt.wantType == ErrRateLimited {
				require.Equal(t, 7*time.Second, app.NextRetryDelay(), "Retry-After is the wait before asking again")
			}
		})
	}
}

func TestFetchPageStoreFailureIsRetryable(t *testing.T) {
	f := newFixture(t)
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{Orders: []connectors.Order{{ID: "1", UpdatedAt: t0}}}, nil)
	f.store.EXPECT().UpsertOrders(gomock.Any(), gomock.Any()).Return(store.UpsertResult{}, errors.New("disk full"))
	_, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, ErrStore, app.Type())
	require.False(t, app.NonRetryable())
}

func TestFetchPageEmptyPageSkipsStore(t *testing.T) {
	f := newFixture(t)
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{NextToken: "more"}, nil)
	val, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
	require.NoError(t, err)
	var res FetchPageResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, FetchPageResult{NextToken: "more"}, res)
}

// TestFetchPageRateLimitIsAWaitNotAnAttempt: a 429 (or THROTTLED) fails
// the attempt as ErrRateLimited that the activity never retries (the
// workflow waits it out without counting an attempt), with the platform's
// wait, or one request's spacing at the rate in force when it states none,
// the attempt it refused, and the stated limit, which the next requests
// follow and the learned-limit gauge shows. Before, the 429 was a
// retryable error that used up the page's attempts.
func TestFetchPageRateLimitIsAWaitNotAnAttempt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rl       *connectors.RateLimitError
		wantWait time.Duration
	}{
		{"Retry-After", &connectors.RateLimitError{Platform: "shop", RetryAfter: 7 * time.Second, Limit: 0.4}, 7 * time.Second},
		{"only the stated rate (SP-API)", &connectors.RateLimitError{Platform: "shop", Limit: 0.25}, 4 * time.Second},
		{"nothing stated (THROTTLED without a wait)", &connectors.RateLimitError{Platform: "shop", Msg: "THROTTLED"}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := metrics.New()
			f.acts.Metrics = rec
			f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{}, tc.rl)
			_, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, ErrRateLimited, app.Type())
			require.True(t, app.NonRetryable(), "the activity never retries it: no attempt is used")
			require.Equal(t, tc.wantWait, app.NextRetryDelay())
			var answer RateLimitAnswer
			require.NoError(t, app.Details(&answer))
			require.Equal(t, RateLimitAnswer{Attempt: 1, Limit: tc.rl.Limit}, answer)
			rps, _ := f.acts.Limiters.Effective(testPlatform().Settings())
			if tc.rl.Limit > 0 {
				require.Equal(t, tc.rl.Limit, rps, "paced at the stated rate from now on")
				require.Equal(t, tc.rl.Limit, metricValue(t, rec, "ordersync_platform_rate_limit_learned", ""))
			} else {
				require.Equal(t, testPlatform().RateLimit.RPS, rps)
			}
			require.Equal(t, 1.0, metricValue(t, rec, "ordersync_api_errors_total", metrics.ClassRateLimited), "counted as a rate-limited API answer")
		})
	}
}

// metricValue reads a gauge or counter of platform "shop" from rec; class,
// when set, selects the class label.
func metricValue(t *testing.T, rec *metrics.Recorder, name, class string) float64 {
	t.Helper()
	families, err := rec.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "platform" && l.GetValue() != "shop") || (l.GetName() == "class" && l.GetValue() != class) {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s{platform=shop}", name)
	return 0
}

// Orders the database refused alone (store.UpsertResult.Rejected, the
// PostgreSQL backstop) count as rejected, like the orders screen refuses;
// the page succeeds.
func TestFetchPageCountsOrdersTheStoreRefusedAlone(t *testing.T) {
	f := newFixture(t)
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{Orders: []connectors.Order{
		{ID: "1", UpdatedAt: t0.Add(time.Minute)}, {ID: "2", UpdatedAt: t0.Add(time.Minute)}}}, nil)
	f.store.EXPECT().UpsertOrders(gomock.Any(), gomock.Any()).Return(store.UpsertResult{Inserted: 1,
		Rejected: []store.RejectedOrder{{Platform: "shop", ID: "2", Reason: "PostgreSQL 22021: invalid byte sequence"}}}, nil)
	val, err := f.env.ExecuteActivity(f.acts.FetchPage, input())
	require.NoError(t, err)
	var res FetchPageResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, FetchPageResult{Fetched: 2, Inserted: 1, Rejected: 1}, res)
}
