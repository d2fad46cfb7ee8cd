package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScrapeSeries: samples with and without labels, label values with
// spaces, comments and broken values skipped.
func TestScrapeSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP ordersync_pages_total pages
# TYPE ordersync_pages_total counter
ordersync_pages_total{platform="a b"} 3
ordersync_pages_total 4
ordersync_status_pass_seconds 1.5e+01
ordersync_requests_total{platform="a"} NaNish
`)
	}))
	defer srv.Close()
	var got []string
	err := scrapeSeries(context.Background(), srv.URL, func(name, labels string, v float64) {
		got = append(got, fmt.Sprintf("%s|%s|%g|%s", name, labels, v, labelValue(labels, "platform")))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ordersync_pages_total|platform="a b"|3|a b`,
		`ordersync_pages_total||4|`,
		`ordersync_status_pass_seconds||15|`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
