#!/usr/bin/env bash
# Tracing's cost under load: rounds of `hub-bench load` against the Hub served
# with tracing on and with tracing off (and, with VARIANTS, instrumented in
# other ways too, each set against the untraced Hub), one Hub process at a
# time, each on a copy of the same seeded database, the order rotated every
# round so that no side always runs on a warmer machine. Prints one row per
# run, the on/off ratio of the requests per second summed over the rounds, the
# median of the rounds' own on/off ratios, their geometric mean with its
# 95 % interval, the same at equal CPU (each side's requests per second
# over the CPU its Hub and load client used), the rounds' on/off ratios of
# the Hub's CPU per request (all of it, in user space, in the kernel) and
# of the load client's, the Hub's CPU per request on each side, the Hub's
# CPU over its load client's on each side, the part of the Hub's CPU
# spent in the kernel on each side, and the part the traced Hub's line
# writer thread takes.
#
#   cargo build --release -p hub-example -p hub-bench
#   hub-bench/scripts/load-on-off.sh                       # 3 rounds x 10 s, 300 users
#   ROUNDS=5 DURATION=30s hub-bench/scripts/load-on-off.sh
#   PAIRED=1 ROUNDS=6 hub-bench/scripts/load-on-off.sh   # both sides at once
#   ON_BIN=/path/to/new/hub-example OFF_TRACED=1 PAIRED=1 ROUNDS=20 \
#     hub-bench/scripts/load-on-off.sh                     # two traced builds
#
# The peers, beside perf-trace (the same figures for each, over "off"):
#
#   cargo build --release -p hub-example --features peer-tracing
#   cp target/release/hub-example target/release/hub-example-peers
#   cargo build --release -p hub-example -p hub-bench
#   VARIANTS="on tower-http spans sampled" PAIRED=1 USERS=300 ROUNDS=8 \
#     hub-bench/scripts/load-on-off.sh
#
# VARIANTS lists the sides set against "off" (default "on"): `on` (perf-trace),
# `sampled` (perf-trace with tail sampling keeping 1 in SAMPLED_ONE_IN, 100,
# of the unremarkable requests' lines), `tower-http` (tower-http's
# TraceLayer writing a JSON line per request through tracing-subscriber)
# and `spans` (that, and a `tracing` span at every phase and store call,
# each a JSON line as it closes). The last two are served by PEER_BIN, the
# Hub built with its bench-only feature `peer-tracing`
# (target/release/hub-example-peers by default), with HUB_PEER_TRACING set;
# untraced by perf-trace, they write to the same kind of file.
#
# A warm-up run of each side (WARMUP, 5s; 0 for none) comes first and is not
# counted: the first run after seeding otherwise meets a cold page cache and
# database, and it is always the traced side's. Every run serves a fresh copy
# of the seeded database: with the cache off each request writes its audit
# records, and a database shared by the runs grows by gigabytes, so each run
# would be slower than the one before it.
#
# PAIRED=1 serves every side at once instead, each on its own copy of the
# database and port, each loaded by its own client with an equal share of
# the users, for every round: all then meet the same machine at the same
# moment, and none gains from another's slow second (with two sides each
# has half the machine, so its requests per second are about half the
# alternating runs'). Which side starts first, on the first port, rotates
# every round too. The rows are read the same way.
#
# PIN=1 (with PAIRED=1) also keeps each side, its Hub and its load client,
# on a core of its own (taskset), the sides swapping cores every round:
# the scheduler's split of the machine between the two Hubs then plays no
# part, and what is left is each core's own speed. That is for a host
# whose cores keep one speed: on a virtual machine whose cores slow down
# and speed up apart, with the host's other guests, the rounds spread as
# widely as without it.
#
# Settings (environment): ROUNDS (3), DURATION (10s), WARMUP (5s), USERS
# (300), AGENTS (100), PAIRED (0), PIN (0), PORT (19821), ON_BIN and
# OFF_BIN (the Hub binaries serving the traced and the untraced side; the
# build's own by default), OFF_TRACED (0; 1 serves the "off" side traced
# too, so that ON_BIN and OFF_BIN compare two traced builds, "on" the
# first), OFF_STDOUT (where the "off" side's standard output goes instead
# of its log file: with OFF_TRACED=1, /dev/null measures what writing the
# lines to the log file costs), VARIANTS ("on"), PEER_BIN, SAMPLED_ONE_IN
# (100), OUT_DIR (a new temporary folder, kept:
# databases, logs, reports; each run's database copy is removed after it),
# and anything the Hub reads itself (SCION_CACHE_ENABLED=false runs both
# sides without the response cache). The binaries are taken from
# $CARGO_TARGET_DIR/release, or target/release.
#
# Every user is the seeded member, so without the cache every list is
# uncached and one principal's: the per-principal quota of uncached lists
# (server.hub.audit.list_rate and list_burst) is raised out of the way
# here, since the load measures throughput, not one member's fair share.
set -euo pipefail
export SCION_SERVER_HUB_AUDIT_LIST_RATE=${SCION_SERVER_HUB_AUDIT_LIST_RATE:-1000000}
export SCION_SERVER_HUB_AUDIT_LIST_BURST=${SCION_SERVER_HUB_AUDIT_LIST_BURST:-1000000}
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-5s}
USERS=${USERS:-300}
PAIRED=${PAIRED:-0}
PIN=${PIN:-0}
AGENTS=${AGENTS:-100}
PORT=${PORT:-19821}
BIN=${CARGO_TARGET_DIR:-target}/release
HUB_BIN=$BIN/hub-example
# The Hub binary that serves each side (both the build's by default): an
# experimental build of the traced side is compared with the untraced Hub
# by setting ON_BIN.
ON_BIN=${ON_BIN:-$HUB_BIN}
OFF_BIN=${OFF_BIN:-$HUB_BIN}
OFF_TRACED=${OFF_TRACED:-0}
OFF_STDOUT=${OFF_STDOUT:-}
PEER_BIN=${PEER_BIN:-$BIN/hub-example-peers}
SAMPLED_ONE_IN=${SAMPLED_ONE_IN:-100}
read -r -a VARIANTS <<< "${VARIANTS:-on}"
LOAD_BIN=$BIN/hub-bench
SECRET=load-on-off-secret

