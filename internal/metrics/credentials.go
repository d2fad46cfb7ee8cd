package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Defaults of CredentialPoller.
const (
	// DefaultCredentialPollInterval is how often the stored credentials'
	// metadata is read: the store is read once per worker process per
	// interval whatever the number of credentials (pages of 1,000), and
	// access tokens live for an hour, so 30 s is fresh enough.
	DefaultCredentialPollInterval = 30 * time.Second
	// DefaultCredentialReadTimeout bounds one read of every credential's
	// metadata: a slow store costs the poll, never a hung loop.
	DefaultCredentialReadTimeout = 10 * time.Second
	// DefaultRefreshExpiryWarning is how long before its refresh token
	// expires a credential is alerted on: a week for an operator to have
	// the merchant re-authorize.
	DefaultRefreshExpiryWarning = 7 * 24 * time.Hour
	// DefaultRefreshFailingFor is how long refreshes must keep failing
	// before the alert: one failed refresh (an endpoint blip, a lost
	// answer) is retried and mended on its own within seconds.
	DefaultRefreshFailingFor = 10 * time.Minute
	// credentialAlertTimeout bounds one alert's delivery.
	credentialAlertTimeout = 10 * time.Second
)

// AlertKindCredential is the kind of the alerts CredentialPoller sends.
const AlertKindCredential = "credential"

// What a credential alert is about; the third part of its key.
const (
	credReauthorize     = "reauthorize"
	credRefreshFailing  = "refresh_failing"
	credRefreshExpiring = "refresh_expiring"
)

// Outcomes of ordersync_credential_refreshes_total (credentials.Options.OnRefresh).
const (
	RefreshOK      = credentials.RefreshOK
	RefreshFailed  = credentials.RefreshFailed
	RefreshRefused = credentials.RefreshRefused
)

// CredentialAlerter delivers a credential alert (activities.Alerter).
type CredentialAlerter interface {
	Alert(ctx context.Context, a api.Alert) error
}

// CredentialPoller reads every stored credential's metadata (never a
// secret) every Interval, exports it as a prometheus.Collector, and sends
// an alert per episode of trouble: a credential that needs
// re-authorization, refreshes failing for RefreshFailingFor, a refresh
// token expiring within RefreshExpiryWarning. A failed read keeps the last
// values (ordersync_credential_health_up says 0) and counts the error.
//
// Every worker process polls and alerts on its own. An alert's Key is the
// same in every process for one episode (credential, what, and the stored
// time it is about), so a receiver drops the copies by Idempotency-Key.
type CredentialPoller struct {
	// Health reads every credential (credentials.Manager.Health).
	Health func(ctx context.Context) ([]credentials.Status, error)
	// Alerter receives the alerts; nil logs them.
	Alerter CredentialAlerter
	// Interval between reads (DefaultCredentialPollInterval), ReadTimeout
	// of one read (DefaultCredentialReadTimeout).
	Interval, ReadTimeout time.Duration
	// RefreshExpiryWarning (DefaultRefreshExpiryWarning) and
	// RefreshFailingFor (DefaultRefreshFailingFor) set when alerts fire.
	RefreshExpiryWarning, RefreshFailingFor time.Duration
	Logger                                  *slog.Logger
	// Now and Sleep are the clock (time.Now, a timer), for tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	statuses []credentials.Status // token credentials of the last good read
	readAt   time.Time            // the last good read
	readOK   bool                 // the last read succeeded
	reads    map[string]int64     // by result
	episodes map[episodeKey]*episode
}

type episodeKey struct{ name, what string }

// episode is one stretch of a credential in trouble of one kind.
type episode struct {
	since   time.Time // when this process first saw it
	alerted bool      // the alert was delivered
}

// credDesc describes a per-credential series.
func credDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(Namespace+"_credential_"+name, help, []string{"credential", "kind"}, nil)
}

