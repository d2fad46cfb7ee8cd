package config

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// EnvPrefix prefixes every process setting: ORDERSYNC_TEMPORAL_ADDRESS, ...
const EnvPrefix = "ORDERSYNC"

// Process holds the settings of one ordersync process, read from the
// environment. Platform settings live in the platforms file instead.
type Process struct {
	// TemporalAddress is the frontend host:port of the Temporal cluster.
	TemporalAddress string `envconfig:"TEMPORAL_ADDRESS" default:"127.0.0.1:7233"`
	// TemporalNamespace holds every ordersync workflow.
	TemporalNamespace string `envconfig:"TEMPORAL_NAMESPACE" default:"default"`
	// TLS for self-hosted clusters with mTLS or Temporal Cloud.
	TemporalTLSCert       string `envconfig:"TEMPORAL_TLS_CERT"`
	TemporalTLSKey        string `envconfig:"TEMPORAL_TLS_KEY"`
	TemporalTLSCA         string `envconfig:"TEMPORAL_TLS_CA"`
	TemporalTLSServerName string `envconfig:"TEMPORAL_TLS_SERVER_NAME"`
	// TemporalTLS forces TLS without client certificates (Temporal Cloud API keys).
	TemporalTLS bool `envconfig:"TEMPORAL_TLS"`
	// TemporalAPIKey authenticates to Temporal Cloud; implies TLS.
	TemporalAPIKey string `envconfig:"TEMPORAL_API_KEY"`

	// StoreDSN selects the order store: a SQLite path (sqlite:///path or
	// file.db) or a PostgreSQL URL (postgres://...).
	StoreDSN string `envconfig:"STORE_DSN" default:"sqlite://.ordersync/orders.db"`
	// PlatformsFile is the YAML file with the default block and the platforms.
	PlatformsFile string `envconfig:"PLATFORMS_FILE" default:"platforms.yaml"`
	// DataDir holds the dev server's database and logs.
	DataDir string `envconfig:"DATA_DIR" default:".ordersync"`
	// MetricsAddress serves Prometheus metrics from workers; empty disables.
	MetricsAddress string `envconfig:"METRICS_ADDRESS" default:"127.0.0.1:9464"`
	// MetricsQueryRate is the most workflow queries per second a worker's
	// status gauges may send (metrics.DefaultQueryRate explains the 20): a
	// fleet's gauges then refresh more slowly instead of loading Temporal.
	// It must be above 0: the status gauges carry the lag and dead-letter
	// alerts, so there is no setting that silently drops them.
	MetricsQueryRate float64 `envconfig:"METRICS_QUERY_RATE" default:"20"`
	// AlertWebhook receives a JSON POST for every alert; empty logs alerts.
	AlertWebhook string `envconfig:"ALERT_WEBHOOK"`
	// MaxFutureSkew is how far ahead of now an order's updated_at may lie
	// and still be stored as its newest version; platform versions stamped
	// further ahead are set aside and counted, stored ones stop blocking.
	MaxFutureSkew time.Duration `envconfig:"MAX_FUTURE_SKEW" default:"5m"`
	// ChangeRetention is how long the change feed keeps a change that every
	// destination has acknowledged; an unacknowledged change is never
	// removed, however old.
	ChangeRetention time.Duration `envconfig:"CHANGE_RETENTION" default:"168h"`
	// DeploymentName and BuildID make `ordersync worker` a version of a
	// Temporal Worker Deployment (worker versioning): set both or neither.
	// The --deployment-name and --build-id flags override them, so the
	// worker checks the pair (DeploymentSettings) once flags are applied.
	DeploymentName string `envconfig:"DEPLOYMENT_NAME"`
	BuildID        string `envconfig:"BUILD_ID"`
	// LogLevel is debug, info, warn or error; LogFormat is text or json.
	LogLevel  string `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat string `envconfig:"LOG_FORMAT" default:"text"`

	// APIToken (or the file APITokenFile holds) is the bearer token every
	// request to `ordersync serve` must carry; serve refuses to start
	// without one. Set one of the two, not both.
	APIToken     string `envconfig:"API_TOKEN"`
	APITokenFile string `envconfig:"API_TOKEN_FILE"`
	// APIListen is the address `ordersync serve` listens on: loopback by
	// default, since it speaks plaintext HTTP (put TLS in front).
	APIListen string `envconfig:"API_LISTEN" default:"127.0.0.1:8790"`
	// OAuthFile, when set, makes `ordersync serve` onboard accounts by
	// OAuth (Shopify's app install, Amazon's website authorization): the
	// onboarding file (package onboarding) names the public URL, the
	// stored apps and the settings of new accounts.
	OAuthFile string `envconfig:"OAUTH_FILE"`
}

// LoadProcess reads the process settings from the environment.
func LoadProcess() (Process, error) {
	var p Process
	if err := envconfig.Process(EnvPrefix, &p); err != nil {
		return p, fmt.Errorf("environment: %w", err)
	}
	var problems []string
	switch strings.ToLower(p.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		problems = append(problems, fmt.Sprintf("%s_LOG_LEVEL: %q is not one of debug, info, warn, error", EnvPrefix, p.LogLevel))
	}
	switch strings.ToLower(p.LogFormat) {
	case "text", "json":
	default:
		problems = append(problems, fmt.Sprintf("%s_LOG_FORMAT: %q is not text or json", EnvPrefix, p.LogFormat))
	}
	if (p.TemporalTLSCert == "") != (p.TemporalTLSKey == "") {
		problems = append(problems, fmt.Sprintf("%s_TEMPORAL_TLS_CERT and %s_TEMPORAL_TLS_KEY must be set together", EnvPrefix, EnvPrefix))
	}
	if p.MaxFutureSkew <= 0 || p.MaxFutureSkew > 24*time.Hour {
		problems = append(problems, fmt.Sprintf("%s_MAX_FUTURE_SKEW: %s is not above 0 and at most 24h", EnvPrefix, p.MaxFutureSkew))
	}
	if !(p.MetricsQueryRate > 0) || math.IsInf(p.MetricsQueryRate, 1) {
		problems = append(problems, fmt.Sprintf("%s_METRICS_QUERY_RATE: %v is not a number of queries per second above 0 (default 20)", EnvPrefix, p.MetricsQueryRate))
	}
	if p.ChangeRetention < 0 {
		problems = append(problems, fmt.Sprintf("%s_CHANGE_RETENTION: %s is negative", EnvPrefix, p.ChangeRetention))
	}
	if p.TemporalAddress == "" {
		problems = append(problems, fmt.Sprintf("%s_TEMPORAL_ADDRESS: must not be empty", EnvPrefix))
	}
	if len(problems) > 0 {
		return p, fmt.Errorf("environment:\n  %s", strings.Join(problems, "\n  "))
	}
	return p, nil
}

// UsesTLS reports whether the Temporal connection needs TLS.
func (p Process) UsesTLS() bool {
	return p.TemporalTLS || p.TemporalAPIKey != "" || p.TemporalTLSCert != "" || p.TemporalTLSCA != ""
}

// MinAPITokenLength is the shortest bearer token serve accepts: a short
// token can be guessed (`openssl rand -hex 32` makes a good one).
const MinAPITokenLength = 16

// maxAPITokenFile bounds the token file read: a token is a line, not a
// file to slurp.
const maxAPITokenFile = 4 << 10

// ReadAPIToken returns the HTTP API's bearer token from ORDERSYNC_API_TOKEN
// or the file ORDERSYNC_API_TOKEN_FILE names (surrounding white space
// trimmed). The error names the variable and never quotes the token.
func (p Process) ReadAPIToken() (string, error) {
	var tok string
	switch {
	case p.APIToken != "" && p.APITokenFile != "":
		return "", fmt.Errorf("%s_API_TOKEN and %s_API_TOKEN_FILE are both set; set one", EnvPrefix, EnvPrefix)
	case p.APIToken != "":
		tok = strings.TrimSpace(p.APIToken)
	case p.APITokenFile != "":
		fh, err := os.Open(p.APITokenFile)
		if err != nil {
			return "", fmt.Errorf("%s_API_TOKEN_FILE: %w", EnvPrefix, err)
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, maxAPITokenFile+1))
		if err != nil {
			return "", fmt.Errorf("%s_API_TOKEN_FILE: read %s: %w", EnvPrefix, p.APITokenFile, err)
		}
		if len(b) > maxAPITokenFile {
			return "", fmt.Errorf("%s_API_TOKEN_FILE: %s is larger than %d bytes; it should hold the token only", EnvPrefix, p.APITokenFile, maxAPITokenFile)
		}
		tok = strings.TrimSpace(string(b))
	default:
		return "", fmt.Errorf("no API token: set %s_API_TOKEN or %s_API_TOKEN_FILE (e.g. `export %s_API_TOKEN=$(openssl rand -hex 32)`)", EnvPrefix, EnvPrefix, EnvPrefix)
	}
	switch {
	case len(tok) < MinAPITokenLength:
		return "", fmt.Errorf("the API token is %d characters; it needs at least %d (e.g. `openssl rand -hex 32`)", len(tok), MinAPITokenLength)
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("the API token holds white space or control characters; a bearer token is one word (e.g. `openssl rand -hex 32`)")
	}
	return tok, nil
}

// DefaultStoreDSN is the store a process opens without ORDERSYNC_STORE_DSN
// (the StoreDSN default above): a SQLite file of this directory, right for
// `ordersync dev`, wrong for a fleet, whose workers must share one store.
const DefaultStoreDSN = "sqlite://.ordersync/orders.db"

// DefaultStore reports whether the process uses DefaultStoreDSN.
func (p Process) DefaultStore() bool { return p.StoreDSN == DefaultStoreDSN }

// StoreLocation names the store a DSN opens, for a log line: the scheme and
// the SQLite file's absolute path, or the PostgreSQL host, port and
// database. It never carries the user, the password or the parameters.
func StoreLocation(dsn string) string {
	scheme, rest, hasScheme := strings.Cut(dsn, "://")
	switch {
	case hasScheme && strings.EqualFold(scheme, "sqlite"), !hasScheme && strings.HasSuffix(dsn, ".db"):
		path := dsn
		if hasScheme {
			path = rest
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "sqlite://" + path
	case hasScheme && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")):
		u, err := url.Parse(dsn)
		if err != nil {
			return strings.ToLower(scheme) + "://(unparseable DSN)"
		}
		return strings.ToLower(scheme) + "://" + u.Host + u.Path
	case hasScheme:
		return "(unsupported scheme " + strconv.Quote(scheme) + ")"
	}
	return "(unrecognized DSN)"
}
