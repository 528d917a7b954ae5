#!/bin/sh
# The compare gate on real runs, as CI uses it: configs/ci.yaml (shortened)
# measured four times, A and A again with the null decoder at 300 us, then
# about 10% faster (260 us) and 10% slower (340 us), each compared with A
# by `pbench compare --fail-on-regression`. An "ambiguous" verdict means the
# data cannot tell; as a user would, both sides are then measured once more
# with 16 repeats. Then `pbench history` on A, A again and a third A: a
# series of unchanged runs, with no step (a changed cost_us is another
# config, so another series: a step of the same series needs another build,
# as in docs/statistics.md's nightly simulation; tests/test_history.c tests
# it). Prints each verdict,
# its exit code and what was expected. The outcome depends on how quiet the
# machine is, which is why this is a benchmark and not a test; the
# statistics are tested on synthetic data in tests/test_compare.c, and the
# exit codes on results of known samples/s in tests/test_e2e.c.
# The exit codes a nightly job acts on: `pbench compare --fail-on-regression`
# 0 pass, 3 a gated regression, 4 inconclusive (a gated verdict withheld:
# other processes disturbed a side), 2 a usage error (a --gate name no side
# has included); `pbench history show` 0 no regression step and no suspect
# run, 3 a regression step (2 runs in a row past the threshold), 5 a suspect
# newest run (one night outside the series' run-to-run noise by more than
# the threshold, not yet a step), 2 a --metric name no run has.
#   scripts/bench-gate.sh            (about a minute; after a build)
#   KEEP=1 scripts/bench-gate.sh     keeps the results and says where
set -eu
cd "$(dirname "$0")/.."
PB="${PBENCH:-$PWD/build/pbench}"
CONFIG="$PWD/configs/ci.yaml"
OUT="$(mktemp -d)"
if [ -n "${KEEP:-}" ]; then echo "files in $OUT" >&2; fi
trap '[ -n "${KEEP:-}" ] || rm -rf "$OUT"' EXIT
cd "$OUT"

run() { # run NAME COST_US REPEATS
    # Small files and images: the decoder's CPU cost dominates the sample,
    # so a change of cost_us is a change of throughput of about that size.
    "$PB" run "$CONFIG" -q -s dataset.path=ci-data -s run.min_time_s=0.25 \
        -s run.max_time_s=0.5 -s run.warmup_batches=3 -s pipeline.decode.cost_us="$2" \
        -s dataset.generate.size_bytes=1024 -s pipeline.decode.width=16 \
        -s pipeline.decode.height=16 -s run.repeats="$3" -o "$1.json" > /dev/null
}
compare() { # compare BASE NEW: prints "VERDICT EXIT"
    rc=0
    "$PB" compare "$1.json" "$2.json" --force --fail-on-regression > cmp.txt 2>&1 || rc=$?
    # the table's row (the lines under it that name the metric have a colon)
    printf '%s %s\n' "$(awk '/samples_per_s/ && !/:/ {print $NF; exit}' cmp.txt)" "$rc"
}
gate() { # gate LABEL NEW COST EXPECTED_VERDICT EXPECTED_EXIT
    got="$(compare a "$2")"
    if [ "${got%% *}" = ambiguous ]; then
        run a-more 300 16
        run "$2-more" "$3" 16
        got="$(compare a-more "$2-more") (after 16 more repeats)"
    fi
    verdict="${got%% *}"; rest="${got#* }"; rc="${rest%% *}"
    mark="as expected"
    [ "$verdict" = "$4" ] && [ "$rc" = "$5" ] || mark="UNEXPECTED"
    printf '%-22s %-10s exit %s  (expected %s, exit %s: %s)%s\n' "$1" "$verdict" "$rc" "$4" "$5" \
        "$mark" "${rest#"$rc"}"
}

run a 300 8
run a2 300 8
run fast 260 8 # fast before slow: history orders runs by when they were measured
run slow 340 8
gate "A vs A" a2 300 same 0
gate "A vs 10% slower" slow 340 REGRESSED 3
gate "A vs 10% faster" fast 260 IMPROVED 0

run a3 300 8
for r in a:r1 a2:r2 a3:r3; do
    "$PB" history add "${r%%:*}.json" --db h.db --revision "${r#*:}" > /dev/null
done
rc=0
"$PB" history show --db h.db --config ci > history.txt 2>&1 || rc=$?
step="no step change"
grep -q "STEP CHANGE" history.txt && step="$(grep -o 'STEP CHANGE.*' history.txt | head -n 1)"
grep -q "SUSPECT" history.txt && step="$step; $(grep -o 'SUSPECT.*' history.txt | head -n 1)"
printf '%-22s exit %s  (expected exit 0, no step and no suspect run in unchanged runs; 3 is a\n' \
    "history" "$rc"
printf '%-22s regression step, 5 a suspect newest run): %s\n' "" "$step"