var (
	descCredAccessExp = credDesc("access_expiry_timestamp_seconds",
		"When the stored credential's current access token expires (Unix time); absent when unknown. Refreshed before then.")
	descCredRefreshExp = credDesc("refresh_expiry_timestamp_seconds",
		"When the stored credential's refresh token expires (Unix time); absent when it does not or is unknown (LWA). Past it, only a re-authorization mends the credential.")
	descCredLastRefresh = credDesc("last_refresh_timestamp_seconds",
		"When the stored credential's access token was last obtained (refresh, install or import; Unix time).")
	descCredReauth = credDesc("needs_reauthorization",
		"1 when the platform refused the stored credential's refresh token: only a re-install or re-authorization (or credentials import) mends it.")
	descCredFailing = credDesc("refresh_failing",
		"1 while the stored credential's last refresh failed (its last_error is set); a successful refresh clears it.")
	descCredUp = prometheus.NewDesc(Namespace+"_credential_health_up",
		"1 if the last read of the stored credentials' metadata succeeded; when 0 the credential series keep the last read's values.",
		nil, nil)
	descCredReadTime = prometheus.NewDesc(Namespace+"_credential_health_timestamp_seconds",
		"When the stored credentials' metadata was last read (Unix time).", nil, nil)
	descCredReads = prometheus.NewDesc(Namespace+"_credential_health_reads_total",
		"Reads of the stored credentials' metadata, by result (ok, error).", []string{"result"}, nil)
)

// Describe implements prometheus.Collector.
func (p *CredentialPoller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCredAccessExp, descCredRefreshExp, descCredLastRefresh, descCredReauth, descCredFailing,
		descCredUp, descCredReadTime, descCredReads} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the last good read.
func (p *CredentialPoller) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for result, n := range p.reads {
		ch <- prometheus.MustNewConstMetric(descCredReads, prometheus.CounterValue, float64(n), result)
	}
	if len(p.reads) == 0 {
		return // not read yet: no data rather than made-up zeros
	}
	ch <- prometheus.MustNewConstMetric(descCredUp, prometheus.GaugeValue, boolValue(p.readOK))
	if p.readAt.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(descCredReadTime, prometheus.GaugeValue, unixSeconds(p.readAt))
	for _, s := range p.statuses {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Name, string(s.Kind))
		}
		if !s.AccessExpiresAt.IsZero() {
			gauge(descCredAccessExp, unixSeconds(s.AccessExpiresAt))
		}
		if !s.RefreshExpiresAt.IsZero() {
			gauge(descCredRefreshExp, unixSeconds(s.RefreshExpiresAt))
		}
		if !s.LastRefreshAt.IsZero() {
			gauge(descCredLastRefresh, unixSeconds(s.LastRefreshAt))
		}
		gauge(descCredReauth, boolValue(s.NeedsReauthorization))
		gauge(descCredFailing, boolValue(s.LastError != ""))
	}
}

// Start reads at once, then every Interval until ctx ends; the returned
// channel closes when the loop ended.
func (p *CredentialPoller) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultCredentialPollInterval
	}
	go func() {
		defer close(done)
		for {
			p.PollOnce(ctx)
			if p.sleep(ctx, interval) != nil {
				return
			}
		}
	}()
	return done
}

// PollOnce reads every credential once and sends the alerts due.
func (p *CredentialPoller) PollOnce(ctx context.Context) {
	timeout := p.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultCredentialReadTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	all, err := p.Health(rctx)
	cancel()
	p.mu.Lock()
	if p.reads == nil {
		p.reads = map[string]int64{}
	}
	if err != nil {
		p.reads[resultError]++
		p.readOK = false
		p.mu.Unlock()
		if ctx.Err() == nil {
			p.logger().Warn("metrics: reading the stored credentials' health failed; keeping the last values", "error", err)
		}
		return
	}
	tokens := make([]credentials.Status, 0, len(all))
	for _, s := range all {
		if s.Kind != credentials.KindApp { // an app's client secret does not expire
			tokens = append(tokens, s)
		}
	}
	now := p.now()
	p.reads[resultOK]++
	p.readOK, p.readAt, p.statuses = true, now, tokens
	due := p.episodesDue(tokens, now)
	p.mu.Unlock()
	p.send(ctx, due)
}

// dueAlert is an alert to send and the episode it closes.
type dueAlert struct {
	key   episodeKey
	alert api.Alert
}

