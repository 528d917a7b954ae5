#!/bin/sh
# Measures how often pbench compare is right on the shipped defaults: the
# false-alarm rate of A vs A, and how often a 5% and a 10% slower decode is
# found, for both ways of comparing:
#   file         two separate `pbench run`s, then `pbench compare A.json B.json`
#   interleaved  `pbench compare A.yaml B.yaml`: both measured in one session,
#                rounds interleaved A B B A ...
# Each trial measures configs/null.yaml with its own settings (5 repeats),
# the change being pipeline.decode.cost_us 300 -> 318 or 345: on the 2-core
# development VM these slow samples/s by about 5% and 10% (the loop's 5 ms
# step absorbs part of a decode change); the table prints the change each
# cell actually measured.
# Prints, per comparison, the samples/s verdicts (same, REGRESSED, improved,
# ambiguous) and how often `--fail-on-regression` exits 3, with the median
# measured change of samples/s and the other processes' share of the CPU.
#   scripts/bench-compare.sh [N] [--busy]
#     N       trials per cell (default 10; a trial takes about a minute)
#     --busy  one busy-looping process runs beside pbench the whole time
set -eu
cd "$(dirname "$0")/.."
N=10; BUSY=0
for a in "$@"; do
    case "$a" in
    --busy) BUSY=1 ;;
    *[!0-9]*|'') echo "usage: scripts/bench-compare.sh [N] [--busy]" >&2; exit 2 ;;
    *) N="$a" ;;
    esac
done
PB=./build/pbench
[ -x "$PB" ] || { echo "bench-compare: build pbench first (scripts/setup.sh)" >&2; exit 1; }
OUT="$(mktemp -d)"
LOOP_PID=""
cleanup() { [ -n "$LOOP_PID" ] && kill "$LOOP_PID" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT INT TERM
DATA="$PWD/data/null-smoke"
for cost in 300 318 345; do
    sed "s/cost_us: 300/cost_us: $cost/" configs/null.yaml > "$OUT/c$cost.yaml"
done
if [ "$BUSY" = 1 ]; then
    sh -c 'while :; do :; done' &
    LOOP_PID=$!
fi

run() { # run NAME COST: one ordinary run
    $PB run "$OUT/c$2.yaml" -q -s dataset.path="$DATA" -o "$OUT/$1.json" > /dev/null
}
# One comparison: appends "verdict exit change% other_cpu%" to $OUT/LABEL.
record() { # record LABEL (the compare command's stdout in $OUT/cmp.txt, its exit in $rc)
    v=$(awk '/samples_per_s/ {print $NF; exit}' "$OUT/cmp.txt")
    ch=$(awk '/samples_per_s/ {for (i = 1; i <= NF; i++) if ($i ~ /%$/ && $i ~ /^[-+]/) {print $i; exit}}' "$OUT/cmp.txt")
    echo "${v:-none} $rc ${ch:-?}" >> "$OUT/$1"
}
file_compare() { # file_compare LABEL BASE NEW
    rc=0; $PB compare "$OUT/$2.json" "$OUT/$3.json" --force --fail-on-regression > "$OUT/cmp.txt" 2>/dev/null || rc=$?
    record "$1"
}
interleaved() { # interleaved LABEL BASE_COST NEW_COST
    rc=0; $PB compare "$OUT/c$2.yaml" "$OUT/c$3.yaml" -q -s dataset.path="$DATA" \
        --fail-on-regression -o "$OUT/ab.json" > "$OUT/cmp.txt" 2>/dev/null || rc=$?
    record "$1"
    other=$(grep -o '"other_cpu_pct": [0-9.]*' "$OUT/ab.json" | awk '{s += $2; n++} END {if (n) printf "%.1f", s / n}')
    echo "${other:-0}" >> "$OUT/other"
}

i=0
while [ "$i" -lt "$N" ]; do
    run "a$i" 300; run "b$i" 300; run "s5_$i" 318; run "s10_$i" 345
    for f in "a$i" "b$i" "s5_$i" "s10_$i"; do
        grep -o '"other_cpu_pct": [0-9.]*' "$OUT/$f.json" | awk '{s += $2; n++} END {if (n) printf "%.1f\n", s / n}' >> "$OUT/other"
    done
    file_compare file_aa "a$i" "b$i"
    file_compare file_5 "a$i" "s5_$i"
    file_compare file_10 "b$i" "s10_$i"
    interleaved int_aa 300 300
    interleaved int_5 300 318
    interleaved int_10 300 345
    i=$((i + 1))
    echo "bench-compare: trial $i of $N done" >&2
done

summary() { # summary LABEL TITLE
    awk -v title="$2" '
        { n++; v[$1]++; if ($2 == 3) gate++; c[n] = $3 + 0 }
        END {
            # median measured change
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (c[j] < c[i]) { t = c[i]; c[i] = c[j]; c[j] = t }
            med = n % 2 ? c[(n + 1) / 2] : (c[n / 2] + c[n / 2 + 1]) / 2
            printf "| %s | %d | %d | %d | %d | %d | %d (%d%%) | %+.1f%% |\n", title, n, v["same"] + 0,
                v["REGRESSED"] + 0, v["improved"] + v["IMPROVED"] + 0, v["ambiguous"] + 0, gate + 0,
                n ? 100 * gate / n : 0, med
        }' "$OUT/$1"
}
echo
echo "machine: $(nproc) CPUs; $( [ "$BUSY" = 1 ] && echo 'one busy process beside pbench' || echo 'nothing else started by this script')"
echo "other processes' share of the CPU during the runs (median of runs): $(sort -n "$OUT/other" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')%"
echo
echo "| comparison | trials | same | REGRESSED | improved | ambiguous | gate exit 3 | median change of samples/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
summary file_aa "file, A vs A"
summary file_5 "file, about 5% slower"
summary file_10 "file, about 10% slower"
summary int_aa "interleaved, A vs A"
summary int_5 "interleaved, about 5% slower"
summary int_10 "interleaved, about 10% slower"