for bin in "$HUB_BIN" "$ON_BIN" "$OFF_BIN" "$LOAD_BIN"; do
  [[ -x $bin ]] || { echo "$bin is missing: cargo build --release -p hub-example -p hub-bench" >&2; exit 1; }
done
((${#VARIANTS[@]} > 0)) || { echo "VARIANTS names at least one side to set against off" >&2; exit 2; }
for variant in "${VARIANTS[@]}"; do
  case $variant in
    on | sampled) ;;
    tower-http | spans)
      [[ -x $PEER_BIN ]] || {
        echo "$PEER_BIN is missing: build the Hub with --features peer-tracing and copy it there (see the top of $0)" >&2
        exit 1
      } ;;
    *) echo "VARIANTS: '$variant' is not on, sampled, tower-http or spans" >&2; exit 2 ;;
  esac
done
# Every side of a round: the variants, then the untraced Hub.
SIDES=("${VARIANTS[@]}" off)
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
[[ $PAIRED == 0 || $PAIRED == 1 ]] || { echo "PAIRED must be 0 or 1, not '$PAIRED'" >&2; exit 2; }
[[ $PIN == 0 || $PIN == 1 ]] || { echo "PIN must be 0 or 1, not '$PIN'" >&2; exit 2; }
if [[ $PIN == 1 ]]; then
  [[ $PAIRED == 1 ]] || { echo "PIN=1 gives each side of PAIRED=1 a core of its own: set PAIRED=1 too" >&2; exit 2; }
  command -v taskset > /dev/null || { echo "PIN=1 needs taskset (util-linux)" >&2; exit 1; }