// episodesDue opens and closes episodes from one read and returns the
// alerts now due. Called with p.mu held.
func (p *CredentialPoller) episodesDue(tokens []credentials.Status, now time.Time) []dueAlert {
	warn := p.RefreshExpiryWarning
	if warn <= 0 {
		warn = DefaultRefreshExpiryWarning
	}
	failingFor := p.RefreshFailingFor
	if failingFor <= 0 {
		failingFor = DefaultRefreshFailingFor
	}
	if p.episodes == nil {
		p.episodes = map[episodeKey]*episode{}
	}
	seen := map[episodeKey]bool{}
	var due []dueAlert
	for _, s := range tokens {
		// Each condition is an episode while it holds; the alert goes out
		// once per episode, and again only after it ended and came back.
		conds := []struct {
			what  string
			holds bool
			wait  time.Duration
			about time.Time // the stored time the episode is about, for the key
			msg   string
		}{
			{credReauthorize, s.NeedsReauthorization, 0, s.LastRefreshAt,
				fmt.Sprintf("stored credential %s (%s) needs re-authorization: the platform refused its refresh token (%s). Re-install the app / have the merchant re-authorize (or ordersync credentials import %s); its platforms fail until then",
					textclip.Quote(s.Name), s.Kind, textclip.Message(strings.TrimPrefix(s.LastError, "refresh token refused: ")), textclip.Value(s.Name))},
			{credRefreshFailing, s.LastError != "" && !s.NeedsReauthorization, failingFor, s.LastRefreshAt,
				fmt.Sprintf("stored credential %s (%s): refreshes keep failing (last refresh %s): %s",
					textclip.Quote(s.Name), s.Kind, stamp(s.LastRefreshAt), textclip.Message(s.LastError))},
			{credRefreshExpiring, !s.RefreshExpiresAt.IsZero() && s.RefreshExpiresAt.Sub(now) < warn && !s.NeedsReauthorization, 0, s.RefreshExpiresAt,
				fmt.Sprintf("stored credential %s (%s): its refresh token expires at %s (in %s); refresh it before then or have the merchant re-authorize",
					textclip.Quote(s.Name), s.Kind, stamp(s.RefreshExpiresAt), max(0, s.RefreshExpiresAt.Sub(now)).Round(time.Minute))},
		}
		for _, c := range conds {
			k := episodeKey{s.Name, c.what}
			if !c.holds {
				continue
			}
			seen[k] = true
			e := p.episodes[k]
			if e == nil {
				e = &episode{since: now}
				p.episodes[k] = e
			}
			if e.alerted || now.Sub(e.since) < c.wait {
				continue
			}
			due = append(due, dueAlert{k, api.Alert{Kind: AlertKindCredential, Message: c.msg, At: now,
				Key: fmt.Sprintf("%s/%s/%s/%s", AlertKindCredential, s.Name, c.what, strconv.FormatInt(c.about.Unix(), 10))}})
		}
	}
	for k := range p.episodes {
		if !seen[k] {
			delete(p.episodes, k) // over (or the credential is gone)
		}
	}
	return due
}

// send delivers the due alerts, marking each episode alerted once
// delivered. After a failed delivery the rest wait for the next poll
// (a receiver that is down is not hammered, and a poll stays bounded).
func (p *CredentialPoller) send(ctx context.Context, due []dueAlert) {
	for _, d := range due {
		actx, cancel := context.WithTimeout(ctx, credentialAlertTimeout)
		err := p.alert(actx, d.alert)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				p.logger().Warn("credential alert not delivered; trying again next poll", "key", d.alert.Key, "error", err)
			}
			return
		}
		p.mu.Lock()
		if e := p.episodes[d.key]; e != nil {
			e.alerted = true
		}
		p.mu.Unlock()
	}
}

func (p *CredentialPoller) alert(ctx context.Context, a api.Alert) error {
	if p.Alerter == nil {
		p.logger().Error("ALERT "+a.Message, "kind", a.Kind, "key", a.Key)
		return nil
	}
	return p.Alerter.Alert(ctx, a)
}

// stamp is a time in an alert's text; "never" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func (p *CredentialPoller) now() time.Time { return clockNow(p.Now) }

func (p *CredentialPoller) sleep(ctx context.Context, d time.Duration) error {
	return clockSleep(ctx, p.Sleep, d)
}

func (p *CredentialPoller) logger() *slog.Logger { return loggerOr(p.Logger) }

// CredentialRefreshed counts one refresh of a stored credential by outcome
// (credentials.Options.OnRefresh); a nil Recorder counts nothing.
func (r *Recorder) CredentialRefreshed(name string, kind credentials.Kind, outcome string) {
	if r == nil {
		return
	}
	r.credRefresh.WithLabelValues(name, string(kind), outcome).Inc()
}
