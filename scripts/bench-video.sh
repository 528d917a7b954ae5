#!/bin/sh
# The video pipeline's benchmarks (issue 4). Prints every figure with the
# command behind it. Data goes to $BENCH_DIR (default /tmp/pbench-video-bench),
# generated once. Needs the ffmpeg CLI and python3-av/python3-numpy (Debian),
# installed here with apt-get when missing.
#   scripts/bench-video.sh            all five benchmarks
#   scripts/bench-video.sh 1 3        only benchmarks 1 and 3
#   ROUNDS=5 scripts/bench-video.sh   more interleaved rounds (default 3)
#
# 1. Sequential decode frames/s, pbench (1 worker, sequential clips that
#    cover the file, no seeks, threads N) against
#    `ffmpeg -threads N -benchmark -i FILE -f null -` on the same file, N = 1, 2.
#    Goal: >= 90%.
# 2. configs/video.yaml (as shipped) against bench/peers/pyav_clip_loader.py
#    (same sampling, seek, resize, crop, flip, normalize, workers).
#    Goal: >= 1.3x clip frames/s.
# 3. The ceiling: sequential decode fps x workers / decode amplification,
#    and the fraction of it each run reaches; then discard: nonref.
# 4. Decode amplification and clips/s for GOP 12, 48 and 250, random clips.
# 5. One decode for many clips (issue 17): configs/video.yaml with
#    clips_per_visit 4 (4 random clips per video visit, overlapping ones
#    decoded once) against the same with 1 clip per visit, and against
#    bench/peers/pyav_clip_loader.py --clips-per-visit 4 (a seek and a
#    decode per clip, as PyAV users do). Goals: amplification <= 2.0 at
#    GOP 48, stride 2; >= 2x the peer's clip frames/s.
#
# Runs of pbench and its peer alternate, ROUNDS times, and the median is
# printed, because the figures are ratios and a shared machine drifts.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PBENCH="$ROOT/build/pbench"
DIR="${BENCH_DIR:-/tmp/pbench-video-bench}"
ROUNDS="${ROUNDS:-3}"
PY=/usr/bin/python3
WANT="${*:-1 2 3 4 5}"
mkdir -p "$DIR"

need_pkg() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    echo "bench-video: installing$missing"
    $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq || true
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends $missing
}
need_pkg ffmpeg python3-av python3-numpy jq
[ -x "$PBENCH" ] || { cmake -S . -B build >/dev/null && cmake --build build -j "$(nproc)"; }

gen() { # gen NAME COUNT FRAMES GOP
    [ -d "$DIR/$1" ] || "$PBENCH" gen --kind video --out "$DIR/$1" --count "$2" --size 1280x720 \
        --frames "$3" --fps 30 --gop "$4" --seed 7 >/dev/null
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# pbench_json RESULT EXPR: a jq expression over the single point.
pj() { jq -r ".points[0] | $2" "$1"; }
decode_counter() { pj "$1" ".stages[] | select(.name==\"decode\") | .counters.$2"; }
wants() { case " $WANT " in *" $1 "*) return 0 ;; esac; return 1; }

SEQ_FRAMES=240
gen seq 1 $SEQ_FRAMES 48
SEQ="$DIR/seq/video_0000000.mp4"
cat >"$DIR/seq.yaml" <<EOF
name: video-sequential
dataset: {path: $DIR/seq, shuffle: false}
pipeline:
  - decode: {decoder: video, clip_frames: 16, sampling: sequential, clips_per_video: 15,
             seek: none, threads: 1, shorter_side: 128}
loader: {workers: 1, batch_size: 1, prefetch_factor: 2}
run: {warmup_batches: 15, min_time_s: 3, max_time_s: 4, repeats: 1, step_ms: 0}
EOF