fi
[[ $OFF_TRACED == 0 || $OFF_TRACED == 1 ]] || { echo "OFF_TRACED must be 0 or 1, not '$OFF_TRACED'" >&2; exit 2; }
NSIDES=${#SIDES[@]}
if [[ $PAIRED == 1 ]] && ! [[ $USERS =~ ^[0-9]+$ && $USERS -ge $NSIDES && $((USERS % NSIDES)) == 0 ]]; then
  echo "PAIRED=1 splits USERS between the $NSIDES sides: a multiple of $NSIDES, not '$USERS'" >&2
  exit 2
fi
command -v jq > /dev/null || { echo "jq is needed to read the reports" >&2; exit 1; }
# Made once the settings are known to be good: a usage error leaves nothing.
OUT=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hub-load-on-off.XXXXXX")}
mkdir -p "$OUT"

"$HUB_BIN" seed --db "$OUT/hub$AGENTS.db" --session-secret "$SECRET" --agents "$AGENTS" \
  --project-slug "load-$AGENTS" --out "$OUT/seed-$AGENTS.json" > "$OUT/seed.txt" 2>&1

HUBS=()
stop_hubs() {
  local hub
  for hub in "${HUBS[@]}"; do
    kill -TERM "$hub" 2> /dev/null || true
    wait "$hub" 2> /dev/null || true
  done
  HUBS=()
}
trap stop_hubs EXIT

# A run's copy of the seeded database (with its -wal and -shm files):
# `reset_run_db NAME` deletes run-NAME.db, `reset_run_db NAME copy` makes it
# afresh from the seed.
reset_run_db() {
  local ext
  for ext in "" -wal -shm; do
    rm -f "$OUT/run-$1.db$ext"
    if [[ ${2:-} == copy && -f "$OUT/hub$AGENTS.db$ext" ]]; then
      cp "$OUT/hub$AGENTS.db$ext" "$OUT/run-$1.db$ext"
    fi
  done
}

# Serves the Hub of side $1 (off, or one of the VARIANTS) as run $2 on
# port $3 and waits until it answers.
start_hub() {
  local side=$1 name=$2 port=$3
  reset_run_db "$name" copy
  local bin=$ON_BIN log=$OUT/$name.log trace=true extra=()
  case $side in
    off)
      bin=$OFF_BIN trace=false
      [[ -n $OFF_STDOUT ]] && log=$OFF_STDOUT
      [[ $OFF_TRACED == 1 ]] && trace=true
      ;;
    sampled) extra=("SCION_SERVER_HUB_SAMPLING_ONE_IN=$SAMPLED_ONE_IN") ;;
    tower-http | spans) bin=$PEER_BIN trace=false extra=("HUB_PEER_TRACING=$side") ;;
  esac
  env SCION_SERVER_HUB_PERFTRACE=$trace "${extra[@]}" ${PINNED:-} "$bin" serve --db "$OUT/run-$name.db" \
    --session-secret "$SECRET" --port "$port" > "$log" 2> "$OUT/$name.err" &
  local hub=$!
  HUBS+=("$hub")
  local tries=0
  until curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; do
    tries=$((tries + 1))
    if ((tries > 300)) || ! kill -0 "$hub" 2> /dev/null; then
      echo "the Hub ($name) did not start: see $OUT/$name.err" >&2
      exit 1
    fi
    sleep 0.1
  done
}

# Loads the Hub on port $1 with $2 users for $3; the report is run $4's.
load_hub() {
  ${PINNED:-} "$LOAD_BIN" load --hub "http://127.0.0.1:$1" --seed "$OUT/seed-$AGENTS.json" \
    --users "$2" --duration "$3" --spawn-rate 100 \
    --out "$OUT/$4.json" > "$OUT/$4.txt"
}

# One run: serve the Hub of side $1, load it for $3, stop it.
run() {
  local side=$1 name=$2 duration=$3
  start_hub "$side" "$name" "$PORT"
  load_hub "$PORT" "$USERS" "$duration" "$name"
  stop_hubs
  reset_run_db "$name"
}

# With PIN=1, the command prefix that keeps the side served on port $1 (its
# Hub and its load client) on a core of its own: the first port's side on
# the first core, the second's on the second, so that the sides swap cores
# as they swap places every round.
pinned() {
  [[ $PIN == 1 ]] && echo "taskset -c $((($1 - PORT) % $(nproc)))"
  return 0
}

# The sides in round $1's order: SIDES rotated by one place a round, so
# that each starts first in turn (with "on" alone: on first in odd rounds).
round_order() {
  local k
  for k in $(seq 0 $((NSIDES - 1))); do
    echo "${SIDES[$(((k + $1 - 1) % NSIDES))]}"
  done
}

# Every side of round $1 at once, for $2 (PAIRED=1), in round $3's order.
# The side started first, on the first port and loaded by the client
# started first, changes every round: the places are not equal (in one set
# of runs of two sides the second did about 3 % better whatever it served).
run_paired() {
  local round=$1 duration=$2 pids=() pid sides side port
  mapfile -t sides < <(round_order "$3")
  port=$PORT
  for side in "${sides[@]}"; do
    PINNED=$(pinned "$port") start_hub "$side" "load-$round-$side" "$port"
    port=$((port + 1))
  done
  port=$PORT
  for side in "${sides[@]}"; do
    PINNED=$(pinned "$port") load_hub "$port" "$((USERS / NSIDES))" "$duration" "load-$round-$side" & pids+=($!)
    port=$((port + 1))
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "a load client failed: see $OUT/load-$round-*.txt" >&2; exit 1; }
  done
  stop_hubs
  for side in "${sides[@]}"; do
    reset_run_db "load-$round-$side"
  done
}

