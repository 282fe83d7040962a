#!/usr/bin/env bash
# Tracing's cost under load: rounds of `hub-bench load` against the Hub served
# with tracing on and with tracing off, one Hub process at a time, each on a
# copy of the same seeded database, the order flipped every round so that
# neither side always runs on a warmer machine. Prints one row per run, the
# on/off ratio of the requests per second summed over the rounds, the
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
# A warm-up run of each side (WARMUP, 5s; 0 for none) comes first and is not
# counted: the first run after seeding otherwise meets a cold page cache and
# database, and it is always the traced side's. Every run serves a fresh copy
# of the seeded database: with the cache off each request writes its audit
# records, and a database shared by the runs grows by gigabytes, so each run
# would be slower than the one before it.
#
# PAIRED=1 serves both sides at once instead, each on its own copy of the
# database and port, each loaded by its own client with half the users, for
# every round: both then meet the same machine at the same moment, and
# neither gains from the other's slow second (each side then has half the
# machine, so its requests per second are about half the alternating
# runs'). Which side starts first, on the first port, flips every round
# too. The rows are read the same way.
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
# lines to the log file costs), OUT_DIR (a new temporary folder, kept:
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
LOAD_BIN=$BIN/hub-bench
SECRET=load-on-off-secret

for bin in "$HUB_BIN" "$ON_BIN" "$OFF_BIN" "$LOAD_BIN"; do
  [[ -x $bin ]] || { echo "$bin is missing: cargo build --release -p hub-example -p hub-bench" >&2; exit 1; }
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
[[ $PAIRED == 0 || $PAIRED == 1 ]] || { echo "PAIRED must be 0 or 1, not '$PAIRED'" >&2; exit 2; }
[[ $PIN == 0 || $PIN == 1 ]] || { echo "PIN must be 0 or 1, not '$PIN'" >&2; exit 2; }
if [[ $PIN == 1 ]]; then
  [[ $PAIRED == 1 ]] || { echo "PIN=1 gives each side of PAIRED=1 a core of its own: set PAIRED=1 too" >&2; exit 2; }
  command -v taskset > /dev/null || { echo "PIN=1 needs taskset (util-linux)" >&2; exit 1; }
fi
[[ $OFF_TRACED == 0 || $OFF_TRACED == 1 ]] || { echo "OFF_TRACED must be 0 or 1, not '$OFF_TRACED'" >&2; exit 2; }
if [[ $PAIRED == 1 ]] && ! [[ $USERS =~ ^[0-9]+$ && $USERS -ge 2 && $((USERS % 2)) == 0 ]]; then
  echo "PAIRED=1 splits USERS between the two sides: an even number of at least 2, not '$USERS'" >&2
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

