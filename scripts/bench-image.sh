#!/bin/sh
# The image pipeline's five benchmark figures (issue 3), printed at the end
# with the goal each one is held to:
#   1. decode-only megapixels/s on one core against libjpeg-turbo's tjbench,
#      on the same files (goal >= 95 %)
#   2. configs/image.yaml with 2 workers against a PyTorch DataLoader doing
#      the same transforms on the same files (goal >= 4x samples/s)
#   3. configs/image.yaml scaling from 1 to 2 workers (goal >= 1.8x)
#   4. decode scale: auto against scale: 1 on 2000x1500 images, same pipeline
#   5. instrumentation overhead on configs/image.yaml, pbench run --overhead
#      (goal <= 1 %)
#
#   6. the torch engine (loader.engine: torch) against a plain DataLoader
#      script with the same transforms, alternated (goal within 10 %), with
#      its stage rows against its workers' CPU and its --overhead (<= 2 %)
#
#   scripts/bench-image.sh [all|decode|torch|scaling|scale|overhead|engine]...
#   IMAGES=/tmp/photos scripts/bench-image.sh torch
#
# IMAGES names the folder of JPEGs the benchmarks read (default data/image,
# configs/image.yaml's generated set; give real photographs, e.g. Debian's
# wallpapers re-encoded to about 500x375 at quality 90, for figures worth
# quoting). BATCH is the batch size of both loaders in 2. (default 32) and
# ROUNDS how many times 2. alternates pbench and PyTorch (default 3): the
# medians are compared and the spread of each is printed, since on a
# shared machine a figure moves with what else runs.
#
# 2. also prints the per-core figure: pbench's samples per second of its
# process's CPU time (the whole pipeline: read, decode, crop, flip,
# normalize, collate) against whole images decoded per CPU second by
# tjDecompress2 alone (bench/peers/tjdecode_rate.c) on the same files.
#
# Run it on an otherwise idle machine, after scripts/setup.sh. It installs
# the benchmark-only tools it needs (libjpeg-turbo-progs for tjbench;
# python3-torch, python3-torchvision, python3-pil for the peer) with apt-get.
# Data goes under data/ (ignored by git): data/image is configs/image.yaml's
# own dataset; data/bench-image holds the rest and every result file.
set -eu

cd "$(dirname "$0")/.."
PBENCH="${PBENCH:-./build/pbench}"
WORK="${WORK:-data/bench-image}"
PYTHON="${PYTHON:-/usr/bin/python3}"  # Debian's, where python3-torch lives
IMAGES="${IMAGES:-data/image}"         # data/image: dataset.path of configs/image.yaml
BATCH="${BATCH:-32}"
ROUNDS="${ROUNDS:-3}"
mkdir -p "$WORK"
SUMMARY="$WORK/summary.txt"

note() { printf '%s\n' "$*" >&2; }

install_packages() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    note "bench-image: installing$missing"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing ||
        { $SUDO apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing; }
}

# The dataset of configs/image.yaml, made as its generate block says (a
# folder given as IMAGES must exist already).
ensure_images() {
    [ -d "$IMAGES" ] && [ -n "$(ls -A "$IMAGES" 2>/dev/null)" ] && return 0
    [ "$IMAGES" = data/image ] || { note "bench-image: IMAGES=$IMAGES holds no files"; exit 1; }
    "$PBENCH" gen --kind jpeg --count 1000 --size 400x300-600x450 --quality 90 \
        --progressive-fraction 0.3 --grayscale-fraction 0.1 --seed 1 --out "$IMAGES" >&2
}

# json FILE EXPRESSION: evaluates a Python expression over the result r.
json() {
    "$PYTHON" -c "import json,sys; r=json.load(open(sys.argv[1])); p=r['points'][0]; print($2)" "$1"
}

cpu_pct() { # result: the process's CPU over the measured part, 100 = one core
    json "$1" "p['cpu_util_pct']"
}

stage_mean_ns() { # result stage
    json "$1" "next(s['mean_ns'] for s in p['stages'] if s['name'] == '$2')"
}

# Appends a figure to the summary with the 1-minute load average at its end:
# anything else running on the machine shows there and skews the figure.
record() {
    printf '%s [load %s]\n' "$*" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$SUMMARY"
}