# Sequential decode fps of pbench: clip frames per second, and decode-only
# frames per second (frames decoded / time in demux + decode).
seq_pbench() { # THREADS -> "fps decode_only_fps"
    "$PBENCH" run "$DIR/seq.yaml" -q -s pipeline.decode.threads="$1" -o "$DIR/seq-$1.json" >/dev/null 2>&1
    fps=$(pj "$DIR/seq-$1.json" '.samples_per_s * 16 | . * 10 | round / 10')
    dec=$(jq -r '[.points[0].stages[] | select(.name=="decode.demux" or .name=="decode.decode") | .mean_ns * .count] | add' "$DIR/seq-$1.json")
    n=$(decode_counter "$DIR/seq-$1.json" frames_decoded)
    echo "$fps $(echo "$n $dec" | awk '{printf "%.1f", $1 / ($2 / 1e9)}')"
}
seq_ffmpeg() { # THREADS [filters...] -> fps
    t=$1; shift
    ffmpeg -hide_banner -nostdin -threads "$t" -benchmark -i "$SEQ" "$@" -f null - 2>&1 |
        awk -v n=$SEQ_FRAMES '/bench: utime/ {split($4, r, "="); sub("s", "", r[2]); printf "%.1f", n / r[2]}'
}

if wants 1; then
    echo "== 1. sequential decode, 1280x720 H.264 GOP 48, $SEQ_FRAMES frames, $ROUNDS rounds (median)"
    for n in 1 2; do
        : >"$DIR/r1"
        for r in $(seq "$ROUNDS"); do
            set -- $(seq_pbench $n)
            echo "$1 $2 $(seq_ffmpeg $n) $(seq_ffmpeg $n -vf scale=228:128:flags=bilinear -pix_fmt rgb24)" >>"$DIR/r1"
        done
        pb=$(cut -d' ' -f1 "$DIR/r1" | median); pbdec=$(cut -d' ' -f2 "$DIR/r1" | median)
        ff=$(cut -d' ' -f3 "$DIR/r1" | median); ffrgb=$(cut -d' ' -f4 "$DIR/r1" | median)
        echo "threads $n: ffmpeg -threads $n -benchmark -i FILE -f null -                       $ff frames/s"
        echo "threads $n: ffmpeg ... -vf scale=228:128:flags=bilinear -pix_fmt rgb24 -f null -  $ffrgb frames/s"
        echo "threads $n: pbench decode+demux only (frames_decoded / their time)              $pbdec frames/s = $(echo "$pbdec $ff" | awk '{printf "%.0f", 100*$1/$2}')% of ffmpeg -f null"
        echo "threads $n: pbench clips delivered (RGB, shorter side 128 fused)                 $pb frames/s = $(echo "$pb $ffrgb" | awk '{printf "%.0f", 100*$1/$2}')% of ffmpeg with the same scale+rgb24, $(echo "$pb $ff" | awk '{printf "%.0f", 100*$1/$2}')% of ffmpeg -f null"
    done
    echo "   pbench: $PBENCH run $DIR/seq.yaml -s pipeline.decode.threads=N"
fi

VIDEO_DATA="$ROOT/data/video-720p-gop48"
run_video() { # OUT [overrides...]
    out=$1; shift
    "$PBENCH" run configs/video.yaml -q -o "$out" "$@" >/dev/null 2>&1
}
report_run() { # LABEL RESULT SEQ_FPS
    clips=$(pj "$2" .samples_per_s)
    dec=$(decode_counter "$2" frames_decoded); del=$(decode_counter "$2" frames_delivered)
    workers=$(jq -r .config.loader.workers "$2" 2>/dev/null || echo 2)
    [ "$workers" = "null" ] && workers=2
    printf "%-30s" "$1"
    echo "$clips $dec $del $3 $workers" | awk '{amp = $2 / $3; ceil = $4 * $5 / amp / 16;
        printf "%6.2f clips/s (%6.1f clip frames/s), amplification %.2f, ceiling %.2f clips/s, %.0f%% of it\n",
        $1, $1 * 16, amp, ceil, 100 * $1 / ceil}'
}

