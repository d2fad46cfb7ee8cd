package metrics_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/alerttest"
	"github.com/ordersync/ordersync/internal/metrics"
)

// fakeHealth answers Health with what is set, or fails.
type fakeHealth struct {
	mu   sync.Mutex
	all  []credentials.Status
	fail error
}

func (f *fakeHealth) set(all ...credentials.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all, f.fail = all, nil
}

func (f *fakeHealth) failWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakeHealth) Health(context.Context) ([]credentials.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	return append([]credentials.Status(nil), f.all...), nil
}

var t0 = time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)

func TestCredentialPollerExportsHealthAndKeepsItOnAFailedRead(t *testing.T) {
	h := &fakeHealth{}
	h.set(
		credentials.Status{Name: "shop-a", Kind: credentials.KindShopify, App: "app",
			AccessExpiresAt: t0.Add(time.Hour), RefreshExpiresAt: t0.Add(90 * 24 * time.Hour), LastRefreshAt: t0},
		credentials.Status{Name: "amazon-eu", Kind: credentials.KindLWA, App: "lwa",
			LastRefreshAt: t0.Add(-time.Hour), LastError: "refresh token refused: invalid_grant", NeedsReauthorization: true},
		credentials.Status{Name: "app", Kind: credentials.KindApp}, // no token: no series
	)
	clock := &fakeClock{now: t0}
	p := &metrics.CredentialPoller{Health: h.Health, Alerter: &alerttest.Recorder{}, Now: clock.Now}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(p))
	names := []string{
		"ordersync_credential_access_expiry_timestamp_seconds", "ordersync_credential_refresh_expiry_timestamp_seconds",
		"ordersync_credential_last_refresh_timestamp_seconds", "ordersync_credential_needs_reauthorization",
		"ordersync_credential_refresh_failing", "ordersync_credential_health_up", "ordersync_credential_health_timestamp_seconds",
		"ordersync_credential_health_reads_total",
	}
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Zero(t, n, "no read yet: no data rather than zeros")

	p.PollOnce(context.Background())
	want := func(up, ok, failed string) string {
		return `
# HELP ordersync_credential_access_expiry_timestamp_seconds When the stored credential's current access token expires (Unix time); absent when unknown. Refreshed before then.
# TYPE ordersync_credential_access_expiry_timestamp_seconds gauge
ordersync_credential_access_expiry_timestamp_seconds{credential="shop-a",kind="shopify"} 1.7956692e+09
# HELP ordersync_credential_refresh_expiry_timestamp_seconds When the stored credential's refresh token expires (Unix time); absent when it does not or is unknown (LWA). Past it, only a re-authorization mends the credential.
# TYPE ordersync_credential_refresh_expiry_timestamp_seconds gauge
ordersync_credential_refresh_expiry_timestamp_seconds{credential="shop-a",kind="shopify"} 1.8034416e+09
# HELP ordersync_credential_last_refresh_timestamp_seconds When the stored credential's access token was last obtained (refresh, install or import; Unix time).
# TYPE ordersync_credential_last_refresh_timestamp_seconds gauge
ordersync_credential_last_refresh_timestamp_seconds{credential="amazon-eu",kind="lwa"} 1.795662e+09
ordersync_credential_last_refresh_timestamp_seconds{credential="shop-a",kind="shopify"} 1.7956656e+09
# HELP ordersync_credential_needs_reauthorization 1 when the platform refused the stored credential's refresh token: only a re-install or re-authorization (or credentials import) mends it.
# TYPE ordersync_credential_needs_reauthorization gauge
ordersync_credential_needs_reauthorization{credential="amazon-eu",kind="lwa"} 1
ordersync_credential_needs_reauthorization{credential="shop-a",kind="shopify"} 0
# HELP ordersync_credential_refresh_failing 1 while the stored credential's last refresh failed (its last_error is set); a successful refresh clears it.
# TYPE ordersync_credential_refresh_failing gauge
ordersync_credential_refresh_failing{credential="amazon-eu",kind="lwa"} 1
ordersync_credential_refresh_failing{credential="shop-a",kind="shopify"} 0
# HELP ordersync_credential_health_up 1 if the last read of the stored credentials' metadata succeeded; when 0 the credential series keep the last read's values.
# TYPE ordersync_credential_health_up gauge
ordersync_credential_health_up ` + up + `
# HELP ordersync_credential_health_timestamp_seconds When the stored credentials' metadata was last read (Unix time).
# TYPE ordersync_credential_health_timestamp_seconds gauge
ordersync_credential_health_timestamp_seconds 1.7956656e+09
# HELP ordersync_credential_health_reads_total Reads of the stored credentials' metadata, by result (ok, error).
# TYPE ordersync_credential_health_reads_total counter
` + failed + `ordersync_credential_health_reads_total{result="ok"} ` + ok + `
`
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want("1", "1", "")), names...))

	// A failed read keeps the last values, says so, and counts the error.
	h.failWith(errors.New("store down"))
	clock.advance(30 * time.Second)
	p.PollOnce(context.Background())
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want("0", "1",
		`ordersync_credential_health_reads_total{result="error"} 1
`)), names...))
}

