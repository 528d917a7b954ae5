#!/usr/bin/env bash
# Fault injection for stop signals and stuck stages (issue 28): runs pbench
# on configs/null.yaml and prints, per case, how many tries kept a complete
# result (a file that parses, with at least one finished repeat).
#
#   scripts/fault-signals.sh [PBENCH] [TRIES]     (default build/pbench, 10)
#
# Cases: `timeout 10 pbench run ...` (GNU timeout sends SIGTERM to pbench,
# then to its process group); two SIGTERMs 10 ms apart; a SIGTERM as the
# last repeat ends (while the result is summarized and written); a dataset
# file replaced by a FIFO after indexing (the read stage blocks in open():
# the watchdog must name it, write the result and exit 1 within a few
# seconds of run.stage_timeout_s); with mpirun on PATH, `mpirun -n 4` with a
# warm-up longer than rank 0's measured part. Generated data and results go
# to a temporary folder, removed at the end.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
pbench=$(realpath "${1:-$here/build/pbench}")
tries=${2:-10}
work=$(mktemp -d /tmp/pbench-faults-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
config=$here/configs/null.yaml
data="-s dataset.path=$work/data"

# complete FILE [WANT_REPEATS]: the file parses, has a finished repeat (and
# exactly WANT_REPEATS repeats, none interrupted, when given).
complete() {
    python3 - "$1" "${2:-0}" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(1)
reps = r["points"][0]["repeats"]
finished = [x for x in reps if not x.get("interrupted")]
want = int(sys.argv[2])
ok = len(finished) >= 1 and r["points"][0]["samples_per_s"] > 0
if want:
    ok = ok and len(reps) == want and len(finished) == want
sys.exit(0 if ok else 1)
EOF
}

"$pbench" run "$config" $data -s run.repeats=1 -s run.min_time_s=0.1 -s run.max_time_s=0.1 \
    -o warm.json >/dev/null 2>&1 # generates the data once

kept=0 codes=""
for i in $(seq "$tries"); do
    timeout 10 "$pbench" run "$config" $data -s run.repeats=50 -s run.min_time_s=0.5 \
        -s run.max_time_s=0.5 -o "t$i.json" >/dev/null 2>"t$i.err"
    codes="$codes $?"
    complete "t$i.json" && kept=$((kept + 1))
done
echo "timeout 10 pbench run: $kept/$tries kept a complete result (exit codes:$codes)"

kept=0 codes=""
for i in $(seq "$tries"); do
    "$pbench" run "$config" $data -s run.repeats=20 -s run.min_time_s=0.5 \
        -s run.max_time_s=0.5 -o "g$i.json" >/dev/null 2>"g$i.err" &
    pid=$!
    sleep 2.5
    kill -TERM $pid
    sleep 0.01
    kill -TERM $pid
    wait $pid
    codes="$codes $?"
    complete "g$i.json" && kept=$((kept + 1))
done
echo "two SIGTERMs 10 ms apart: $kept/$tries kept a complete result (exit codes:$codes)"

kept=0 codes=""
for i in $(seq "$tries"); do
    "$pbench" run "$config" $data -s run.repeats=3 -s run.min_time_s=0.3 \
        -s run.max_time_s=0.3 -o "w$i.json" >/dev/null 2>"w$i.err" &
    pid=$!
    until grep -q "repeat 3/3" "w$i.err" 2>/dev/null || ! kill -0 $pid 2>/dev/null; do
        sleep 0.002
    done
    kill -TERM $pid 2>/dev/null
    wait $pid
    codes="$codes $?"
    complete "w$i.json" 3 && ! ls "w$i.json.tmp".* >/dev/null 2>&1 && kept=$((kept + 1))
done
echo "SIGTERM as the last repeat ends (summary and write): $kept/$tries kept all 3 repeats," \
    "no temporary file (exit codes:$codes)"

# A file of the dataset replaced by a FIFO once it is indexed, in the middle
# of repeat 2's measured part: the read stage blocks in open() for good.
# (Swapped between repeats, the page-cache probe at the next repeat's start,
# pipelines/storage.c, would block in its open() in the main thread first.)
"$pbench" run "$config" -s dataset.path="$work/fifo-data" -s dataset.generate.count=64 \
    -s run.repeats=1 -s run.min_time_s=0.1 -s run.max_time_s=0.1 -o fifo-warm.json \
    >/dev/null 2>&1
"$pbench" run "$config" -s dataset.path="$work/fifo-data" -s dataset.generate.count=64 \
    -s run.repeats=50 -s run.min_time_s=3 -s run.max_time_s=3 -s run.stage_timeout_s=2 \
    -o fifo.json \
    >/dev/null 2>fifo.err &
pid=$!
until grep -q "repeat 1/50" fifo.err 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
sleep 1
victim=$(ls "$work/fifo-data" | grep -v '^\.' | head -1)
rm -f "$work/fifo-data/$victim" && mkfifo "$work/fifo-data/$victim"
start=$(date +%s.%N)
( trap - EXIT; sleep 60; kill -KILL $pid 2>/dev/null ) & # bash runs EXIT traps in subshells
guard=$!
wait $pid
code=$?
kill $guard 2>/dev/null
end=$(date +%s.%N)
named=no
grep -q "stage 'read' has not returned after .* on .*$victim" fifo.err && named=yes
written=no
complete fifo.json && written=yes
echo "dataset file replaced by a FIFO (stage_timeout_s 2): exit $code, stage and file named:" \
    "$named, result written: $written, $(python3 -c "print(round($end - $start, 1))") s after the swap"
grep "has not returned" fifo.err | sed 's/^/    /'

if command -v mpirun >/dev/null; then
    root=""
    [ "$(id -u)" = 0 ] && root=--allow-run-as-root
    mpirun -n 4 --oversubscribe $root "$pbench" run "$config" $data -s run.repeats=3 \
        -s run.warmup_batches=30 -s run.min_time_s=0.3 -s run.max_time_s=0.3 \
        -s loader.workers=1 -o mpi.json >/dev/null 2>mpi.err
    code=$?
    written=no
    complete mpi.json && written=yes
    echo "mpirun -n 4, warm-up of 30 batches: exit $code, result written: $written"
    grep -E "ran out|error" mpi.err | sed 's/^/    /'
fi
