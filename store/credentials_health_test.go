package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/alerttest"
	"github.com/ordersync/ordersync/internal/metrics"
)

// outcomes records credentials.Options.OnRefresh.
type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) add(name string, kind credentials.Kind, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, name+"/"+string(kind)+"/"+outcome)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// TestCredentialHealthFromRealRefreshes: refreshes against a token
// endpoint over real HTTP (one fine, one whose answer is lost, one whose
// refresh token was revoked) are counted by outcome through OnRefresh, and
// the Manager's Health read by a worker's CredentialPoller alerts on the
// revoked one (re-authorize) and the failing one, once, quoting no secret;
// a re-install ends the episode.
func TestCredentialHealthFromRealRefreshes(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			skipUnavailable(t, b)
			ctx := context.Background()
			dsn := b.fresh(t)
			srv := newTokenServer(t, time.Hour, false)
			k := keyring(t, newKey(t))
			var seen outcomes
			m := manager(t, dsn, k, credentials.Options{OnRefresh: seen.add})
			install(t, m, srv, "shop-ok", true)
			install(t, m, srv, "shop-lost", true)
			_, revokedRT := install(t, m, srv, "shop-revoked", true)
			srv.mu.Lock()
			srv.refresh[revokedRT].revoked = true
			srv.mu.Unlock()

			_, err := source(t, m, "shop-ok").Secret(ctx)
			require.NoError(t, err)
			srv.dropNext = 1
			_, err = source(t, m, "shop-lost").Secret(ctx)
			require.Error(t, err)
			_, err = source(t, m, "shop-revoked").Secret(ctx)
			require.ErrorIs(t, err, credentials.ErrReauthorize)
			require.Equal(t, []string{"shop-ok/shopify/ok", "shop-lost/shopify/failed", "shop-revoked/shopify/refused"}, seen.list())

			// Another process (a worker without this cache) reads the health.
			alerts := &alerttest.Recorder{}
			p := &metrics.CredentialPoller{Health: manager(t, dsn, nil, credentials.Options{}).Health, Alerter: alerts,
				RefreshFailingFor: time.Nanosecond}
			p.PollOnce(ctx)
			time.Sleep(time.Millisecond)
			p.PollOnce(ctx)
			p.PollOnce(ctx)
			keys := alerts.Keys()
			require.Len(t, keys, 2, "%v", keys)
			// Re-authorization alerts at once, failing refreshes once they
			// kept failing (here: from the second read on).
			require.Contains(t, keys[0], "credential/shop-revoked/reauthorize/")
			require.Contains(t, alerts.Alerts()[0].Message, "Re-install the app")
			require.Contains(t, keys[1], "credential/shop-lost/refresh_failing/")
			for _, a := range alerts.Alerts() {
				require.Equal(t, "credential", a.Kind)
				srv.noSecretIn(t, "an alert", a.Message+a.Key)
			}

			// A re-install mends it: no new alert, and the episode is over.
			install(t, m, srv, "shop-revoked", false)
			p.PollOnce(ctx)
			require.Len(t, alerts.Keys(), 2)
		})
	}
}
