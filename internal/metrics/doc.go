// Package metrics exposes ordersync's Prometheus metrics: one registry per
// worker process, served on ORDERSYNC_METRICS_ADDRESS at /metrics.
//
// Four sources feed the registry:
//
//   - The FetchPage activity (through Recorder): orders upserted by result,
//     pages, API errors by class and 429s. These are ordinary counters of
//     this process; sum them across processes.
//   - The cursor and dead-letter workflows (through StatusPoller): every few
//     seconds, within a query budget per process (QueryRate), the process
//     queries the `status` of each platform it serves and, when it can have
//     changed, the dead-letter count, and exports what they say at scrape
//     time with how old it is. The slice and late-arrival totals live in
//     workflow state and survive continue-as-new, so they are exported as
//     counters whose value is the workflow's running total (a terminated
//     and restarted cursor starts again at zero, which Prometheus treats as
//     a counter reset). Every worker serving a platform exports the same
//     workflow-derived series, so aggregate them with max by (platform),
//     not sum.
//   - The stored credentials (through CredentialPoller, in workers with the
//     credential keys): every 30 s their metadata (expiries, last refresh,
//     needs re-authorization, failing refreshes; never a secret), and an
//     alert per episode of trouble. Recorder counts this process's
//     refreshes by outcome (credentials.Options.OnRefresh).
//   - The Temporal Go SDK (through TemporalHandler): its own client and
//     worker metrics (temporal_request_total, temporal_activity_execution_latency_seconds,
//     temporal_workflow_task_schedule_to_start_latency_seconds, ...),
//     bridged from OpenTelemetry into the same registry.
//
// Serve's webhook intake counts its events in a registry of its own
// (webhooks.go, ServeRegistry), exposed by `ordersync serve` at GET
// /metrics behind its bearer token.
//
// The same server answers /readyz (Readiness): 200 once every task queue
// of the process has a workflow and an activity poll accepted by Temporal,
// 503 before that, while draining, and after a fatal worker error.
//
// docs/observability.md lists every series with its labels.
package metrics
