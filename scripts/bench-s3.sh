#!/bin/sh
# pbench's read rate from an S3 bucket against awscli's on the same bucket,
# through the same proxy (issue 37; goal: pbench's read-only throughput at
# least 90 % of 'aws s3 cp --recursive''s):
#
#   the bucket: s3rver on loopback (tests/objstore/servers.sh) holding DIR's
#               files under s3://bench/photos/
#   the proxy:  tests/objstore/proxy.py in front of it, adding --delay-ms to
#               every request (default 20 ms, a store in the same region)
#               and, with --fail-every K, a 503 SlowDown to 1 request in K
#   aws:        Debian's /usr/bin/aws s3 cp --recursive s3://bench/photos/ to
#               a folder on tmpfs (/dev/shm when it can be written, so that
#               the disk does not slow it), with awscli's default 10 requests
#               at a time (--aws-concurrency); ROUNDS rounds, the median.
#               Its time includes awscli starting (Python importing
#               botocore, a second or so); the table also gives its rate
#               with that start (timed on an empty prefix) left out, a
#               stricter yardstick
#   pbench:     configs/null.yaml read-only (the null decoder at 0 µs, no
#               training step): a sweep over dataset.requests_in_flight (1, 8
#               and awscli's concurrency), one worker, so that the last
#               point keeps as many requests in flight as awscli; each point
#               the median of 3 repeats
#   ceiling:    the same pbench pipeline on DIR, local files in the page cache
# MB/s are 1e6 bytes a second of object data; objects/s count whole objects.
#
#   scripts/bench-s3.sh [options] [DIR]
#     DIR                JPEGs to upload (default: 300 made by 'pbench gen',
#                        500x375 to 800x600, about 100 KB each)
#     --delay-ms N       the proxy's delay per request (default 20)
#     --fail-every K     the proxy answers 503 SlowDown to 1 request in K (default 0: none)
#     --count N          images to generate when no DIR is given (default 300)
#     --rounds N         aws rounds (default 3)
#     --in-flight LIST   pbench's requests_in_flight points (default "1 8 C")
#     --aws-concurrency C  awscli's max_concurrent_requests (default 10)
#     --workers W        pbench's loader.workers (default 1)
#   PBENCH=path/to/pbench (default ./build/pbench), KEEP=1 keeps the work
#   folder with every log and result.
#
# Needs s3rver (scripts/setup.sh installs it with npm), awscli and curl.
# Exit 0 when the figures were measured, whatever they say (a benchmark
# prints figures; it asserts nothing); 77 when a tool is missing; 1 when a
# side could not read the bucket.
set -eu

cd "$(dirname "$0")/.."
SRC=$(pwd)
PBENCH="${PBENCH:-./build/pbench}"
DELAY_MS=20
FAIL_EVERY=0
COUNT=300
ROUNDS=3
IN_FLIGHT=""
AWS_CONCURRENCY=10
WORKERS=1
DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
    --delay-ms) DELAY_MS=$2; shift 2 ;;
    --fail-every) FAIL_EVERY=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --in-flight) IN_FLIGHT=$2; shift 2 ;;
    --aws-concurrency) AWS_CONCURRENCY=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-s3: unknown option $1 (--help)" >&2; exit 2 ;;
    *) DIR=$1; shift ;;
    esac
done
IN_FLIGHT=${IN_FLIGHT:-"1 8 $AWS_CONCURRENCY"}
[ -x "$PBENCH" ] || { echo "bench-s3: no pbench at $PBENCH (build it, or set PBENCH)" >&2; exit 2; }
PBENCH=$(cd "$(dirname "$PBENCH")" && pwd)/$(basename "$PBENCH")

OBJSTORE_DIR="$SRC/tests/objstore"
. "$OBJSTORE_DIR/servers.sh"
objstore_require s3rver aws curl
OBJSTORE_KEEP=${KEEP:-0}
objstore_init
WORK=$OBJSTORE_WORK
BUCKET=bench
PREFIX=photos

# The photos: DIR as given, else generated (and their stamp removed, so
# that the local ceiling may read them with null.yaml's own generate block).
if [ -z "$DIR" ]; then
    DIR="$WORK/photos"
    "$PBENCH" gen --kind jpeg --out "$DIR" --count "$COUNT" --size 500x375-800x600 --seed 1 >/dev/null
    rm -f "$DIR/.pbench-generate"
