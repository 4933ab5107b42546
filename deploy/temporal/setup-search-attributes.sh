#!/bin/sh
# One-shot setup for the Temporal server: waits for the namespace, then registers the custom
# search attributes this project uses. Idempotent: an attribute that already exists is kept.
#
# Runs in the temporalio/admin-tools container (docker-compose service `temporal-setup`) and works
# the same against any server the `temporal` CLI can reach:
#   TEMPORAL_ADDRESS=host:7233 TEMPORAL_NAMESPACE=default sh deploy/temporal/setup-search-attributes.sh
#
# Search attributes (name:type, space-separated), overridable with SEARCH_ATTRIBUTES:
#   AgentWaitingForApproval:Bool  - true while a run waits for a human's tool-call decision
#   AgentWaitingForUser:Bool      - true while a session waits for its user's next message
set -eu

namespace="${TEMPORAL_NAMESPACE:-default}"
attributes="${SEARCH_ATTRIBUTES:-AgentWaitingForApproval:Bool AgentWaitingForUser:Bool}"
wait_seconds="${SETUP_WAIT_SECONDS:-300}"

waited=0
until temporal operator namespace describe --namespace "$namespace" >/dev/null 2>&1; do
  if [ "$waited" -ge "$wait_seconds" ]; then
    echo "namespace '$namespace' not reachable at ${TEMPORAL_ADDRESS:-localhost:7233} after ${wait_seconds}s" >&2
    exit 1
  fi
  echo "waiting for namespace '$namespace' at ${TEMPORAL_ADDRESS:-localhost:7233}..."
  sleep 2
  waited=$((waited + 2))
done

existing="$(temporal operator search-attribute list --namespace "$namespace")"
for pair in $attributes; do
  name="${pair%%:*}"
  type="${pair#*:}"
  if printf '%s\n' "$existing" | grep -qw -- "$name"; then
    echo "search attribute $name already registered"
  else
    temporal operator search-attribute create --namespace "$namespace" --name "$name" --type "$type"
    echo "registered search attribute $name ($type)"
  fi
done
