#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases (run by the
# temporal-schema service of compose.yaml in temporalio/admin-tools; safe to
# run again: update-schema only applies what is missing).
set -eu
# SQL_USER and SQL_PASSWORD come from the environment.
tool() { temporal-sql-tool --plugin postgres12 --ep postgresql -p 5432 -u "$SQL_USER" "$@"; }
for db in temporal temporal_visibility; do
	case $db in
	temporal) dir=/etc/temporal/schema/postgresql/v12/temporal/versioned ;;
	*) dir=/etc/temporal/schema/postgresql/v12/visibility/versioned ;;
	esac
	tool --db "$db" create 2>/dev/null || true # exists after the first run
	tool --db "$db" setup-schema -v 0.0 2>/dev/null || true
	tool --db "$db" update-schema -d "$dir"
done
echo "temporal schema ready"