if wants 2 || wants 3; then
    [ -d "$VIDEO_DATA" ] || "$PBENCH" run configs/video.yaml -q -s run.repeats=1 -s run.min_time_s=0.5 -s run.max_time_s=1 -o "$DIR/gen.json" >/dev/null
fi
if wants 2; then
    echo "== 2. configs/video.yaml against the PyAV peer (2 workers), $ROUNDS rounds (median)"
    : >"$DIR/r2"
    for r in $(seq "$ROUNDS"); do
        run_video "$DIR/video-$r.json"
        pb=$(pj "$DIR/video-$r.json" '.samples_per_s * 16')
        py=$($PY bench/peers/pyav_clip_loader.py "$VIDEO_DATA" --workers 2 --seconds 8 --seed "$r" |
             sed 's/.* \([0-9.]*\) clip frames\/s/\1/')
        echo "$pb $py" >>"$DIR/r2"
    done
    pb=$(cut -d' ' -f1 "$DIR/r2" | median); py=$(cut -d' ' -f2 "$DIR/r2" | median)
    echo "pbench run configs/video.yaml                            $pb clip frames/s"
    echo "bench/peers/pyav_clip_loader.py $VIDEO_DATA --workers 2  $py clip frames/s"
    echo "ratio: $(echo "$pb $py" | awk '{printf "%.2f", $1/$2}')x (goal >= 1.3x)"
fi

if wants 3; then
    echo "== 3. the ceiling: sequential decode fps (1 thread, RGB shorter side 128) x workers / amplification"
    set -- $(seq_pbench 1)
    SEQ_FPS=$1
    echo "sequential decode, 1 worker, 1 thread: $SEQ_FPS frames/s"
    run_video "$DIR/c-none.json"
    report_run "video.yaml (discard none)" "$DIR/c-none.json" "$SEQ_FPS"
    run_video "$DIR/c-nonref.json" -s pipeline.decode.discard=nonref
    report_run "video.yaml, discard: nonref" "$DIR/c-nonref.json" "$SEQ_FPS"
    run_video "$DIR/c-w1.json" -s loader.workers=1
    report_run "video.yaml, 1 worker" "$DIR/c-w1.json" "$SEQ_FPS"
    echo "   (ceiling = sequential fps x workers / (frames_decoded / frames_delivered) / 16 frames a clip;"
    echo "    discard: nonref beats it because skipped B-frames are not decoded at all)"
fi

if wants 4; then
    echo "== 4. GOP 12 vs 48 vs 250: random clips of 16 frames at stride 2 (video.yaml settings)"
    for g in 12 48 250; do
        gen "gop$g" 2 300 $g
        run_video "$DIR/gop$g.json" -s dataset.path="$DIR/gop$g"
        run_video "$DIR/gop$g-nonref.json" -s dataset.path="$DIR/gop$g" -s pipeline.decode.discard=nonref
        for v in "" -nonref; do
            f="$DIR/gop$g$v.json"
            label="GOP $g"; [ -n "$v" ] && label="GOP $g, discard nonref"
            printf "%-24s" "$label"
            echo "$(pj "$f" .samples_per_s) $(decode_counter "$f" frames_decoded) $(decode_counter "$f" frames_delivered) $(decode_counter "$f" seeks)" |
                awk '{printf "%6.2f clips/s, decode amplification %.2f (%d decoded / %d delivered), %d seeks\n", $1, $2 / $3, $2, $3, $4}'
        done
    done
    echo "   pbench run configs/video.yaml -s dataset.path=$DIR/gopG [-s pipeline.decode.discard=nonref]"
fi