fi
DIR=$(cd "$DIR" && pwd)
objects=$(find "$DIR" -type f ! -name '.*' | wc -l)
bytes=$(find "$DIR" -type f ! -name '.*' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
[ "$objects" -gt 0 ] || { echo "bench-s3: no files in $DIR" >&2; exit 2; }
echo "objects: $objects from $DIR, $(awk -v b="$bytes" 'BEGIN {printf "%.1f MB, %.0f KB each on average", b / 1e6, b / 1e3 / '"$objects"'}')"

objstore_start_s3rver "$BUCKET"
objstore_upload "$DIR" "s3://$BUCKET/$PREFIX/"
proxy_args="--delay-ms $DELAY_MS"
[ "$FAIL_EVERY" -gt 0 ] && proxy_args="$proxy_args --fail-every $FAIL_EVERY"
# shellcheck disable=SC2086
objstore_start_proxy "$S3RVER_URL" $proxy_args
echo "bucket: s3://$BUCKET/$PREFIX/ on s3rver $S3RVER_URL, read through proxy.py $PROXY_URL ($proxy_args)"

# --- aws s3 cp --recursive, ROUNDS times; the median ---------------------
# awscli's transfer settings come from its config file: a file of our own,
# so that a user's ~/.aws/config changes nothing.
OBJSTORE_AWS_CONFIG="$WORK/aws-config"
cat >"$OBJSTORE_AWS_CONFIG" <<EOF
[default]
s3 =
    max_concurrent_requests = $AWS_CONCURRENCY
EOF
out_root="$WORK"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    out_root=$(mktemp -d /dev/shm/pbench-bench-s3-XXXXXX)
fi
now() { date +%s.%N; }
aws_secs=""
i=1
while [ "$i" -le "$ROUNDS" ]; do
    rm -rf "$out_root/aws-out"
    start=$(now)
    if ! objstore_aws "$PROXY_URL" s3 cp --recursive --only-show-errors \
        "s3://$BUCKET/$PREFIX/" "$out_root/aws-out/" >"$WORK/aws.$i.log" 2>&1; then
        echo "bench-s3: aws s3 cp failed: $(tail -3 "$WORK/aws.$i.log")" >&2
        exit 1
    fi
    end=$(now)
    got=$(find "$out_root/aws-out" -type f | wc -l)
    [ "$got" -eq "$objects" ] || { echo "bench-s3: aws copied $got of $objects objects" >&2; exit 1; }
    secs=$(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", e - s}')
    echo "aws round $i: $secs s"
    aws_secs="$aws_secs $secs"
    i=$((i + 1))
done
rm -rf "$out_root/aws-out"
[ "$out_root" = "$WORK" ] || rmdir "$out_root"
# What of that is awscli starting (Python importing botocore): the same
# command on an empty prefix, through the same proxy. The table gives aws's
# rate with it left out too, the stricter yardstick.
start_secs=""
i=1
while [ "$i" -le "$ROUNDS" ]; do
    start=$(now)
    objstore_aws "$PROXY_URL" s3 cp --recursive --only-show-errors \
        "s3://$BUCKET/no-such-prefix-$$/" "$WORK/aws-empty/" >/dev/null 2>&1
    end=$(now)
    start_secs="$start_secs $(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", e - s}')"
    i=$((i + 1))
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# shellcheck disable=SC2086
aws_s=$(median $aws_secs)
aws_mb=$(awk -v b="$bytes" -v s="$aws_s" 'BEGIN {printf "%.1f", b / s / 1e6}')
aws_obj=$(awk -v n="$objects" -v s="$aws_s" 'BEGIN {printf "%.1f", n / s}')
# shellcheck disable=SC2086
aws_start_s=$(median $start_secs)
echo "aws: $aws_s s a copy (median), of which $aws_start_s s starting (an empty prefix, median)"

# --- pbench, read-only, the same bucket through the same proxy -----------
# Run from the work folder, so that nothing it writes lands in the tree.
cd "$WORK"
# null.yaml with its decoder at 0 µs and no training step: what is left is
# the read stage, batching and the harness, as 'aws s3 cp' is its reads and
# the writes of the files.
READ_ONLY="-s pipeline.decode.cost_us=0 -s pipeline.decode.cost_jitter=0 -s run.step_ms=0 \
-s loader.workers=$WORKERS -s run.repeats=3 -s run.warmup_batches=2 -s run.min_time_s=3 \
-s run.max_time_s=6"
axis=$(echo "$IN_FLIGHT" | tr ' ' ',')
echo "pbench: configs/null.yaml read-only, $WORKERS worker(s), dataset.requests_in_flight $axis"
# shellcheck disable=SC2086
if ! AWS_ACCESS_KEY_ID=$OBJSTORE_KEY_ID AWS_SECRET_ACCESS_KEY=$OBJSTORE_SECRET \
    AWS_DEFAULT_REGION=$OBJSTORE_REGION AWS_SHARED_CREDENTIALS_FILE=/dev/null \
    "$PBENCH" run "$SRC/configs/null.yaml" $READ_ONLY -q --no-calibrate \
    -s "dataset.path=s3://$BUCKET/$PREFIX/" -s "dataset.endpoint=$PROXY_URL" \
    -a "dataset.requests_in_flight=$axis" -o "$WORK/s3.json" >"$WORK/s3.out" 2>"$WORK/s3.err"; then
    echo "bench-s3: pbench could not read s3://$BUCKET/$PREFIX/: $(tail -3 "$WORK/s3.err")" >&2
    echo "aws s3 cp: $aws_mb MB/s, $aws_obj objects/s (median of $ROUNDS, its start included)"
    exit 1
fi
# shellcheck disable=SC2086
if ! "$PBENCH" run "$SRC/configs/null.yaml" $READ_ONLY -q -s "dataset.path=$DIR" \
    -o "$WORK/local.json" >"$WORK/local.out" 2>"$WORK/local.err"; then
    echo "bench-s3: pbench could not read $DIR: $(tail -3 "$WORK/local.err")" >&2
    exit 1
fi

# --- the table -----------------------------------------------------------
/usr/bin/python3 - "$WORK/s3.json" "$WORK/local.json" "$aws_s" "$aws_start_s" "$bytes" "$objects" \
    "$AWS_CONCURRENCY" "$WORKERS" "$ROUNDS" <<'PY'
import json
import sys

s3_path, local_path, aws_s, aws_start_s, nbytes, objects, aws_conc, workers, rounds = sys.argv[1:]
aws_s, aws_start_s, nbytes, objects = float(aws_s), float(aws_start_s), int(nbytes), int(objects)
aws_conc, workers = int(aws_conc), int(workers)
aws_mb, aws_obj = nbytes / aws_s / 1e6, objects / aws_s
s3, local = json.load(open(s3_path)), json.load(open(local_path))


def read_counter(point, key):
    """The read stage's counter key (retries, retry_503, ...), or None."""
    for stage in point.get("stages", []):
        if stage.get("name") == "read":
            return stage.get("counters", {}).get(key)
    return None


rows = [("aws s3 cp --recursive, %d at a time" % aws_conc, aws_mb, aws_obj, "median of %s" % rounds)]
net_s = aws_s - aws_start_s
if net_s > 0:
    rows.append(("aws s3 cp, its %.2f s start left out" % aws_start_s, nbytes / net_s / 1e6,
                 objects / net_s, "the stricter yardstick"))
fair = None
for p in s3["points"]:
    rif = p["axes"].get("dataset.requests_in_flight")
    retries = read_counter(p, "retries")
    note = "%s retries" % retries if retries is not None else ""
    rows.append(("pbench, %d in flight x %d worker(s)" % (rif, workers), p["mb_per_s"],
                 p["samples_per_s"], note))
    if rif * workers == aws_conc:
        fair = p
lp = local["points"][0]
rows.append(("pbench, local files (ceiling)", lp["mb_per_s"], lp["samples_per_s"], "page cache"))

print()
print("%-42s %9s %10s %8s  %s" % ("", "MB/s", "objects/s", "vs aws", ""))
for name, mb, obj, note in rows:
    print("%-42s %9.1f %10.1f %7.0f%%  %s" % (name, mb, obj, 100 * mb / aws_mb, note))
best = max(s3["points"], key=lambda p: p["mb_per_s"])
if fair is None:
    fair = best
    print("\nno point keeps %d requests in flight as aws does: the verdict takes pbench's best" % aws_conc)
ratio = 100 * fair["mb_per_s"] / aws_mb
rif = fair["axes"].get("dataset.requests_in_flight")
print("\nverdict: pbench reads %.0f%% of aws s3 cp's MB/s at %d requests in flight (goal >= 90%%): %s"
      % (ratio, rif * workers, "met" if ratio >= 90 else "NOT met"))
if net_s > 0:
    strict = 100 * fair["mb_per_s"] / (nbytes / net_s / 1e6)
    print("         %.0f%% of aws's rate with its start left out: %s"
          % (strict, "met" if strict >= 90 else "NOT met"))
first = s3["points"][0]
print("requests_in_flight %s -> %s: %.1f -> %.1f objects/s (%.2fx); the local ceiling %.1f objects/s"
      % (first["axes"].get("dataset.requests_in_flight"), best["axes"].get("dataset.requests_in_flight"),
         first["samples_per_s"], best["samples_per_s"],
         best["samples_per_s"] / first["samples_per_s"] if first["samples_per_s"] else 0,
         lp["samples_per_s"]))
PY
# pbench's own choice among the points (its recommendation rule).
grep '^recommended point' "$WORK/s3.out" || true
