package main

import (
	"context"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync/internal/cluster"
)

// What the Temporal server was asked over B13's window, from its own
// Prometheus counters: requests per service and operation (service_requests:
// the frontend's are the API calls of workers, starters and queries) and
// persistence calls per operation (persistence_requests). They say where
// the server's CPU goes: slices, status queries, task polls.

// serverOp is one counter's rate over the window.
type serverOp struct {
	Metric    string  `json:"metric"`
	Service   string  `json:"service,omitempty"`
	Operation string  `json:"operation"`
	PerSecond float64 `json:"per_second"`
}

// serverMetricsURL is the pg stack server's /metrics (its port follows
// the frontend's, cluster.StandardPorts).
func serverMetricsURL(frontend string) (string, bool) {
	host, port, err := net.SplitHostPort(frontend)
	if err != nil {
		return "", false
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", false
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(cluster.StandardPorts(n).Metrics)) + "/metrics", true
}

type opKey struct{ metric, service, operation string }

// scrapeServerOps sums the request counters by service and operation.
func scrapeServerOps(ctx context.Context, url string) (map[opKey]float64, error) {
	out := map[opKey]float64{}
	err := scrapeSeries(ctx, url, func(name, labels string, v float64) {
		// OpenTelemetry's exporter adds _total to a counter's name.
		name = strings.TrimSuffix(name, "_total")
		switch name {
		case "service_requests", "persistence_requests":
			out[opKey{name, labelValue(labels, "service_name"), labelValue(labels, "operation")}] += v
		}
	})
	return out, err
}

// serverOpRates are the counters' rates between two scrapes, busiest first,
// those under 0.05/s left out.
func serverOpRates(before, after map[opKey]float64, seconds float64) []serverOp {
	var out []serverOp
	for k, v := range after {
		rate := (v - before[k]) / seconds
		if rate >= 0.05 {
			out = append(out, serverOp{Metric: k.metric, Service: k.service, Operation: k.operation, PerSecond: rate})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PerSecond > out[j].PerSecond })
	return out
}