if [[ $WARMUP != 0 && $PAIRED == 0 ]]; then
  for side in "${SIDES[@]}"; do
    run "$side" "warmup-$side" "$WARMUP"
  done
elif [[ $WARMUP != 0 ]]; then
  run_paired warmup "$WARMUP" 1
  rm -f "$OUT"/load-warmup-*.json
fi

printf '%-5s  %-10s  %9s  %8s  %7s  %7s  %7s  %10s\n' round tracing requests rps p50_ms p95_ms p99_ms unexpected
for round in $(seq 1 "$ROUNDS"); do
  mapfile -t order < <(round_order "$round")
  [[ $PAIRED == 1 ]] && run_paired "$round" "$DURATION" "$round"
  for side in "${order[@]}"; do
    [[ $PAIRED == 0 ]] && run "$side" "load-$round-$side" "$DURATION"
    jq -r --arg round "$round" --arg side "$side" \
      '[$round, $side, .totalRequests, .rps,
        .overall.p50Ms, .overall.p95Ms, .overall.p99Ms, .unexpectedFailures] | @tsv' \
      "$OUT/load-$round-$side.json" |
      awk -F'\t' '{printf "%-5s  %-10s  %9s  %8.1f  %7.2f  %7.2f  %7.2f  %10s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
  done
done

sum_rps() { jq -s 'map(.rps) | add' "$OUT"/load-*-"$1".json; }
off=$(sum_rps off)
for variant in "${VARIANTS[@]}"; do
  awk -v v="$variant" -v on="$(sum_rps "$variant")" -v off="$off" -v r="$ROUNDS" \
    'BEGIN {printf "mean rps: %s %.1f, off %.1f; %s/off %.3f\n", v, on / r, off / r, v, on / off}'
done
# Each round's two runs are neighbours in time: their ratio moves less with
# the machine's drift than the sums do. `round_ratios LABEL EXPR` prints
# the rounds' median, lowest and highest of EXPR, a jq expression over a
# round's two reports ($on and $off), and how far the rounds leave it
# uncertain: the geometric mean of the rounds' values and its 95 %
# interval (normal, from the spread of their logarithms; two rounds at
# least). Rounds without the figure are left out. $on is the report of
# side VARIANT.
round_ratios() {
  for round in $(seq 1 "$ROUNDS"); do
    jq -n --slurpfile on "$OUT/load-$round-$VARIANT.json" --slurpfile off "$OUT/load-$round-off.json" \
      "\$on[0] as \$on | \$off[0] as \$off | $2"
  done | sort -g | awk -v label="$1" '{r[NR] = $1; l = log($1); s += l; ss += l * l} END {
    if (NR == 0) exit
    m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "%s: median %.3f, lowest %.3f, highest %.3f\n", label, m, r[1], r[NR]
    if (NR > 1) {
      mean = s / NR; sd = sqrt((ss - NR * mean * mean) / (NR - 1)); half = 1.96 * sd / sqrt(NR)
      printf "%s: geometric mean %.3f, 95 %% interval %.3f to %.3f\n", label, exp(mean), exp(mean - half), exp(mean + half)
    }}'
}
# `cpu_per_request_ratio PART` is the jq expression of a round's ratio of
# CPU per request for PART, a jq expression over one side's report (`$r`)
# for the CPU it counts: the variant's over the untraced side's in the
# same round. (The medians of each side's rounds, further down, pair no
# rounds: a side's busier rounds serve their requests with less CPU each,
# so two medians taken apart can sit closer than the rounds do.)
cpu_per_request_ratio() {
  echo "[\$on, \$off] | map(. as \$r | {rps, cpu: ($1)})
    | select(all(.rps > 0 and .cpu != null and .cpu > 0))
    | (.[0].cpu / .[0].rps) / (.[1].cpu / .[1].rps)"
}
# The median of side $2's rounds of the jq expression $1 over a report
# (nothing when no report has a figure).
median_of_rounds() {
  jq -s "map($1) | sort
    | if length == 0 then empty elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end" \
    "$OUT"/load-*-"$2".json
}
# The Hub's own CPU per request (its process's CPU samples over the run,
# divided by the requests per second): steadier than the requests per
# second, which also move with the load client sharing the machine.
cpu_per_request() { median_of_rounds '.hubProcess.cpuPercentAvg / .rps * 1e4' "$1"; }
# The Hub's CPU over its load client's in the same run: what moves both
# from one run to the next (another guest on the host, the clock speed)
# cancels, and what is left is the Hub's own cost per request against the
# client's, which tracing hardly changes (the client reads one more header).
cpu_over_client() {
  median_of_rounds 'select(.loadProcess and .hubProcess)
    | .hubProcess.cpuPercentAvg / .loadProcess.cpuPercentAvg' "$1"
}
# Where the Hub's CPU goes, from its threads' own times: the kernel's
# part, and the part of the traced Hub's background line writer (the
# thread that writes the buffered lines to standard output, named
# `perf-trace-lines`, which the kernel keeps as its first 15 bytes).
share_of_hub() {
  median_of_rounds "select(.hubProcess.cpuPercentAvg > 0)
    | ($1) / .hubProcess.cpuPercentAvg * 100" "$2"
}
# Side $2's line writer's share, of its field $1 (its CPU, or its kernel
# part).
writer_share() {
  share_of_hub "[.hubProcess.threads[]? | select(.name == \"perf-trace-line\") | .$1]
    | add // empty" "$2"
}
kernel_off=$(share_of_hub '.hubProcess.systemPercentAvg // empty' off)
off_client=$(cpu_over_client off)

