#!/bin/sh
# The nightly dashboard on made-up nights with a deliberate step: NIGHTS
# (8) runs of configs/null.yaml, the last SLOW (3) with decode dearer
# (pipeline.decode.cost_us 300 -> 460: about 30% fewer samples/s) but filed under the unchanged config,
# as a code regression would be (each result's config is set back to 300 and
# its created time to night N before `history add`). Then `history show
# --format html` and headless Chromium (scripts/html-shot.sh) render the page
# to a PNG. Prints where the files are; exits as history show does (3: the
# step was found as a regression).
#   scripts/history-dashboard.sh [OUT_DIR]     (about a minute; after a build)
set -eu
cd "$(dirname "$0")/.."
PB="${PBENCH:-$PWD/build/pbench}"
case "$PB" in /*) ;; *) PB="$PWD/$PB" ;; esac
NIGHTS="${NIGHTS:-8}"
SLOW="${SLOW:-3}"
OUT="${1:-$(mktemp -d)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
CONFIG="$PWD/configs/null.yaml"
SHOT="$PWD/scripts/html-shot.sh"
cd "$OUT"
rm -f history.db
n=1
while [ "$n" -le "$NIGHTS" ]; do
    cost=300
    [ "$n" -gt $((NIGHTS - SLOW)) ] && cost=460
    "$PB" run "$CONFIG" -q -s dataset.path=data -s dataset.generate.count=128 \
        -s dataset.generate.size_bytes=4096 -s loader.workers=1 -s run.step_ms=0 \
        -s run.warmup_batches=2 -s run.min_time_s=0.3 -s run.max_time_s=0.6 \
        -s run.repeats=3 -s pipeline.decode.cost_us=$cost -o "night$n.json" > /dev/null
    python3 - "night$n.json" "$n" <<'PY'
import json, sys
path, night = sys.argv[1], int(sys.argv[2])
r = json.load(open(path))
for stage in r["config"]["pipeline"]:
    if "decode" in stage:
        stage["decode"]["cost_us"] = 300.0
r["created"] = "2026-11-%02dT03:17:00Z" % night
json.dump(r, open(path, "w"), indent=1)
PY
    "$PB" history add "night$n.json" --db history.db --revision "$(printf 'a%02d%05x' "$n" $((n * 7919)))" > /dev/null
    n=$((n + 1))
done
code=0
"$PB" history show --db history.db --format html -o history.html || code=$?
"$PB" history show --db history.db > history.txt || true
sh "$SHOT" history.html history.png 1400x1200 || true
echo "history show exit $code (3: a regression step); files in $OUT: history.db history.html history.png history.txt"
exit "$code"
