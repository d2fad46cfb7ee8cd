#!/bin/sh
# Creates the ordersync namespace (30 days retention, so failed slices stay
# visible in the Web UI) and the search attributes ordersync's workflows set
# (run by the temporal-setup service of compose.yaml; safe to run again).
set -eu
ns=${NAMESPACE:-ordersync}
until temporal operator cluster health >/dev/null 2>&1; do sleep 1; done
temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1 ||
	temporal operator namespace create --namespace "$ns" --retention 720h
for attr in Platform:Keyword SliceStart:Datetime SliceState:Keyword; do
	name=${attr%%:*}
	type=${attr#*:}
	temporal operator search-attribute list --namespace "$ns" | grep -qw "$name" ||
		temporal operator search-attribute create --namespace "$ns" --name "$name" --type "$type"
done
echo "namespace $ns ready"
