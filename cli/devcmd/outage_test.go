package devcmd

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDemoOutage: the demo's failing shop answers 503 for its bad hour
// until the outage ends, and everything else passes through, so `make run`
// has dead letters to show for a while (the seven deadletter/* examples
// answered "workflow not found").
func TestDemoOutage(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	now := t0
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	o := outage{shop: "umbrella", from: t0.Add(-30 * time.Hour), to: t0.Add(-29 * time.Hour), until: t0.Add(10 * time.Minute),
		now: func() time.Time { return now }, next: next}
	get := func(shop string, from, to time.Time) int {
		q := url.Values{"updated_from": {from.Format(time.RFC3339)}, "updated_to": {to.Format(time.RFC3339)}, "page_token": {"x"}}
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest("GET", "/shops/"+shop+"/orders?"+q.Encode(), nil))
		if rec.Code == http.StatusServiceUnavailable && !strings.Contains(rec.Body.String(), "demo outage") {
			t.Errorf("503 without saying why: %s", rec.Body.String())
		}
		return rec.Code
	}
	bad := t0.Add(-30*time.Hour + 10*time.Minute)
	for _, tc := range []struct {
		name     string
		shop     string
		from, to time.Time
		at       time.Time
		want     int
	}{
		{"a slice in the bad hour", "umbrella", bad, bad.Add(20 * time.Minute), t0, 503},
		{"a slice overlapping its start", "umbrella", bad.Add(-20 * time.Minute), bad.Add(-5 * time.Minute), t0.Add(9 * time.Minute), 503},
		{"a slice before it", "umbrella", t0.Add(-31 * time.Hour), t0.Add(-30 * time.Hour), t0, 200},
		{"a slice after it", "umbrella", t0.Add(-29 * time.Hour), t0.Add(-28 * time.Hour), t0, 200},
		{"another shop", "acme", bad, bad.Add(20 * time.Minute), t0, 200},
		{"after the outage", "umbrella", bad, bad.Add(20 * time.Minute), t0.Add(10 * time.Minute), 200},
	} {
		now = tc.at
		if got := get(tc.shop, tc.from, tc.to); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
