#!/bin/sh
# pbench's cold read rate against fio's on the same files, read the same
# way (issue 14; goal: pbench >= 90 % of fio):
#   pbench: a read-only pipeline, one worker, files in order (no shuffle),
#           dataset.cache: cold (every file evicted before each repeat and
#           after it is read), 4 KiB read calls (pipeline.read.block_kib: 4)
#   fio:    one job reading the same files in order with psync 4 KiB reads (fio reads a file only in whole blocks, so a larger
#           block would skip the tails of these small files),
#           --invalidate=1 (the files dropped from the page cache first),
#           --readonly, every file of the folder (--opendir), each to its end
#           before the next (file_service_type=sequential)
# Both figures are MB/s (1e6 bytes a second).
#
#   scripts/bench-storage.sh [DIR]      DIR: the files (default /tmp/photos-storage,
#                                      copied from /tmp/photos when missing)
#
# DIR must be on a disk file system: on tmpfs nothing can be evicted and both
# tools read memory (the script refuses it). Run it on an otherwise idle machine.
set -eu

cd "$(dirname "$0")/.."
PBENCH="${PBENCH:-./build/pbench}"
DIR="${1:-/tmp/photos-storage}"
WORK="${WORK:-data/bench-storage}"
ROUNDS="${ROUNDS:-3}"
# fio passes over the files, each invalidated first, so it runs for seconds
# as pbench does (a single pass of small files is over in a blink).
LOOPS="${LOOPS:-20}"
mkdir -p "$WORK"

if [ ! -d "$DIR" ] && [ "$DIR" = /tmp/photos-storage ] && [ -d /tmp/photos ]; then
    cp -r /tmp/photos "$DIR"
fi
fs=$(stat -f -c %T "$DIR")
case "$fs" in
tmpfs | ramfs) echo "bench-storage: $DIR is on $fs, which cannot evict: pick a disk folder" >&2; exit 2 ;;
esac
command -v fio >/dev/null || { echo "bench-storage: fio is missing (scripts/setup.sh installs it)" >&2; exit 2; }

files=$(find "$DIR" -type f ! -name '.*' | wc -l)
bytes=$(find "$DIR" -type f ! -name '.*' -printf '%s\n' | awk '{s += $1} END {print s}')
echo "files: $files in $DIR ($fs), $bytes bytes"

cat >"$WORK/read-only.yaml" <<YAML
name: read-only
dataset: {path: $DIR, shuffle: false, cache: cold}
pipeline:
  - read: {block_kib: 4}
loader: {workers: 1, batch_size: 16, prefetch_factor: 2}
run: {warmup_batches: 2, min_time_s: 2, max_time_s: 4, repeats: 3, step_ms: 0}
YAML

pbench_mb() {
    "$PBENCH" run "$WORK/read-only.yaml" -q -o "$WORK/pbench.json" >/dev/null
    python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['points'][0]['mb_per_s'])" \
        "$WORK/pbench.json"
}
fio_mb() {
    fio --name=cold-read --readonly --rw=read --bs=4k --ioengine=psync --invalidate=1 \
        --thread --numjobs=1 --file_service_type=sequential --opendir="$DIR" --loops="$LOOPS" \
        --output-format=json --output="$WORK/fio.json" >/dev/null
    python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['jobs'][0]['read']['bw_bytes'] / 1e6))" \
        "$WORK/fio.json"
}

# Interleaved rounds, so drift in the machine hits both alike; medians.
p_all="" f_all=""
i=1
while [ "$i" -le "$ROUNDS" ]; do
    p=$(pbench_mb)
    f=$(fio_mb)
    echo "round $i: pbench $p MB/s, fio $f MB/s"
    p_all="$p_all $p"
    f_all="$f_all $f"
    i=$((i + 1))
done
median() { printf '%s\n' $@ | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
pm=$(median $p_all)
fm=$(median $f_all)
ratio=$(awk -v p="$pm" -v f="$fm" 'BEGIN {printf "%.0f", 100 * p / f}')
echo "cold read, median of $ROUNDS rounds: pbench $pm MB/s, fio $fm MB/s: pbench at $ratio % of fio (goal >= 90 %)"