# Serves the Hub of side "on" (tracing $1 true) or "off" (false) as run $2
# on port $3 and waits until it answers.
start_hub() {
  local trace=$1 name=$2 port=$3
  reset_run_db "$name" copy
  local bin=$OFF_BIN log=$OUT/$name.log
  [[ $trace == true ]] && bin=$ON_BIN
  [[ $trace == false && -n $OFF_STDOUT ]] && log=$OFF_STDOUT
  [[ $OFF_TRACED == 1 ]] && trace=true
  SCION_SERVER_HUB_PERFTRACE=$trace ${PINNED:-} "$bin" serve --db "$OUT/run-$name.db" \
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

# One run: serve the Hub with tracing $1 (true/false), load it for $3, stop it.
run() {
  local trace=$1 name=$2 duration=$3
  start_hub "$trace" "$name" "$PORT"
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

# Both sides of round $1 at once, for $2 (PAIRED=1), the traced side
# first when $3 is odd. The side started first, on the first port and
# loaded by the client started first, swaps every round: the two places
# are not equal (in one set of runs the second did about 3 % better
# whatever it served).
run_paired() {
  local round=$1 duration=$2 pids=() pid sides=(on off) side port trace
  (($3 % 2 == 1)) || sides=(off on)
  port=$PORT
  for side in "${sides[@]}"; do
    [[ $side == on ]] && trace=true || trace=false
    PINNED=$(pinned "$port") start_hub "$trace" "load-$round-$side" "$port"
    port=$((port + 1))
  done
  port=$PORT
  for side in "${sides[@]}"; do
    PINNED=$(pinned "$port") load_hub "$port" "$((USERS / 2))" "$duration" "load-$round-$side" & pids+=($!)
    port=$((port + 1))
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "a load client failed: see $OUT/load-$round-*.txt" >&2; exit 1; }
  done
  stop_hubs
  reset_run_db "load-$round-on"
  reset_run_db "load-$round-off"
}

if [[ $WARMUP != 0 && $PAIRED == 0 ]]; then
  run true warmup-on "$WARMUP"
  run false warmup-off "$WARMUP"
elif [[ $WARMUP != 0 ]]; then
  run_paired warmup "$WARMUP" 1
  rm -f "$OUT"/load-warmup-*.json
fi

printf '%-5s  %-7s  %9s  %8s  %7s  %7s  %7s  %10s\n' round tracing requests rps p50_ms p95_ms p99_ms unexpected
for round in $(seq 1 "$ROUNDS"); do
  if ((round % 2 == 1)); then order=(on off); else order=(off on); fi
  [[ $PAIRED == 1 ]] && run_paired "$round" "$DURATION" "$round"
  for side in "${order[@]}"; do
    [[ $side == on ]] && trace=true || trace=false
    [[ $PAIRED == 0 ]] && run "$trace" "load-$round-$side" "$DURATION"
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
# the machine's drift than the sums do. `round_ratios LABEL EXPR` prints
# the rounds' median, lowest and highest of EXPR, a jq expression over a
# round's two reports ($on and $off), and how far the rounds leave it
# uncertain: the geometric mean of the rounds' values and its 95 %
# interval (normal, from the spread of their logarithms; two rounds at
# least). Rounds without the figure are left out.
round_ratios() {
  for round in $(seq 1 "$ROUNDS"); do
    jq -n --slurpfile on "$OUT/load-$round-on.json" --slurpfile off "$OUT/load-$round-off.json" \
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
round_ratios "rounds on/off" '$on.rps / $off.rps'
# The same at equal CPU: each side's requests per second over the CPU its
# Hub and its load client used. Paired sides split the machine as the
# scheduler has it, a few percent either way from one round to the next,
# and each side's requests follow its share; over the CPU the side had,
# the ratio is what each side makes of the same machine, and its rounds
# spread several times less.
round_ratios "rounds on/off at equal CPU" '[$on, $off]
  | map(select(.hubProcess and .loadProcess)
    | {rps, cpu: (.hubProcess.cpuPercentAvg + .loadProcess.cpuPercentAvg)} | select(.cpu > 0))
  | select(length == 2 and .[1].rps > 0)
  | (.[0].rps / .[0].cpu) / (.[1].rps / .[1].cpu)'
# Where a round's difference at equal CPU comes from: each process's CPU
# per request, the traced side's over the untraced side's in the same
# round. (The medians of each side's rounds, below, pair no rounds: a
# side's busier rounds serve their requests with less CPU each, so two
# medians taken apart can sit closer than the rounds do.)
# `cpu_per_request_ratio PART` is that ratio's jq expression for PART, a
# jq expression over one side's report (`$r`) for the CPU it counts.
cpu_per_request_ratio() {
  echo "[\$on, \$off] | map(. as \$r | {rps, cpu: ($1)})
    | select(all(.rps > 0 and .cpu != null and .cpu > 0))
    | (.[0].cpu / .[0].rps) / (.[1].cpu / .[1].rps)"
}
round_ratios "rounds Hub CPU per request on/off" \
  "$(cpu_per_request_ratio '$r.hubProcess.cpuPercentAvg')"
round_ratios "rounds Hub CPU per request in user space on/off" \
  "$(cpu_per_request_ratio '$r.hubProcess | .cpuPercentAvg - .systemPercentAvg')"
round_ratios "rounds Hub CPU per request in the kernel on/off" \
  "$(cpu_per_request_ratio '$r.hubProcess.systemPercentAvg')"
round_ratios "rounds load client CPU per request on/off" \
  "$(cpu_per_request_ratio '$r.loadProcess.cpuPercentAvg')"
# The Hub's own CPU per request (its process's CPU samples over the run,
# divided by the requests per second): steadier than the requests per
# second, which also move with the load client sharing the machine.
# The median of side $2's rounds of the jq expression $1 over a report
# (nothing when no report has a figure).
median_of_rounds() {
  jq -s "map($1) | sort
    | if length == 0 then empty elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end" \
    "$OUT"/load-*-"$2".json
}
cpu_per_request() { median_of_rounds '.hubProcess.cpuPercentAvg / .rps * 1e4' "$1"; }
awk -v on="$(cpu_per_request on)" -v off="$(cpu_per_request off)" \
  'BEGIN {printf "Hub CPU per request (median of rounds): on %.1f us, off %.1f us; on/off %.3f\n", on, off, on / off}'
# The Hub's CPU over its load client's in the same run: what moves both
# from one run to the next (another guest on the host, the clock speed)
# cancels, and what is left is the Hub's own cost per request against the
# client's, which tracing hardly changes (the client reads one more header).
cpu_over_client() {
  median_of_rounds 'select(.loadProcess and .hubProcess)
    | .hubProcess.cpuPercentAvg / .loadProcess.cpuPercentAvg' "$1"
}
on_client=$(cpu_over_client on)
off_client=$(cpu_over_client off)
if [[ -n $on_client && -n $off_client ]]; then
  awk -v on="$on_client" -v off="$off_client" \
    'BEGIN {printf "Hub CPU over its load client'"'"'s (median of rounds): on %.3f, off %.3f; on/off %.3f\n", on, off, on / off}'
fi
# Where the Hub's CPU goes, from its threads' own times: the kernel's
# part, and the part of the traced Hub's background line writer (the
# thread that writes the buffered lines to standard output, named
# `perf-trace-lines`, which the kernel keeps as its first 15 bytes).
share_of_hub() {
  median_of_rounds "select(.hubProcess.cpuPercentAvg > 0)
    | ($1) / .hubProcess.cpuPercentAvg * 100" "$2"
}
kernel_on=$(share_of_hub '.hubProcess.systemPercentAvg // empty' on)
kernel_off=$(share_of_hub '.hubProcess.systemPercentAvg // empty' off)
if [[ -n $kernel_on && -n $kernel_off ]]; then
  awk -v on="$kernel_on" -v off="$kernel_off" \
    'BEGIN {printf "Hub CPU in the kernel (median of rounds): on %.1f %%, off %.1f %%\n", on, off}'
fi
# The traced side's line writer's share, of its field $1 (its CPU, or its
# kernel part).
writer_share() {
  share_of_hub "[.hubProcess.threads[]? | select(.name == \"perf-trace-line\") | .$1]
    | add // empty" on
}
writer_on=$(writer_share cpuPercentAvg)
if [[ -n $writer_on ]]; then
  writer_kernel=$(writer_share systemPercentAvg)
  awk -v w="$writer_on" -v k="${writer_kernel:-0}" \
    'BEGIN {printf "traced Hub'"'"'s line writer thread (median of rounds): %.2f %% of its CPU, %.2f %% in the kernel\n", w, k}'
fi
echo "files: $OUT"