# Each variant against the untraced side ($v/off).
for VARIANT in "${VARIANTS[@]}"; do
  v=$VARIANT
  round_ratios "rounds $v/off" '$on.rps / $off.rps'
  # The same at equal CPU: each side's requests per second over the CPU
  # its Hub and its load client used. Paired sides split the machine as
  # the scheduler has it, a few percent either way from one round to the
  # next, and each side's requests follow its share; over the CPU the
  # side had, the ratio is what each side makes of the same machine, and
  # its rounds spread several times less.
  round_ratios "rounds $v/off at equal CPU" '[$on, $off]
    | map(select(.hubProcess and .loadProcess)
      | {rps, cpu: (.hubProcess.cpuPercentAvg + .loadProcess.cpuPercentAvg)} | select(.cpu > 0))
    | select(length == 2 and .[1].rps > 0)
    | (.[0].rps / .[0].cpu) / (.[1].rps / .[1].cpu)'
  # Where a round's difference at equal CPU comes from: each process's
  # CPU per request.
  round_ratios "rounds Hub CPU per request $v/off" \
    "$(cpu_per_request_ratio '$r.hubProcess.cpuPercentAvg')"
  round_ratios "rounds Hub CPU per request in user space $v/off" \
    "$(cpu_per_request_ratio '$r.hubProcess | .cpuPercentAvg - .systemPercentAvg')"
  round_ratios "rounds Hub CPU per request in the kernel $v/off" \
    "$(cpu_per_request_ratio '$r.hubProcess.systemPercentAvg')"
  round_ratios "rounds load client CPU per request $v/off" \
    "$(cpu_per_request_ratio '$r.loadProcess.cpuPercentAvg')"
  awk -v v="$v" -v on="$(cpu_per_request "$v")" -v off="$(cpu_per_request off)" \
    'BEGIN {printf "Hub CPU per request (median of rounds): %s %.1f us, off %.1f us; %s/off %.3f\n", v, on, off, v, on / off}'
  on_client=$(cpu_over_client "$v")
  if [[ -n $on_client && -n $off_client ]]; then
    awk -v v="$v" -v on="$on_client" -v off="$off_client" \
      'BEGIN {printf "Hub CPU over its load client'"'"'s (median of rounds): %s %.3f, off %.3f; %s/off %.3f\n", v, on, off, v, on / off}'
  fi
  kernel_on=$(share_of_hub '.hubProcess.systemPercentAvg // empty' "$v")
  if [[ -n $kernel_on && -n $kernel_off ]]; then
    awk -v v="$v" -v on="$kernel_on" -v off="$kernel_off" \
      'BEGIN {printf "Hub CPU in the kernel (median of rounds): %s %.1f %%, off %.1f %%\n", v, on, off}'
  fi
  writer_on=$(writer_share cpuPercentAvg "$v")
  if [[ -n $writer_on ]]; then
    writer_kernel=$(writer_share systemPercentAvg "$v")
    awk -v v="$v" -v w="$writer_on" -v k="${writer_kernel:-0}" \
      'BEGIN {printf "%s Hub'"'"'s line writer thread (median of rounds): %.2f %% of its CPU, %.2f %% in the kernel\n", v, w, k}'
  fi
done
echo "files: $OUT"