func TestCredentialPollerAlertsOncePerEpisode(t *testing.T) {
	ctx := context.Background()
	h := &fakeHealth{}
	alerts := &alerttest.Recorder{}
	clock := &fakeClock{now: t0}
	p := &metrics.CredentialPoller{Health: h.Health, Alerter: alerts, Now: clock.Now}
	healthy := credentials.Status{Name: "shop-a", Kind: credentials.KindShopify, App: "app",
		AccessExpiresAt: t0.Add(time.Hour), RefreshExpiresAt: t0.Add(90 * 24 * time.Hour), LastRefreshAt: t0}
	poll := func(s credentials.Status) {
		h.set(s)
		p.PollOnce(ctx)
		clock.advance(30 * time.Second)
	}
	poll(healthy)
	require.Empty(t, alerts.Keys())

	// Revoked: one alert however many polls see it.
	revoked := healthy
	revoked.LastError, revoked.NeedsReauthorization = "refresh token refused: invalid_grant", true
	for range 5 {
		poll(revoked)
	}
	require.Len(t, alerts.Keys(), 1)
	a := alerts.Alerts()[0]
	require.Equal(t, "credential", a.Kind)
	require.Equal(t, "credential/shop-a/reauthorize/1795665600", a.Key)
	require.Contains(t, a.Message, `"shop-a"`)
	require.Contains(t, a.Message, "re-authoriz")
	require.Contains(t, a.Message, "invalid_grant")

	// A re-install mends it; revoked again later is a new episode.
	healthy.LastRefreshAt = clock.Now()
	poll(healthy)
	revoked.LastRefreshAt = healthy.LastRefreshAt
	poll(revoked)
	poll(revoked)
	require.Len(t, alerts.Keys(), 2)

	// Failing refreshes alert once they kept failing for 10 minutes, not
	// for a blip that the next refresh mends.
	alerts.Reset()
	failing := healthy
	failing.LastError = "refresh at https://acme.myshopify.com/admin/oauth/access_token: HTTP 503"
	poll(failing)
	poll(healthy)
	for range 19 { // 9.5 minutes
		poll(failing)
	}
	require.Empty(t, alerts.Keys())
	poll(failing)
	poll(failing)
	require.Len(t, alerts.Keys(), 1)
	require.Contains(t, alerts.Alerts()[0].Key, "credential/shop-a/refresh_failing/")
	require.Contains(t, alerts.Alerts()[0].Message, "HTTP 503")

	// A refresh token inside a week of its expiry: once, and a delivery
	// that failed is tried again on the next poll.
	alerts.Reset()
	expiring := healthy
	expiring.RefreshExpiresAt = clock.Now().Add(6 * 24 * time.Hour)
	alerts.SetDown(true)
	poll(expiring)
	alerts.SetDown(false)
	require.Empty(t, alerts.Keys())
	poll(expiring)
	poll(expiring)
	require.Equal(t, []string{"credential/shop-a/refresh_expiring/" + strconv.FormatInt(expiring.RefreshExpiresAt.Unix(), 10)}, alerts.Keys())
	require.Contains(t, alerts.Alerts()[0].Message, "expires at")

	// A failed read neither ends nor repeats an episode.
	h.failWith(errors.New("store down"))
	p.PollOnce(ctx)
	poll(expiring)
	require.Len(t, alerts.Keys(), 1)

	// Removed, then back near expiry: a new episode (the credential is
	// another one by then).
	poll(credentials.Status{Name: "app", Kind: credentials.KindApp})
	poll(expiring)
	require.Len(t, alerts.Keys(), 2)
}

func TestRecorderCountsCredentialRefreshes(t *testing.T) {
	rec := metrics.New()
	rec.CredentialRefreshed("shop-a", credentials.KindShopify, credentials.RefreshOK)
	rec.CredentialRefreshed("shop-a", credentials.KindShopify, credentials.RefreshOK)
	rec.CredentialRefreshed("shop-a", credentials.KindShopify, credentials.RefreshRefused)
	var nilRec *metrics.Recorder
	nilRec.CredentialRefreshed("shop-a", credentials.KindShopify, credentials.RefreshFailed)
	require.NoError(t, testutil.GatherAndCompare(rec.Registry(), strings.NewReader(`
# HELP ordersync_credential_refreshes_total Refreshes of stored credentials this process made, by outcome (ok; failed: no usable answer; refused: the refresh token was refused, re-authorize).
# TYPE ordersync_credential_refreshes_total counter
ordersync_credential_refreshes_total{credential="shop-a",kind="shopify",outcome="ok"} 2
ordersync_credential_refreshes_total{credential="shop-a",kind="shopify",outcome="refused"} 1
`), "ordersync_credential_refreshes_total"))
}
