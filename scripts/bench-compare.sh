#!/bin/sh
# Measures the comparison's false-alarm rate and its power on real runs of
# configs/ci.yaml (shortened): N runs of the unchanged config, compared in
# consecutive pairs (A vs A), and N runs with the null decoder made about 10%
# slower, each compared with an unchanged run. Prints the verdict counts.
#   scripts/bench-compare.sh [N]        (default 20; about 3 s per run)
set -eu
cd "$(dirname "$0")/.."
N="${1:-20}"
PB=./build/pbench
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
run() { # run NAME COST_US
    $PB run configs/ci.yaml -q -s dataset.path=data/ci -s run.min_time_s=0.25 \
        -s run.max_time_s=0.5 -s run.warmup_batches=3 -s pipeline.decode.cost_us="$2" \
        -o "$OUT/$1.json" > /dev/null
}
verdict() { # the samples_per_s verdict of comparing $1 with $2
    $PB compare "$OUT/$1.json" "$OUT/$2.json" --force | awk '/samples_per_s/ {print $NF}'
}
aa_same=0; aa_alarm=0; aa_amb=0; slow_hit=0; slow_amb=0; slow_miss=0
i=0
while [ "$i" -lt "$N" ]; do
    run "a$i" 300; run "b$i" 300; run "s$i" 340
    case "$(verdict "a$i" "b$i")" in
        same) aa_same=$((aa_same + 1)) ;;
        ambiguous) aa_amb=$((aa_amb + 1)) ;;
        *) aa_alarm=$((aa_alarm + 1)) ;;
    esac
    case "$(verdict "a$i" "s$i")" in
        REGRESSED) slow_hit=$((slow_hit + 1)) ;;
        ambiguous) slow_amb=$((slow_amb + 1)) ;;
        *) slow_miss=$((slow_miss + 1)) ;;
    esac
    i=$((i + 1))
done
echo "A vs A ($N pairs):        same $aa_same, ambiguous $aa_amb, false alarms $aa_alarm ($((100 * aa_alarm / N))%)"
echo "10% slower ($N pairs):    regressed $slow_hit ($((100 * slow_hit / N))%), ambiguous $slow_amb, missed $slow_miss"