# Clip frames per worker CPU second (robust to a shared machine, where the
# workers get what CPU others leave): clips the stages made x 16 / the
# stages' CPU time.
cpu_fps() {
    jq -r '.points[0].stages as $s | ([$s[] | select(.name | contains(".") | not) | (.cpu_ns // 0)] | add) as $cpu
           | [$s[] | select(.name == "decode") | .count][0] * 16 / ($cpu / 1e9)' "$1"
}
if wants 5; then
    [ -d "$VIDEO_DATA" ] || "$PBENCH" run configs/video.yaml -q -s run.repeats=1 -s run.min_time_s=0.5 -s run.max_time_s=1 -o "$DIR/gen.json" >/dev/null
    echo "== 5. 4 clips per video visit: configs/video.yaml -s pipeline.decode.clips_per_visit=4 against 1 clip per visit and the PyAV peer drawing 4 per visit (2 workers), $ROUNDS rounds (median)"
    : >"$DIR/r5"
    for r in $(seq "$ROUNDS"); do
        run_video "$DIR/v4-$r.json" -s pipeline.decode.clips_per_visit=4
        run_video "$DIR/v1-$r.json"
        out=$($PY bench/peers/pyav_clip_loader.py "$VIDEO_DATA" --workers 2 --seconds 8 --seed "$r" --clips-per-visit 4)
        py=$(echo "$out" | sed 's/.* \([0-9.]*\) clip frames\/s/\1/')
        pycpu=$(echo "$out" | sed 's/.*about \([0-9.]*\) clip frames per worker CPU second.*/\1/')
        a4=$(echo "$(decode_counter "$DIR/v4-$r.json" frames_decoded) $(decode_counter "$DIR/v4-$r.json" frames_delivered)" | awk '{printf "%.3f", $1 / $2}')
        a1=$(echo "$(decode_counter "$DIR/v1-$r.json" frames_decoded) $(decode_counter "$DIR/v1-$r.json" frames_delivered)" | awk '{printf "%.3f", $1 / $2}')
        echo "$(pj "$DIR/v4-$r.json" '.samples_per_s * 16') $a4 $(pj "$DIR/v1-$r.json" '.samples_per_s * 16') $a1 $py $(cpu_fps "$DIR/v4-$r.json") $(cpu_fps "$DIR/v1-$r.json") $pycpu" >>"$DIR/r5"
    done
    pb4=$(cut -d' ' -f1 "$DIR/r5" | median); a4=$(cut -d' ' -f2 "$DIR/r5" | median)
    pb1=$(cut -d' ' -f3 "$DIR/r5" | median); a1=$(cut -d' ' -f4 "$DIR/r5" | median)
    py=$(cut -d' ' -f5 "$DIR/r5" | median)
    printf "pbench, clips_per_visit 4                                 %8.1f clip frames/s, decode amplification %.2f\n" "$pb4" "$a4"
    printf "pbench, 1 clip per visit (configs/video.yaml as shipped)  %8.1f clip frames/s, decode amplification %.2f\n" "$pb1" "$a1"
    printf "pyav_clip_loader.py --clips-per-visit 4 (seek + decode per clip) %.1f clip frames/s\n" "$py"
    ratio=$(awk '{print $1 / $5}' "$DIR/r5" | median)
    echo "ratio pbench 4/visit : PyAV 4/visit, median of the rounds' ratios: $(echo "$ratio" | awk '{printf "%.2f", $1}')x (goal >= 2x; rounds: $(awk '{printf "%.2f ", $1 / $5}' "$DIR/r5"))"
    echo "decode amplification $a4 (goal <= 2.0; $a1 with 1 clip per visit)"
    c4=$(cut -d' ' -f6 "$DIR/r5" | median); c1=$(cut -d' ' -f7 "$DIR/r5" | median); cpy=$(cut -d' ' -f8 "$DIR/r5" | median)
    printf "clip frames per worker CPU second: pbench 4/visit %.1f, pbench 1/visit %.1f, PyAV 4/visit %.1f (about: its partly made batches count as made, in its favour): %.2fx PyAV\n" \
        "$c4" "$c1" "$cpy" "$(echo "$c4 $cpy" | awk '{print $1/$2}')"
    echo "   pbench run configs/video.yaml -s pipeline.decode.clips_per_visit=4"
    echo "   $PY bench/peers/pyav_clip_loader.py $VIDEO_DATA --workers 2 --clips-per-visit 4"
fi
