#!/bin/sh
# One-shot MinIO setup (docker-compose service `minio-init`, image minio/mc): creates the two buckets
# and applies their retention policy as S3 lifecycle rules. Idempotent: `mc mb --ignore-existing`, and
# `mc ilm import` replaces a bucket's whole lifecycle configuration rather than adding to it.
#
# Retention policy (edit the JSON files next to this script to change it):
#   tool-results       lifecycle-tool-results.json        objects expire 30 days after creation.
#                      Offloaded tool results the model may re-read during a run.
#   temporal-payloads  lifecycle-temporal-payloads.json   objects expire 90 days after creation.
#                      Large workflow payloads referenced from Temporal history: keep them longer than
#                      your longest run (including days-long approval waits) plus the namespace's
#                      retention, or old histories can no longer be read or replayed.
set -eu

endpoint="${MINIO_ENDPOINT:-http://minio:9000}"
here="$(dirname "$0")"

mc alias set local "$endpoint" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD"
mc ready local

mc mb --ignore-existing "local/${TOOL_RESULTS_BUCKET}"
mc ilm import "local/${TOOL_RESULTS_BUCKET}" < "$here/lifecycle-tool-results.json"

mc mb --ignore-existing "local/${TEMPORAL_PAYLOADS_BUCKET}"
mc ilm import "local/${TEMPORAL_PAYLOADS_BUCKET}" < "$here/lifecycle-temporal-payloads.json"

mc ilm rule ls "local/${TOOL_RESULTS_BUCKET}"
mc ilm rule ls "local/${TEMPORAL_PAYLOADS_BUCKET}"
echo "buckets ready: ${TOOL_RESULTS_BUCKET}, ${TEMPORAL_PAYLOADS_BUCKET}"
