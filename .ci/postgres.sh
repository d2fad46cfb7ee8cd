#!/usr/bin/env bash
# Brings up a local PostgreSQL for the store/ conformance tests and the
# PostgreSQL-backed Temporal stack (e2e, `make cluster`) on a Debian
# machine: installs it if missing, creates/starts a cluster, waits until it
# accepts connections, and creates the ordersync role and test database and
# the temporal role. Temporal's role gets CREATEDB and nothing more, as in a
# production deployment: its schema tool creates its own databases, and the
# one extension it needs (btree_gin) is trusted, so no superuser is needed.
#
# Idempotent: safe to run again on a machine where it already ran.
#
# stdout carries exactly one line, meant for eval:
#   export ORDERSYNC_TEST_POSTGRES_DSN=postgres://... ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN=postgres://...
# Everything else goes to stderr.
set -euo pipefail

# Every diagnostic goes to stderr so the caller can `eval "$(bash .ci/postgres.sh | tail -n1)"`.
exec 3>&1 1>&2

ROLE=ordersync
PASSWORD=ordersync
DB=ordersync_test
TEMPORAL_ROLE=temporal
TEMPORAL_PASSWORD=temporal

log() { echo "postgres.sh: $*"; }

# as_root/as_postgres work both as root (CI) and as a sudo-capable user.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
# detached runs a command that leaves a daemon behind with only stdin, stdout
# and stderr open, none of them ours: a server that inherits the pipe of
# "$(bash .ci/postgres.sh)" or the CI log keeps it open forever, and the
# caller waits for an end of file that never comes.
detached() {
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
		done
		"$@"
	) </dev/null >>/tmp/ordersync-postgres-start.log 2>&1
}

as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		sudo -u postgres "$@"
	fi
}

have_server() {
	command -v pg_ctlcluster >/dev/null 2>&1 &&
		compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null
}

if ! have_server; then
	log "PostgreSQL not installed; installing from Debian packages"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
fi

# Newest installed major version.
VERSION=$(ls /usr/lib/postgresql | sort -n | tail -n1)
log "using PostgreSQL $VERSION"

# psql complains when started from a directory postgres cannot read.
cd /tmp

if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main"' | grep -q .; then
	log "creating cluster $VERSION/main"
	as_root pg_createcluster --encoding UTF8 --locale C.UTF-8 "$VERSION" main
fi

PORT=$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" { print $3 }')
STATUS=$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" { print $4 }')
if [ "$STATUS" != "online" ]; then
	log "starting cluster $VERSION/main on port $PORT"
	if ! detached as_root pg_ctlcluster "$VERSION" main start; then
		cat /tmp/ordersync-postgres-start.log
		exit 1
	fi
fi

# wait_ready waits up to 60s for the server to take connections; $1 says
# after what, in the failure message.
wait_ready() {
	for i in $(seq 1 60); do
		if pg_isready -q -h 127.0.0.1 -p "$PORT"; then
			return 0
		fi
		sleep 1
	done
	log "PostgreSQL did not become ready on 127.0.0.1:$PORT within 60s$1"
	exit 1
}

wait_ready ""
log "ready on 127.0.0.1:$PORT"

psql_admin() { as_postgres psql -p "$PORT" -v ON_ERROR_STOP=1 -qtAX "$@"; }

# The e2e tests run side by side, two PostgreSQL-backed Temporal stacks
# at a time when the server allows it (about 50 connections each; Debian's
# default max_connections is 100). Raised once; that needs a restart.
if [ "$(psql_admin -c "SHOW max_connections")" -lt 200 ]; then
	log "raising max_connections to 200 (restarts the cluster)"
	psql_admin -c "ALTER SYSTEM SET max_connections = 200"
	if ! detached as_root pg_ctlcluster "$VERSION" main restart; then
		cat /tmp/ordersync-postgres-start.log
		exit 1
	fi
	wait_ready " of the restart"
fi

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != "1" ]; then
	log "creating role $ROLE"
	psql_admin -c "CREATE ROLE $ROLE LOGIN SUPERUSER PASSWORD '$PASSWORD'"
else
	# Reset the password so a role left over from elsewhere still matches the DSN.
	psql_admin -c "ALTER ROLE $ROLE LOGIN SUPERUSER PASSWORD '$PASSWORD'"
fi

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$TEMPORAL_ROLE'")" != "1" ]; then
	log "creating role $TEMPORAL_ROLE"
	psql_admin -c "CREATE ROLE $TEMPORAL_ROLE LOGIN CREATEDB PASSWORD '$TEMPORAL_PASSWORD'"
else
	psql_admin -c "ALTER ROLE $TEMPORAL_ROLE LOGIN CREATEDB NOSUPERUSER PASSWORD '$TEMPORAL_PASSWORD'"
fi

if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]; then
	log "creating database $DB"
	as_postgres createdb -p "$PORT" -O "$ROLE" "$DB"
fi

DSN="postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB?sslmode=disable"
# Temporal's databases are named by its users (tests pick fresh names;
# `make cluster` keeps temporal and temporal_visibility); the role logs in
# to the postgres database to create them.
TEMPORAL_DSN="postgres://$TEMPORAL_ROLE:$TEMPORAL_PASSWORD@127.0.0.1:$PORT/temporal?sslmode=disable"
# Prove the DSNs work over TCP with password auth, as the tests will use them.
PGPASSWORD=$PASSWORD psql "$DSN" -qtAX -v ON_ERROR_STOP=1 -c 'SELECT 1' >/dev/null
PGPASSWORD=$TEMPORAL_PASSWORD psql "postgres://$TEMPORAL_ROLE:$TEMPORAL_PASSWORD@127.0.0.1:$PORT/postgres?sslmode=disable" \
	-qtAX -v ON_ERROR_STOP=1 -c 'SELECT 1' >/dev/null
log "ok"

echo "export ORDERSYNC_TEST_POSTGRES_DSN=$DSN ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN=$TEMPORAL_DSN" >&3
