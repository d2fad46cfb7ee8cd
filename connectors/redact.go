package connectors

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strings"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

// Redacted replaces a secret in connector error messages.
const Redacted = "[redacted]"

// minSecretLen keeps short values (a "true", a user name like "api") from
// being scrubbed out of every message; real secrets are far longer.
const minSecretLen = 6

// Connector errors travel into Temporal history (activity failures, dead
// letters, alerts), where secrets must never go. Platforms do quote the
// credential they rejected ("invalid API key sk_..."), and a failed request's
// error repeats its URL, query-string credentials included. So every error a
// connector returns passes through a redactor that knows the platform's
// secret in all the forms it is sent in.

// redactingConnector scrubs the platform's secrets from every error: the
// ones its Source handed out recently (asked when the error happens, as
// secrets rotate) and tokens the connector obtained at run time.
type redactingConnector struct {
	inner    Connector
	src      credentials.Source
	platform config.Platform // for the canonical form of the orders it returns
}

func (c redactingConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	p, err := c.inner.ListOrders(ctx, req)
	if err == nil {
		canonicalizing(c.platform, p.Orders)
		return p, nil
	}
	return p, redactError(err, c.replacer())
}

// GetOrder fetches one order when the kind can (OrderGetter), with errors
// scrubbed as ListOrders' are.
func (c redactingConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	g, ok := c.inner.(OrderGetter)
	if !ok {
		return Order{}, &PermanentError{Msg: "this kind has no get-one-order call"}
	}
	o, err := g.GetOrder(ctx, req)
	if err == nil {
		o.Canonical = Canonical(c.platform, o)
		return o, nil
	}
	return o, redactError(err, c.replacer())
}

// replacer scrubs the secrets known now.
func (c redactingConnector) replacer() *strings.Replacer {
	var runtime []string
	if rs, ok := c.inner.(runtimeSecrets); ok {
		// Tokens obtained at run time (OAuth access tokens) are secrets
		// too: a platform may quote the one it refused.
		runtime = rs.runtimeSecrets()
	}
	return secretsReplacer(c.src.Recent(), runtime)
}

// runtimeSecrets is implemented by connectors that obtain secrets while
// running, beyond the configured credential.
type runtimeSecrets interface {
	runtimeSecrets() []string
}

// secretsReplacer replaces every form of the configured secrets (see
// secretForms) and each runtime token as it is; nil when there is none.
func secretsReplacer(secrets, runtime []string) *strings.Replacer {
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if len(f) >= minSecretLen && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			add(f)
		}
	}
	for _, t := range runtime {
		add(t)
	}
	if len(forms) == 0 {
		return nil
	}
	// Longest first, so a longer form is replaced before a shorter one
	// inside it.
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// secretForms lists the strings a secret may appear as on the wire: the
// secret itself, each string of a JSON secret (client_secret,
// refresh_token, consumer_key, ...), each half of a user:password pair,
// their URL-query and Basic-auth encodings. Longest first, so a longer form
// is replaced before a shorter one inside it.
func secretForms(secret string) []string {
	parts := []string{secret}
	var obj map[string]any
	if json.Unmarshal([]byte(secret), &obj) == nil {
		var vals []string
		for _, v := range obj {
			if s, ok := v.(string); ok {
				vals = append(vals, strings.TrimSpace(s))
			}
		}
		sort.Strings(vals)
		parts = append(parts, vals...)
		for _, a := range vals {
			for _, b := range vals {
				if a != b {
					parts = append(parts, a+":"+b) // Basic auth of key:secret pairs
				}
			}
		}
	}
	if user, pass, ok := strings.Cut(secret, ":"); ok {
		parts = append(parts, user, pass)
	}
	seen := map[string]bool{}
	var forms []string
	for _, p := range parts {
		for _, f := range []string{p, url.QueryEscape(p), base64.StdEncoding.EncodeToString([]byte(p))} {
			if len(f) >= minSecretLen && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return forms
}

// redactError returns err with every secret scrubbed from its message. The
// original stays reachable through Unwrap, so errors.As still finds the
// error class (rate limit, permanent, malformed) that drives retries.
func redactError(err error, r *strings.Replacer) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	clean := r.Replace(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