# ---- 1. decode-only Mpix/s vs tjbench ---------------------------------------
bench_decode() {
    install_packages libjpeg-turbo-progs
    ensure_images
    files="$WORK/decode-files"
    if [ ! -d "$files" ]; then
        mkdir -p "$files"
        # The first 32 files of the image set: 4:2:0 colour, progressive and
        # grayscale ones in the proportions the set has.
        ls "$IMAGES" | sort | head -n 32 | while read -r f; do cp "$IMAGES/$f" "$files/"; done
    fi
    cat >"$WORK/decode.yaml" <<EOF
name: jpeg-decode
dataset: {path: $files, shuffle: true}
pipeline:
  - read:
  - decode: {decoder: jpeg, output: rgb}
loader: {workers: 1, batch_size: 8, prefetch_factor: 2}
run: {warmup_batches: 16, min_time_s: 2, max_time_s: 4, repeats: 2, step_ms: 0}
EOF
    # The same with a stage after decode (a flip that never flips), so that
    # decode writes into the worker's reused buffer, as in configs/image.yaml,
    # instead of a new batch slot each time (cold memory).
    sed 's/^  - decode: .*/&\n  - flip: {p: 0}/' "$WORK/decode.yaml" >"$WORK/decode-scratch.yaml"
    # Three rounds, tjbench then pbench in each, so that a change in what
    # else the machine does weighs on both; the medians are compared.
    : >"$WORK/tjbench.txt"
    for round in 1 2 3; do
        note "bench-image: 1. round $round: tjbench on each of $(ls "$files" | wc -l) files (one thread, to RGB)"
        for f in "$files"/*.jpg; do
            # -quiet prints a table; the last column of its last line is
            # the decompression throughput in Mpixels/s.
            rate=$(tjbench "$f" -rgb -nowrite -benchtime 0.5 -warmup 0.1 -quiet 2>/dev/null |
                   awk 'NF { last = $NF } END { print last }')
            printf '%s %s %s\n' "$round" "$f" "$rate" >>"$WORK/tjbench.txt"
        done
        note "bench-image: 1. round $round: pbench read -> decode, 1 worker"
        "$PBENCH" run "$WORK/decode.yaml" -o "$WORK/decode-$round.json" -q >&2
        "$PBENCH" run "$WORK/decode-scratch.yaml" -o "$WORK/decode-scratch-$round.json" -q >&2
    done
    "$PYTHON" - "$WORK" <<'EOF' | tee -a "$SUMMARY"
import json, statistics, struct, sys

def pixels(path):
    b = open(path, "rb").read()
    i = 2
    while i + 9 < len(b):
        m, n = b[i + 1], b[i + 2] << 8 | b[i + 3]
        if m in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", b[i + 5:i + 9])
            return w * h
        i += 2 + n
    raise SystemExit(f"no frame header in {path}")

work = sys.argv[1]
rows = [line.split() for line in open(f"{work}/tjbench.txt") if line.strip()]
px = {f: pixels(f) for _, f, _ in rows}
mean_px = sum(px.values()) / len(px)  # shuffled epochs visit every file equally
tj, pb, pb_cpu, pb_scratch = [], [], [], []
for round in ("1", "2", "3"):
    # tjbench's time for one decode of each file, summed: the set's rate.
    mine = [(px[f], float(rate)) for r, f, rate in rows if r == round]
    tj.append(sum(p for p, _ in mine) / sum(p / rate for p, rate in mine))
    result = json.load(open(f"{work}/decode-{round}.json"))
    decode = next(s for s in result["points"][0]["stages"] if s["name"] == "decode")
    pb.append(mean_px / (decode["mean_ns"] / 1e3))
    pb_cpu.append(mean_px / (decode["cpu_ns"] / decode["count"] / 1e3))
    result = json.load(open(f"{work}/decode-scratch-{round}.json"))
    decode = next(s for s in result["points"][0]["stages"] if s["name"] == "decode")
    pb_scratch.append(mean_px / (decode["mean_ns"] / 1e3))
tj_mpix, pb_mpix = statistics.median(tj), statistics.median(pb)
print(f"1. decode only, 1 core, {len(px)} files of {mean_px / 1e6:.3f} Mpix mean: "
      f"pbench {pb_mpix:.1f} Mpix/s (rounds {', '.join(f'{x:.0f}' for x in pb)}; per CPU-second "
      f"{statistics.median(pb_cpu):.1f}), tjbench {tj_mpix:.1f} Mpix/s (rounds "
      f"{', '.join(f'{x:.0f}' for x in tj)}) -> {100 * pb_mpix / tj_mpix:.1f} % of tjbench "
      f"(goal >= 95 %); decoding into a reused buffer as in image.yaml "
      f"{statistics.median(pb_scratch):.1f} Mpix/s -> "
      f"{100 * statistics.median(pb_scratch) / tj_mpix:.1f} % [load "
      f"{open('/proc/loadavg').read().split()[0]}]")
EOF
}

# ---- 2. configs/image.yaml vs the PyTorch DataLoader ------------------------
run_image() { # output.json [pbench args...]
    out="$1"
    shift
    "$PBENCH" run configs/image.yaml -s "dataset.path=$IMAGES" -o "$out" -q "$@" >&2
    json "$out" "p['samples_per_s']"
}

bench_torch() {
    install_packages python3-torch python3-torchvision python3-pil
    ensure_images
    cc -O2 -o "$WORK/tjdecode_rate" bench/peers/tjdecode_rate.c -lturbojpeg
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
        note "bench-image: 2. round $round/$ROUNDS: pbench configs/image.yaml, 2 workers, batch $BATCH, $IMAGES"
        run_image "$WORK/image-w2-$round.json" -s "loader.batch_size=$BATCH" >/dev/null
        note "bench-image: 2. round $round/$ROUNDS: PyTorch DataLoader, 2 workers, same files and transforms"
        "$PYTHON" bench/peers/torch_image_loader.py --data "$IMAGES" --workers 2 \
            --batch-size "$BATCH" --time 5 --repeats 3 >"$WORK/torch-$round.json"
        note "bench-image: 2. round $round/$ROUNDS: tjDecompress2 on the whole images, one thread"
        "$WORK/tjdecode_rate" "$IMAGES" 3 >"$WORK/tjdecode-$round.json"
        round=$((round + 1))
    done
    "$PYTHON" - "$WORK" "$ROUNDS" "$BATCH" "$IMAGES" <<'EOF' | tee -a "$SUMMARY"
import json, statistics, sys
work, rounds, batch, images = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
pb, pb_cpu, pb_per_core, torch, torch_cpu, tj = [], [], [], [], [], []
for r in range(1, rounds + 1):
    p = json.load(open(f"{work}/image-w2-{r}.json"))["points"][0]
    pb.append(p["samples_per_s"])
    pb_cpu.append(p["cpu_util_pct"])
    pb_per_core.append(p["samples_per_s"] / (p["cpu_util_pct"] / 100))
    t = json.load(open(f"{work}/torch-{r}.json"))
    torch.append(t["samples_per_s"])
    torch_cpu.append(t["cpu_pct"])
    tj.append(json.load(open(f"{work}/tjdecode-{r}.json"))["images_per_cpu_s"])
med = statistics.median
spread = lambda xs: f"{min(xs):.0f}..{max(xs):.0f}"
ratios = [a / b for a, b in zip(pb, torch)]
load = open("/proc/loadavg").read().split()[0]
print(f"2. configs/image.yaml, 2 workers, batch {batch}, {images}, {rounds} rounds: pbench "
      f"{med(pb):.1f} samples/s (rounds {spread(pb)}, CPU {med(pb_cpu):.0f} %), PyTorch "
      f"DataLoader {med(torch):.1f} samples/s (rounds {spread(torch)}, CPU {med(torch_cpu):.0f} %)"
      f" -> {med(pb) / med(torch):.2f}x (per round {', '.join(f'{x:.2f}' for x in ratios)}; "
      f"goal >= 4x) [load {load}]")
print(f"2b. per core: pbench's whole pipeline {med(pb_per_core):.0f} samples per CPU second "
      f"(rounds {spread(pb_per_core)}), tjDecompress2 alone on the whole images {med(tj):.0f} "
      f"images per CPU second (rounds {spread(tj)}) -> {med(pb_per_core) / med(tj):.2f}x "
      f"(goal >= 1x) [load {load}]")
EOF
}

# ---- 6. the torch engine against a plain DataLoader script -------------------
# pbench's torch engine (loader.engine: torch) runs configs/image.yaml as a
# DataLoader; bench/peers/torch_image_loader.py is the plain DataLoader a
# user writes for the same transforms. Alternated, same files, 2 workers,
# persistent workers in both (the script's choice). Then the harness's own
# cost in the torch engine: --overhead (paired repeats, timing on and off).
bench_engine() {
    install_packages python3-torch python3-torchvision python3-pil python3-av
    ensure_images
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
        note "bench-image: 6. round $round/$ROUNDS: pbench's torch engine, 2 workers, batch $BATCH, $IMAGES"
        run_image "$WORK/engine-$round.json" -s loader.engine=torch -s "loader.batch_size=$BATCH" \
            -s loader.persistent_workers=true -s run.max_time_s=6 >/dev/null
        note "bench-image: 6. round $round/$ROUNDS: a plain DataLoader script, same files and transforms"
        "$PYTHON" bench/peers/torch_image_loader.py --data "$IMAGES" --workers 2 \
            --batch-size "$BATCH" --time 5 --repeats 5 >"$WORK/plain-$round.json"
        round=$((round + 1))
    done
    note "bench-image: 6. the torch engine with --overhead (6 paired repeats)"
    run_image "$WORK/engine-overhead.json" -s loader.engine=torch -s "loader.batch_size=$BATCH" \
        -s loader.persistent_workers=true -s run.repeats=6 --overhead >/dev/null
    "$PYTHON" - "$WORK" "$ROUNDS" "$BATCH" "$IMAGES" <<'EOF' | tee -a "$SUMMARY"
import json, statistics, sys
work, rounds, batch, images = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
med = statistics.median
engine, plain, rows_vs_workers = [], [], []
for r in range(1, rounds + 1):
    p = json.load(open(f"{work}/engine-{r}.json"))["points"][0]
    engine.append(p["samples_per_s"])
    rows = sum(s["cpu_ns"] for s in p["stages"] if not s.get("parent"))
    workers = sum(x["wall_s"] * 1e9 * x["worker_cpu_pct"] / 100 * 2 for x in p["repeats"])
    rows_vs_workers.append(100 * rows / workers)
    plain.append(json.load(open(f"{work}/plain-{r}.json"))["samples_per_s"])
o = json.load(open(f"{work}/engine-overhead.json"))["overhead"]
spread = lambda xs: ", ".join(f"{x:.0f}" for x in xs)
load = open("/proc/loadavg").read().split()[0]
print(f"6. configs/image.yaml on the torch engine, 2 workers, batch {batch}, {images}, {rounds} "
      f"rounds alternated: pbench's torch engine {med(engine):.1f} samples/s (rounds "
      f"{spread(engine)}), a plain DataLoader script {med(plain):.1f} (rounds {spread(plain)}) "
      f"-> {100 * (med(engine) / med(plain) - 1):+.1f} % (goal within 10 %); stage rows' CPU "
      f"{med(rows_vs_workers):.0f} % of the worker processes' (goal 90-110 %); --overhead "
      f"{o.get('pct', float('nan')):.2f} % +/- {o.get('noise_pct', float('nan')):.2f} % (goal <= 2 %) "
      f"[load {load}]")
EOF
}

# ---- 3. scaling 1 -> 2 workers ---------------------------------------------
bench_scaling() {
    ensure_images
    note "bench-image: 3. configs/image.yaml with 1 and 2 workers"
    w1=$(run_image "$WORK/image-w1.json" -s loader.workers=1)
    w2=$(run_image "$WORK/image-w2.json")
    record "$(awk -v a="$w1" -v b="$w2" -v ca="$(cpu_pct "$WORK/image-w1.json")" -v cb="$(cpu_pct "$WORK/image-w2.json")" 'BEGIN { printf "3. configs/image.yaml: 1 worker %.1f samples/s (CPU %.0f %%), 2 workers %.1f samples/s (CPU %.0f %%) -> %.2fx (goal >= 1.8x)", a, ca, b, cb, b / a }')"
}

# ---- 4. scale: auto vs scale: 1 on large images -----------------------------
bench_scale() {
    ensure_images
    large="$WORK/large-2000x1500"
    set -- -s "dataset.path=$large" -s dataset.generate.size=2000x1500 \
        -s dataset.generate.count=100 -s run.max_time_s=8
    note "bench-image: 4. configs/image.yaml on 2000x1500 images, scale 1 and auto"
    full=$(run_image "$WORK/scale-1.json" "$@" -s pipeline.decode.scale=1)
    auto=$(run_image "$WORK/scale-auto.json" "$@" -s pipeline.decode.scale=auto)
    full_ms=$(stage_mean_ns "$WORK/scale-1.json" decode)
    auto_ms=$(stage_mean_ns "$WORK/scale-auto.json" decode)
    scaled=$(json "$WORK/scale-auto.json" \
        "next(s['counters']['scaled'] for s in p['stages'] if s['name'] == 'decode')")
    full_cpu=$(json "$WORK/scale-1.json" "next(s['cpu_ns'] / s['count'] for s in p['stages'] if s['name'] == 'decode')")
    auto_cpu=$(json "$WORK/scale-auto.json" "next(s['cpu_ns'] / s['count'] for s in p['stages'] if s['name'] == 'decode')")
    record "$(awk -v a="$full" -v b="$auto" -v fa="$full_ms" -v fb="$auto_ms" -v ca="$full_cpu" -v cb="$auto_cpu" -v n="$scaled" 'BEGIN { printf "4. 2000x1500 JPEGs, 2 workers: scale 1 %.1f samples/s (decode %.2f ms, %.2f ms CPU), scale auto %.1f samples/s (decode %.2f ms, %.2f ms CPU; %d samples scaled) -> %.2fx samples/s, %.2fx less decode CPU", a, fa / 1e6, ca / 1e6, b, fb / 1e6, cb / 1e6, n, b / a, ca / cb }')"
    # scale: window keeps scale 1's windows and DCT-reduces the decoded
    # window (fused_crop) while it stays twice the 224x224 output.
    note "bench-image: 4. the same with scale window"
    window=$(run_image "$WORK/scale-window.json" "$@" -s pipeline.decode.scale=window)
    window_cpu=$(json "$WORK/scale-window.json" "next(s['cpu_ns'] / s['count'] for s in p['stages'] if s['name'] == 'decode')")
    window_scaled=$(json "$WORK/scale-window.json" \
        "next(s['counters']['scaled'] for s in p['stages'] if s['name'] == 'decode')")
    record "$(awk -v a="$full" -v b="$window" -v ca="$full_cpu" -v cb="$window_cpu" -v n="$window_scaled" 'BEGIN { printf "4b. 2000x1500 JPEGs, 2 workers: scale window %.1f samples/s (decode %.2f ms CPU; %d samples reduced) -> %.2fx samples/s and %.2fx less decode CPU than scale 1", b, cb / 1e6, n, b / a, ca / cb }')"
}

# ---- 5. instrumentation overhead ------------------------------------------
bench_overhead() {
    ensure_images
    note "bench-image: 5. configs/image.yaml --overhead (paired rounds, timing on and off)"
    "$PBENCH" run configs/image.yaml --overhead -s run.repeats=6 -o "$WORK/overhead.json" -q >&2
    pct=$("$PYTHON" -c "import json; o=json.load(open('$WORK/overhead.json'))['overhead']; print(o['pct'], o['noise_pct'])")
    # Throughput pairs move with whatever else runs on the machine; CPU time
    # per sample hardly does. Alternate runs with stage timing on and off
    # and compare the process's CPU per delivered sample.
    note "bench-image: 5. CPU per sample, stage timing on and off, 3 runs each"
    for i in 1 2 3; do
        for timing in true false; do
            "$PBENCH" run configs/image.yaml -s run.stage_timing=$timing -s run.repeats=2 \
                -o "$WORK/timing-$timing-$i.json" -q >&2
        done
    done
    cpu=$("$PYTHON" - "$WORK" <<'EOF'
import json, statistics, sys
def us(timing):
    runs = []
    for i in (1, 2, 3):
        p = json.load(open(f"{sys.argv[1]}/timing-{timing}-{i}.json"))["points"][0]
        runs.append(1e6 * p["cpu_util_pct"] / 100 / p["samples_per_s"])
    return statistics.median(runs)
on, off = us("true"), us("false")
print(on, off, 100 * (on - off) / off)
EOF
)
    # From first principles: the runner reads both clocks at every stage
    # boundary, worker stages + 1 per sample (read, decode, crop, flip,
    # normalize: 6 readings).
    cc -O2 -o "$WORK/clock_cost" bench/peers/clock_cost.c
    clocks=$("$WORK/clock_cost")
    record "$(echo "$pct $cpu $clocks" | awk '{ est = 6 * ($6 + $7) / 1000; printf "5. instrumentation overhead on configs/image.yaml: --overhead %.2f %% +/- %.2f %% of throughput; CPU per sample %.0f us timed, %.0f us untimed -> %.2f %%; clocks %.0f + %.0f ns a reading -> %.1f us a sample = %.2f %% of %.0f us (goal <= 1 %%)", $1, $2, $3, $4, $5, $6, $7, est, 100 * est / $4, $4 }')"
}

[ -x "$PBENCH" ] || { note "bench-image: $PBENCH not found; run scripts/setup.sh first"; exit 1; }
[ $# -eq 0 ] && set -- all
: >"$SUMMARY"
for what in "$@"; do
    case "$what" in
    all) bench_decode; bench_torch; bench_scaling; bench_scale; bench_overhead; bench_engine ;;
    engine) bench_engine ;;
    decode) bench_decode ;;
    torch) bench_torch ;;
    scaling) bench_scaling ;;
    scale) bench_scale ;;
    overhead) bench_overhead ;;
    *) note "usage: $0 [all|decode|torch|scaling|scale|overhead|engine]..."; exit 2 ;;
    esac
done
echo
echo "== image pipeline figures ($(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)) =="
cat "$SUMMARY"
