package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// AdminClient reads a running simulator's ground truth and counters, for
// tests and `ordersync verify`.
type AdminClient struct {
	// BaseURL is the simulator's base URL, e.g. http://127.0.0.1:8780.
	BaseURL string
	// Token is the simulator's AdminToken.
	Token string
	// HTTPClient defaults to a client with a one-minute timeout.
	HTTPClient *http.Client
}

// Admin returns a client for this server's admin API.
func (sv *Server) Admin(token string) *AdminClient {
	return &AdminClient{BaseURL: sv.URL, Token: token}
}

// Truth returns a shop's ground truth as of the simulator's now.
func (c *AdminClient) Truth(ctx context.Context, shop string) (*Truth, error) {
	return c.TruthAsOf(ctx, shop, time.Time{})
}

// TruthAsOf returns a shop's ground truth as of a past instant (zero: now).
func (c *AdminClient) TruthAsOf(ctx context.Context, shop string, asOf time.Time) (*Truth, error) {
	return c.truth(ctx, shop, asOf, false)
}

// TruthWithLines returns a shop's ground truth as of asOf (zero: now)
// with every order's line items.
func (c *AdminClient) TruthWithLines(ctx context.Context, shop string, asOf time.Time) (*Truth, error) {
	return c.truth(ctx, shop, asOf, true)
}

func (c *AdminClient) truth(ctx context.Context, shop string, asOf time.Time, withLines bool) (*Truth, error) {
	q := url.Values{}
	if !asOf.IsZero() {
		q.Set("as_of", asOf.UTC().Format(time.RFC3339Nano))
	}
	if withLines {
		q.Set("lines", "true")
	}
	var t Truth
	if err := c.get(ctx, "/admin/shops/"+url.PathEscape(shop)+"/truth", q, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Stats returns every shop's counters.
func (c *AdminClient) Stats(ctx context.Context) (*Stats, error) {
	var s Stats
	if err := c.get(ctx, "/admin/stats", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (c *AdminClient) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, q, nil, out)
}

func (c *AdminClient) post(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("sim admin: POST %s: %w", path, err)
	}
	return c.do(ctx, http.MethodPost, path, nil, b, out)
}

// do sends one admin request (a JSON body when body is not nil) and
// decodes the answer into out (nil: the answer is not read).
func (c *AdminClient) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("sim admin: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("sim admin: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e errorBody
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("sim admin: %s %s: HTTP %d: %s", method, path, resp.StatusCode, clip(e.Error))
		}
		return fmt.Errorf("sim admin: %s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("sim admin: %s %s: decode: %w", method, path, err)
	}
	return nil
}
