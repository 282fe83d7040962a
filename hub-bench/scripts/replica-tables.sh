#!/usr/bin/env bash
# The 1,000-user tables on PostgreSQL, one replica against two: seeds 100
# agents once into a schema of its own, serves it with one Hub and runs
# `load`, then with two Hubs on the same schema and runs `load` over both,
# compared with the first run (seed 001's Overall and Endpoint result
# tables, then the per-replica table with each replica's CPU and RSS).
# Each run starts fresh Hub processes with the Hub's default settings
# (response cache on, tracing off), as the seed-001 runs had them.
#
#   hub-bench/scripts/replica-tables.sh            # 60 s per run
#   DURATION=15s hub-bench/scripts/replica-tables.sh
#
# Settings (environment): PERF_TRACE_PG_URL (the server, default
# postgres://postgres@127.0.0.1:5432/test), DURATION (60s), USERS (1000),
# SPAWN_RATE (100), AGENTS (100), OUT (/tmp/scion-replicas: reports, CSV,
# Hub logs), SCHEMA (scion_replicas: dropped and created again), PORT (19831:
# the one replica; the two use PORT+1 and PORT+2), BUILD (1: build release
# first; 0: use the binaries already built). Needs psql and curl.
set -euo pipefail
cd "$(dirname "$0")/../.."

PG=${PERF_TRACE_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
DURATION=${DURATION:-60s}
USERS=${USERS:-1000}
SPAWN_RATE=${SPAWN_RATE:-100}
AGENTS=${AGENTS:-100}
OUT=${OUT:-/tmp/scion-replicas}
SCHEMA=${SCHEMA:-scion_replicas}
PORT=${PORT:-19831}
SECRET=bench-secret-1

if [[ ! $SCHEMA =~ ^[a-z_][a-z0-9_]*$ ]]; then
  echo "SCHEMA must be a plain lower-case identifier, not '$SCHEMA'" >&2
  exit 2
fi
for tool in psql curl; do
  command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done

if [ "${BUILD:-1}" = 1 ]; then
  cargo build --release -p hub-example -p hub-bench
fi
T=${CARGO_TARGET_DIR:-target}/release
B=$T/hub-example
L=$T/hub-bench

# Each user holds a connection on both sides.
ulimit -n 16384

mkdir -p "$OUT/csv"
sep='?'
[[ $PG == *\?* ]] && sep='&'
DB="$PG${sep}options=-csearch_path%3D$SCHEMA"

sql() {
  PGOPTIONS="--client-min-messages=warning" psql "$PG" -qAt -v ON_ERROR_STOP=1 "$@"
}
sql -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" -c "CREATE SCHEMA $SCHEMA"
$B seed --db "$DB" --session-secret $SECRET --agents "$AGENTS" \
  --project-slug "bench-$AGENTS" --out "$OUT/seed.json"

HUBS=()
stop_hubs() {
  for pid in "${HUBS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${HUBS[@]}"; do wait "$pid" 2>/dev/null || true; done
  HUBS=()
}
trap stop_hubs EXIT

serve() { # PORT NAME
  $B serve --db "$DB" --session-secret $SECRET --port "$1" \
    > "$OUT/$2.log" 2> "$OUT/$2.err" &
  HUBS+=($!)
  until curl -sf "http://127.0.0.1:$1/healthz" > /dev/null; do sleep 0.1; done
}

echo "== one replica: $USERS users for $DURATION"
serve "$PORT" hub-1
$L load --hub "http://127.0.0.1:$PORT" --seed "$OUT/seed.json" \
  --users "$USERS" --duration "$DURATION" --spawn-rate "$SPAWN_RATE" \
  --out "$OUT/load-1.json" --csv "$OUT/csv" --notes "PostgreSQL, one replica"
stop_hubs

echo "== two replicas: $USERS users for $DURATION, compared with one"
serve $((PORT + 1)) hub-2a
serve $((PORT + 2)) hub-2b
$L load --hub "http://127.0.0.1:$((PORT + 1)),http://127.0.0.1:$((PORT + 2))" \
  --seed "$OUT/seed.json" --users "$USERS" --duration "$DURATION" \
  --spawn-rate "$SPAWN_RATE" --out "$OUT/load-2.json" --csv "$OUT/csv" \
  --compare "$OUT/load-1.json" --notes "PostgreSQL, two replicas"
stop_hubs

sql -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE"
echo "reports, CSV and Hub logs in $OUT"
