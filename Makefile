# ordersync — the two commands a newcomer needs are `make run` and `make test`.
export GOTOOLCHAIN := local
GO      ?= go
BIN     := bin/ordersync
PKGS    := ./...
# Tests that run the real Temporal server take a few minutes on a 2-core box.
TEST_TIMEOUT ?= 30m

.PHONY: all build run cluster test test-short lint generate histories clean chaos bench bench-cluster bench-fleet

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ordersync

## run: build, then start the embedded Temporal server + Web UI, the simulator,
## a worker, the three demo platforms and the demo receiver their changes are
## delivered to (it prints what it got every 10s).
run: build
	./$(BIN) dev -f examples/demo-platforms.yaml

## cluster: build, then run the production-shaped stack: Temporal on
## PostgreSQL (schema by temporal-sql-tool's code, 4 task-queue partitions,
## Web UI), `ordersync setup`, 3 `ordersync worker` processes on a PostgreSQL
## store, the simulator and the demo platforms. PostgreSQL comes from
## .ci/postgres.sh (installed from Debian's packages when missing; needs
## root or sudo). CLUSTER_FLAGS adds flags, e.g. CLUSTER_FLAGS="--workers 5".
cluster: build
	@eval "$$(bash .ci/postgres.sh | tail -n1)" && \
	ORDERSYNC_STORE_DSN="$${ORDERSYNC_TEST_POSTGRES_DSN%%/ordersync_test*}/ordersync_cluster?sslmode=disable" \
	ORDERSYNC_TEMPORAL_NAMESPACE="$${ORDERSYNC_TEMPORAL_NAMESPACE:-ordersync}" \
	./$(BIN) cluster --postgres "$$ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN" -f examples/demo-platforms.yaml $(CLUSTER_FLAGS)

## test: go vet plus every test (PostgreSQL tests need ORDERSYNC_TEST_POSTGRES_DSN;
## .ci/run sets it up, see README). ./e2e/ is named first so that it, the
## longest package, is built and started first; its tests run side by side
## as e2e/doc.go describes (ORDERSYNC_E2E_CAPACITY=1: one at a time).
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(if $(filter ./...,$(PKGS)),./e2e/) $(PKGS)

## test-short: unit tests only (skips the end-to-end runs on the real server).
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt, go vet, staticcheck and Temporal's workflowcheck.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 -config workflowcheck.config.yaml ./workflows/...

## generate: regenerate mocks (go.uber.org/mock).
generate:
	$(GO) generate ./...

## histories: record replay-test histories from real runs on the embedded
## server into a NEW release folder, testdata/histories/$(RELEASE) (e.g.
## `make histories RELEASE=v0.3`). Recorded histories are never rewritten:
## the target refuses a folder that exists. A workflow change that breaks
## replay of an older folder needs a change ID in workflows/versions.go.
histories:
	@if [ -z "$(RELEASE)" ]; then echo "usage: make histories RELEASE=<new release, e.g. v0.3>"; ls testdata/histories; exit 2; fi
	@if [ -e testdata/histories/$(RELEASE) ]; then echo "testdata/histories/$(RELEASE) exists; recorded histories are never rewritten: pick a new RELEASE"; exit 2; fi
	ORDERSYNC_RECORD_HISTORIES=$(CURDIR)/testdata/histories/$(RELEASE) $(GO) test -count=1 -timeout 15m -run 'TestRecordHistories(Delivery|DeliveryLanes|Refetch|Reconcile)?$$' -v ./e2e/

## chaos: the chaos soak: faults, 429s, worker processes killed with SIGKILL,
## a Temporal server restart, then `ordersync verify` (0 missing, 0 stale).
## `make test` runs the same test for 75s; this runs it for
## ORDERSYNC_CHAOS_DURATION (default 10m) and writes the numbers
## docs/reliability.md quotes to bin/chaos-report.json.
chaos:
	mkdir -p bin
	ORDERSYNC_CHAOS_DURATION=$${ORDERSYNC_CHAOS_DURATION:-10m} ORDERSYNC_CHAOS_REPORT=$(CURDIR)/bin/chaos-report.json \
		$(GO) test -count=1 -timeout 60m -run 'TestChaosNoLoss$$' -v ./e2e/

## bench: the benchmark program: embedded Temporal server, simulator, SQLite
## store and one `ordersync worker` process; backfill vs a direct loop, a
## rate-limited platform, freshness, 1,000 platforms, 5,000 platforms at
## 10-minute intervals, an Amazon-shaped platform at its quota. Prints a
## table and writes bench/results/<time>.json and latest.json (about 13 minutes;
## docs/performance.md explains the numbers). BENCH_FLAGS adds flags, e.g.
## BENCH_FLAGS="-cases b1,b3 -cpuprofile bin/profiles". Cases outside the
## default set run by name, e.g. BENCH_FLAGS="-cases cost" (B12, issue 29's B9:
## Temporal actions and server CPU per caught-up window, about 12 minutes).
bench: build
	$(GO) build -o bin/ordersync-bench ./bench/cmd/ordersync-bench
	./bin/ordersync-bench -ordersync ./$(BIN) -out bench/results $(BENCH_FLAGS)

## bench-cluster: B4 (1,000 platforms, 60 s intervals) twice, side by side:
## on the dev server with one worker process, and on the production-shaped
## stack (`ordersync cluster --server-only`: Temporal on PostgreSQL, 4
## task-queue partitions; a PostgreSQL store; 3 `ordersync worker`
## processes), each on fresh databases dropped afterwards. About 7 minutes,
## so not in `make bench`. PostgreSQL comes from ORDERSYNC_TEST_POSTGRES_DSN
## (and ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN), else from .ci/postgres.sh;
## without it the PostgreSQL case is skipped, saying so. BENCH_FLAGS as above,
## e.g. BENCH_FLAGS="-b4-platforms 100 -b4-window 40s" (about 4 minutes).
bench-cluster: build
	$(GO) build -o bin/ordersync-bench ./bench/cmd/ordersync-bench
	@if [ -z "$$ORDERSYNC_TEST_POSTGRES_DSN" ]; then eval "$$(bash .ci/postgres.sh | tail -n1)"; fi; \
	./bin/ordersync-bench -ordersync ./$(BIN) -out bench/results -cases b4,b4pg $(BENCH_FLAGS)

## bench-fleet: B13 (issue 29's B10), a fleet on the production-shaped stack:
## 20,000 active accounts at 10-minute intervals plus 80,000 registered
## paused, the Temporal server on PostgreSQL as its own process, a PostgreSQL
## store and 3 `ordersync worker` processes following the registry. About
## 30 minutes, so not in `make bench`; PostgreSQL as for bench-cluster.
## Writes bench/results/fleet-prod-<time>.json. BENCH_FLAGS as above, e.g.
## BENCH_FLAGS="-b13-active 1000 -b13-paused 4000 -b13-window 2m".
bench-fleet: build
	$(GO) build -o bin/ordersync-bench ./bench/cmd/ordersync-bench
	@if [ -z "$$ORDERSYNC_TEST_POSTGRES_DSN" ]; then eval "$$(bash .ci/postgres.sh | tail -n1)"; fi; \
	./bin/ordersync-bench -ordersync ./$(BIN) -out bench/results -cases b13 $(BENCH_FLAGS)

clean:
	rm -rf bin
