#!/usr/bin/env bash
# Tracing's cost under load: rounds of `hub-bench load` against the Hub served
# with tracing on and with tracing off, one Hub process at a time, each on a
# copy of the same seeded database, the order flipped every round so that neither side always
# runs on a warmer machine. Prints one row per run, the on/off ratio of the
# requests per second summed over the rounds, the median of the rounds'
# own on/off ratios, and the Hub's CPU per request on each side.
#
#   cargo build --release -p hub-example -p hub-bench
#   hub-bench/scripts/load-on-off.sh                       # 3 rounds x 10 s, 300 users
#   ROUNDS=5 DURATION=30s hub-bench/scripts/load-on-off.sh
#
# A warm-up run of each side (WARMUP, 5s; 0 for none) comes first and is not
# counted: the first run after seeding otherwise meets a cold page cache and
# database, and it is always the traced side's. Every run serves a fresh copy
# of the seeded database: with the cache off each request writes its audit
# records, and a database shared by the runs grows by gigabytes, so each run
# would be slower than the one before it.
#
# Settings (environment): ROUNDS (3), DURATION (10s), WARMUP (5s), USERS (300), AGENTS (100),
# PORT (19821), OUT_DIR (a new temporary folder, kept: databases, logs,
# reports; each run's database copy is removed after it), and anything the Hub reads itself (SCION_CACHE_ENABLED=false runs
# both sides without the response cache). The binaries are taken from
# $CARGO_TARGET_DIR/release, or target/release.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-5s}
USERS=${USERS:-300}
AGENTS=${AGENTS:-100}
PORT=${PORT:-19821}
BIN=${CARGO_TARGET_DIR:-target}/release
HUB_BIN=$BIN/hub-example
LOAD_BIN=$BIN/hub-bench
OUT=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hub-load-on-off.XXXXXX")}
SECRET=load-on-off-secret

for bin in "$HUB_BIN" "$LOAD_BIN"; do
  [[ -x $bin ]] || { echo "$bin is missing: cargo build --release -p hub-example -p hub-bench" >&2; exit 1; }
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
command -v jq > /dev/null || { echo "jq is needed to read the reports" >&2; exit 1; }
mkdir -p "$OUT"

"$HUB_BIN" seed --db "$OUT/hub$AGENTS.db" --session-secret "$SECRET" --agents "$AGENTS" \
  --project-slug "load-$AGENTS" --out "$OUT/seed-$AGENTS.json" > "$OUT/seed.txt" 2>&1

HUB=
stop_hub() {
  if [[ -n $HUB ]]; then
    kill -TERM "$HUB" 2> /dev/null || true
    wait "$HUB" 2> /dev/null || true
    HUB=
  fi
}
trap stop_hub EXIT

# The run's copy of the seeded database (with its -wal and -shm files):
# `reset_run_db` deletes it, `reset_run_db copy` makes it afresh from the seed.
reset_run_db() {
  local ext
  for ext in "" -wal -shm; do
    rm -f "$OUT/run.db$ext"
    if [[ ${1:-} == copy && -f "$OUT/hub$AGENTS.db$ext" ]]; then
      cp "$OUT/hub$AGENTS.db$ext" "$OUT/run.db$ext"
    fi
  done
}

# One run: serve the Hub with tracing $1 (true/false), load it for $3, stop it.
run() {
  local trace=$1 name=$2 duration=$3
  reset_run_db copy
  SCION_SERVER_HUB_PERFTRACE=$trace "$HUB_BIN" serve --db "$OUT/run.db" \
    --session-secret "$SECRET" --port "$PORT" > "$OUT/$name.log" 2> "$OUT/$name.err" &
  HUB=$!
  local tries=0
  until curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null; do
    tries=$((tries + 1))
    if ((tries > 300)) || ! kill -0 "$HUB" 2> /dev/null; then
      echo "the Hub ($name) did not start: see $OUT/$name.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  "$LOAD_BIN" load --hub "http://127.0.0.1:$PORT" --seed "$OUT/seed-$AGENTS.json" \
    --users "$USERS" --duration "$duration" --spawn-rate 100 \
    --out "$OUT/$name.json" > "$OUT/$name.txt"
  stop_hub
  reset_run_db
}

if [[ $WARMUP != 0 ]]; then
  run true warmup-on "$WARMUP"
  run false warmup-off "$WARMUP"
fi

printf '%-5s  %-7s  %9s  %8s  %7s  %7s  %7s  %10s\n' round tracing requests rps p50_ms p95_ms p99_ms unexpected
for round in $(seq 1 "$ROUNDS"); do
  if ((round % 2 == 1)); then order=(on off); else order=(off on); fi
  for side in "${order[@]}"; do
    [[ $side == on ]] && trace=true || trace=false
    run "$trace" "load-$round-$side" "$DURATION"
    jq -r --arg round "$round" --arg side "$side" \
      '[$round, $side, .totalRequests, .rps,
        .overall.p50Ms, .overall.p95Ms, .overall.p99Ms, .unexpectedFailures] | @tsv' \
      "$OUT/load-$round-$side.json" |
      awk -F'\t' '{printf "%-5s  %-7s  %9s  %8.1f  %7.2f  %7.2f  %7.2f  %10s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
  done
done

sum_rps() { jq -s 'map(.rps) | add' "$OUT"/load-*-"$1".json; }
on=$(sum_rps on)
off=$(sum_rps off)
awk -v on="$on" -v off="$off" -v r="$ROUNDS" \
  'BEGIN {printf "mean rps: on %.1f, off %.1f; on/off %.3f\n", on / r, off / r, on / off}'
# Each round's two runs are neighbours in time: their ratio moves less with
# the machine's drift than the sums do.
for round in $(seq 1 "$ROUNDS"); do
  jq -n --slurpfile on "$OUT/load-$round-on.json" --slurpfile off "$OUT/load-$round-off.json" \
    '$on[0].rps / $off[0].rps'
done | sort -g | awk '{r[NR] = $1} END {
  m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "rounds on/off: median %.3f, lowest %.3f, highest %.3f\n", m, r[1], r[NR]}'
# The Hub's own CPU per request (its process's CPU samples over the run,
# divided by the requests per second): steadier than the requests per
# second, which also move with the load client sharing the machine.
cpu_per_request() {
  jq -s 'map(.hubProcess.cpuPercentAvg / .rps * 1e4) | sort
    | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end' \
    "$OUT"/load-*-"$1".json
}
awk -v on="$(cpu_per_request on)" -v off="$(cpu_per_request off)" \
  'BEGIN {printf "Hub CPU per request (median of rounds): on %.1f us, off %.1f us; on/off %.3f\n", on, off, on / off}'
echo "files: $OUT"
