#!/bin/sh
# The file faults of issue 28, on the real binary: three runs of one config
# started together with the default output (each must keep its own result
# under results/), -o into a folder that takes no file (must fail with exit
# 2 before any data is made or measured), and three runs started together
# on one dataset.path that does not exist yet (all three must succeed).
# Prints each figure and what was expected; exits 1 when one is off.
#   scripts/fault-files.sh             (a few seconds; after a build)
#   PBENCH=build-x/pbench scripts/fault-files.sh
set -eu
cd "$(dirname "$0")/.."
PB="${PBENCH:-$PWD/build/pbench}"
CONFIG="$PWD/configs/null.yaml"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cd "$OUT"
FAST="-q -s dataset.generate.count=64 -s dataset.generate.size_bytes=4096 -s run.repeats=1
 -s run.warmup_batches=2 -s run.min_time_s=0.1 -s run.max_time_s=0.3 -s run.window_s=0.05
 -s pipeline.decode.cost_us=100 -s loader.batch_size=8 --no-calibrate"
bad=0

# 1. Three parallel runs, default result names (the data made first).
"$PB" run "$CONFIG" $FAST -s dataset.path=data -o first.json >/dev/null
for i in 1 2 3; do "$PB" run "$CONFIG" $FAST -s dataset.path=data >/dev/null 2>&1 & done
wait
results=$(ls results | wc -l)
echo "parallel runs: $results results of 3 ($(ls results | tr '\n' ' '))"
[ "$results" -eq 3 ] || bad=1

# 2. -o into a folder that takes no file: exit 2, before the data is made.
if [ "$(id -u)" -eq 0 ]; then target=/sys/pbench-x.json; else
    mkdir locked && chmod 555 locked && target=locked/x.json; fi
start=$(date +%s.%N)
code=0
"$PB" run "$CONFIG" $FAST -s dataset.path=never -o "$target" >/dev/null 2>err.txt || code=$?
end=$(date +%s.%N)
echo "-o $target: exit $code in $(echo "$end - $start" | bc) s: $(cat err.txt)"
[ "$code" -eq 2 ] && [ ! -e never ] || bad=1

# 3. Three parallel runs, one dataset.path made on first use.
ok=0
for i in 1 2 3; do
    ( "$PB" run "$CONFIG" $FAST -s dataset.path=fresh -o gen$i.json >/dev/null 2>gen$i.err &&
      echo ok > gen$i.ok ) &
done
wait
ok=$(ls gen*.ok 2>/dev/null | wc -l)
echo "parallel first-use generation: $ok of 3 succeeded"
[ "$ok" -eq 3 ] || { cat gen*.err; bad=1; }
exit $bad
