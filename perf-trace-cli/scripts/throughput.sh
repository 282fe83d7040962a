#!/usr/bin/env bash
# Times `perf-trace summary` against `jq -c 'select(.msg=="perf_trace")' | wc -l`
# on the same log of the Hub's lines (about 1 GB unless SIZE says otherwise).
# Run from the workspace root: bash perf-trace-cli/scripts/throughput.sh
set -euo pipefail
size=${SIZE:-1000000000}
log=target/perf-trace-throughput.log
# The tool in release; the generator as a plain example (examples build
# the crate's test dependencies too, which need no release build).
cargo build --release -p perf-trace-cli --bin perf-trace
if [ ! -s "$log" ] || [ "$(stat -c %s "$log")" -lt "$size" ]; then
  cargo run -q -p perf-trace-cli --example sample_log -- "$log" "$size" hub
fi
echo "log: $log, $(stat -c %s "$log") bytes, $(wc -l < "$log") lines"
# Warm the page cache so both read from memory.
cat "$log" > /dev/null
echo "== perf-trace summary"
/usr/bin/time -f "%e s wall, %M KiB max RSS" target/release/perf-trace summary "$log" > target/perf-trace-throughput.summary
echo "== jq -c 'select(.msg==\"perf_trace\")' | wc -l"
/usr/bin/time -f "%e s wall, %M KiB max RSS (jq)" sh -c "jq -c 'select(.msg==\"perf_trace\")' '$log' | wc -l"
echo "== perf-trace summary on the same log gzip'd (gzip -1)"
if [ ! -s "$log.gz" ] || [ "$log.gz" -ot "$log" ]; then
  gzip -1 -c "$log" > "$log.gz"
fi
cat "$log.gz" > /dev/null
/usr/bin/time -f "%e s wall, %M KiB max RSS" target/release/perf-trace summary "$log.gz" > /dev/null
