#!/bin/sh
# Two builds of pbench on the bars a change to the measurement loop must not
# move, interleaved A B B A (a drift of the machine falls on both alike):
# pbench's own engine on configs/image.yaml, the torch engine on the same
# config, and pbench wrap's stall against a job's own clock
# (tests/wrap_jobs/epochs.py prints what its perf_counter saw). Prints each
# side's samples/s per run, the medians, and wrap's stall minus the job's
# own, per run:
#   scripts/bench-bars.sh A/pbench B/pbench [ROUNDS]     (default 2 rounds)
# Results go to bars/ in the current folder; the image data is generated
# there once, by A. Needs Debian's python3-torch under /usr/bin/python3.
set -eu
[ $# -ge 2 ] || { echo "usage: scripts/bench-bars.sh A_PBENCH B_PBENCH [ROUNDS]" >&2; exit 2; }
A=$1; B=$2; ROUNDS=${3:-2}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p bars
n=0
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    for who in A B B A; do
        if [ "$who" = A ]; then P=$A; else P=$B; fi
        "$P" run "$SRC/configs/image.yaml" -q -o "bars/img-$who-$n.json" >/dev/null 2>&1
        "$P" run "$SRC/configs/image.yaml" -q -s loader.engine=torch \
            -o "bars/torch-$who-$n.json" >/dev/null 2>&1
        "$P" wrap --until-exit --warmup-batches 5 -q -o "bars/wrap-$who-$n.json" -- \
            /usr/bin/python3 "$SRC/tests/wrap_jobs/epochs.py" --epochs 5 --batches 12 \
            --batch-size 4 --item-ms 4 --step-ms 40 --workers 2 --warmup 5 \
            2>"bars/wrap-$who-$n.err" >/dev/null || true
        n=$((n + 1))
    done
    r=$((r + 1))
done
/usr/bin/python3 - bars <<'PY'
import glob, json, re, statistics, sys
res = sys.argv[1]
def order(path):
    return int(re.search(r"-(\d+)\.json$", path).group(1))
for kind in ("img", "torch"):
    for who in "AB":
        runs = sorted(glob.glob("%s/%s-%s-*.json" % (res, kind, who)), key=order)
        rates = [json.load(open(f))["points"][0]["samples_per_s"] for f in runs]
        if rates:
            print("%-5s %s samples/s: %s; median %.1f" % (kind, who, ", ".join(
                "%.0f" % x for x in rates), statistics.median(rates)))
for who in "AB":
    diffs = []
    for f in sorted(glob.glob("%s/wrap-%s-*.json" % (res, who)), key=order):
        m = re.search(r"hand timing: (\{.*\})", open(f[:-5] + ".err").read())
        if m:
            rep = json.load(open(f))["points"][0]["repeats"][0]
            diffs.append(rep["stall_pct"] - json.loads(m.group(1))["stall_pct"])
    print("wrap  %s stall minus the job's own (points): %s" % (who, ", ".join(
        "%+.2f" % d for d in diffs)))
PY
