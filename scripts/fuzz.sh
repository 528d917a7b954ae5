#!/bin/sh
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan into build-fuzz/, makes seed corpora with pbench's own generators,
# runs every target for SECONDS and prints, per target, the executions,
# exec/s, coverage and whether it crashed. docs/fuzzing.md says more.
#   scripts/fuzz.sh 60                      every target for 60 s
#   FUZZ_TARGETS="config jpeg" scripts/fuzz.sh 30
# First each reproducer kept in tests/fuzz/crashes/NAME-* runs once.
# Exits 1 when one of them or a target crashed (a new reproducer's path is
# printed), 2 on a usage or build error. A target that crashes is started
# again for the rest of its time (at most FUZZ_RESTARTS times, default
# 1000), so one known crash does not end its search. Corpora are kept in
# build-fuzz/corpus/NAME between runs (remove the folder to start over).
set -eu
cd "$(dirname "$0")/.."
# Byte-wise text tools: libFuzzer's logs hold the inputs' raw bytes.
export LC_ALL=C

seconds="${1:-}"
case "$seconds" in
    '' | *[!0-9]*)
        echo "usage: scripts/fuzz.sh SECONDS   (each target runs for SECONDS)" >&2
        exit 2
        ;;
esac
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
targets="${FUZZ_TARGETS:-config result jpeg video}"
restarts_max="${FUZZ_RESTARTS:-1000}"
# The line that says why a target stopped.
reasons='check failed|SUMMARY: [A-Za-z]+Sanitizer|runtime error|ERROR: libFuzzer: (timeout|out-of-memory|fuzz target exited)|ERROR: LeakSanitizer'
CC_FUZZ="${CC_FUZZ:-clang}"

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "fuzz: $CC_FUZZ not found; libFuzzer needs clang (scripts/setup.sh installs it)" >&2
    exit 2
fi

# Build: clang with the fuzzer, ASan and UBSan; warnings are not errors
# here (clang warns where gcc, which CI's -Werror build uses, does not).
echo "fuzz: building $BUILD_DIR"
mkdir -p "$BUILD_DIR"
build_log="$BUILD_DIR/build.log"
cmake -S . -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPBENCH_FUZZ=ON -DPBENCH_CUDA=OFF -DPBENCH_MPI=OFF -DPBENCH_WERROR=OFF >"$build_log" 2>&1 ||
    { cat "$build_log" >&2; exit 2; }
cmake --build "$BUILD_DIR" -j "$(nproc)" --target fuzz >>"$build_log" 2>&1 ||
    { tail -n 40 "$build_log" >&2; exit 2; }

corpus="$BUILD_DIR/corpus"
seeds="$BUILD_DIR/seeds"
crashes="$BUILD_DIR/crashes"
pbench="$BUILD_DIR/pbench"
rm -rf "$seeds"
mkdir -p "$corpus" "$seeds" "$crashes"
# fuzz_video's private folders (left behind when it crashes), on tmpfs
# where there is one.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    PBENCH_FUZZ_TMPDIR="/dev/shm/pbench-fuzz-$$"
else
    PBENCH_FUZZ_TMPDIR="$PWD/$BUILD_DIR/tmp-$$"
fi
export PBENCH_FUZZ_TMPDIR
mkdir -p "$PBENCH_FUZZ_TMPDIR"
trap 'rm -rf "$PBENCH_FUZZ_TMPDIR"' EXIT
trap 'exit 130' INT TERM
# The generators run in the instrumented build: leaks there are the tests'
# business, not the seeds'.
gen_env="ASAN_OPTIONS=detect_leaks=0"

seed_config() {
    mkdir -p "$corpus/config"
    for f in configs/*.yaml; do
        cp "$f" "$corpus/config/"
    done
    # The same configs with "#s" and "#a" lines, the target's -s and -a.
    { cat configs/null.yaml; printf '#s loader.workers=1\n#a loader.batch_size=4,8\n'; } \
        >"$corpus/config/null-settings.yaml"
    { cat configs/sweep-image.yaml; printf '#s pipeline.decode.scale=auto\n#a run.step_ms=1,2\n'; } \
        >"$corpus/config/sweep-image-settings.yaml"
}

# Tiny runs of the null pipeline: one point and a two-point sweep.
seed_result() {
    mkdir -p "$corpus/result"
    tiny="-q -s dataset.path=$seeds/null-data -s dataset.generate.count=16 \
-s dataset.generate.size_bytes=256 -s loader.batch_size=4 -s loader.workers=1 \
-s pipeline.decode.width=8 -s pipeline.decode.height=8 -s pipeline.decode.cost_us=20 \
-s run.warmup_batches=1 -s run.min_time_s=0.02 -s run.max_time_s=0.05 -s run.repeats=2 \
-s run.step_ms=0"
    # shellcheck disable=SC2086
    env $gen_env "$pbench" run configs/null.yaml $tiny -o "$seeds/null.json" >/dev/null
    # shellcheck disable=SC2086
    env $gen_env "$pbench" run configs/sweep-null.yaml $tiny --no-calibrate \
        -a loader.workers=1,2 -a loader.batch_size=4 -a loader.prefetch_factor=1 \
        -a loader.pin_memory=false -o "$seeds/sweep-null.json" >/dev/null
    # Without the indentation (JSON strings hold no line breaks), a sixth
    # of the size: the fuzzer goes faster on smaller inputs.
    for f in null sweep-null; do
        sed 's/^ *//' "$seeds/$f.json" | tr -d '\n' >"$corpus/result/$f.json"
    done
}

seed_jpeg() {
    mkdir -p "$corpus/jpeg"
    env $gen_env "$pbench" gen --kind jpeg --out "$seeds/jpeg" --count 8 --size 8x8-48x40 \
        --quality 60 --progressive-fraction 0.3 --grayscale-fraction 0.3 >/dev/null
    cp "$seeds"/jpeg/* "$corpus/jpeg/"
}

seed_video() {
    mkdir -p "$corpus/video"
    for codec in h264 mpeg4 mjpeg; do
        env $gen_env "$pbench" gen --kind video --out "$seeds/video-$codec" --count 1 \
            --size 32x24 --frames 6 --gop 3 --codec "$codec" >/dev/null ||
            { echo "fuzz: no $codec video seed (codec missing?)"; continue; }
        for f in "$seeds/video-$codec"/*; do
            cp "$f" "$corpus/video/$codec-$(basename "$f")"
        done
    done
}

# One target for up to $seconds of wall time, started again after a crash.
# Prints its summary line and returns 1 if it crashed.
run_target() {
    name=$1
    exe="$BUILD_DIR/fuzz_$name"
    dict=""
    [ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
    log="$BUILD_DIR/fuzz_$name.log"
    : >"$log"
    start=$(date +%s)
    execs=0 cov=0 ft=0 crashed=0 runs=0
    kinds="$log.kinds"
    found="$log.found"
    rm -f "$kinds" "$found"
    while :; do
        now=$(date +%s)
        left=$((seconds - (now - start)))
        [ "$left" -ge 1 ] || break
        runs=$((runs + 1))
        part="$log.$runs"
        # shellcheck disable=SC2086
        if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            "$exe" -max_total_time="$left" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$crashes/$name-" $dict "$corpus/$name" >"$part" 2>&1; then
            rc=0
        else
            rc=$?
        fi
        cat "$part" >>"$log"
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$part" | tail -n 1)
        execs=$((execs + ${n:-0}))
        line=$(grep -E '^#[0-9]+.*cov: ' "$part" | tail -n 1 || true)
        c=$(echo "$line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
        f=$(echo "$line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
        [ "${c:-0}" -gt "$cov" ] && cov=$c
        [ "${f:-0}" -gt "$ft" ] && ft=$f
        if [ "$rc" -eq 0 ]; then
            rm -f "$part"
            break
        fi
        crashed=$((crashed + 1))
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$part" | tail -n 1)
        why=$(grep -m 1 -E "$reasons" "$part" | cut -c 1-160 || true)
        rm -f "$part"
        # One reproducer per kind of crash: its reason's first 80
        # characters, numbers left out.
        kind=$(echo "${why:-rc $rc}" | sed 's/[0-9][0-9]*/N/g' | cut -c 1-80)
        if ! grep -qxF "$kind" "$kinds" 2>/dev/null; then
            echo "$kind" >>"$kinds"
            printf '         %s\n         reproducer: %s\n' "${why:-exit code $rc, see $log}" \
                "${unit:-none written}" >>"$found"
        fi
        [ "$runs" -gt "$restarts_max" ] && break
    done
    elapsed=$(($(date +%s) - start))
    [ "$elapsed" -ge 1 ] || elapsed=1
    if [ "$crashed" -eq 0 ]; then
        status="no crash"
    else
        status="CRASHED $crashed time(s)"
    fi
    printf '%-8s executions %10d  exec/s %7d  cov %5d  ft %6d  %s\n' "$name" "$execs" \
        $((execs / elapsed)) "$cov" "$ft" "$status"
    [ -f "$found" ] && cat "$found"
    rm -f "$kinds" "$found"
    [ "$crashed" -eq 0 ]
}

echo "fuzz: making seed corpora in $corpus"
for t in $targets; do
    case "$t" in
        config) seed_config ;;
        result) seed_result ;;
        jpeg) seed_jpeg ;;
        video) seed_video ;;
        *) echo "fuzz: unknown target '$t'; targets: config result jpeg video" >&2; exit 2 ;;
    esac
done

# The reproducers of crashes found before (tests/fuzz/crashes/NAME-*),
# each run once: one that still crashes is a failure too.
known_failed=0
for t in $targets; do
    for f in tests/fuzz/crashes/"$t"-*; do
        [ -f "$f" ] || continue
        if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            "$BUILD_DIR/fuzz_$t" "$f" >"$BUILD_DIR/known.log" 2>&1; then
            echo "fuzz: $f: fixed (no crash)"
        else
            known_failed=1
            echo "fuzz: $f: still crashes: $(grep -m 1 -E "$reasons" "$BUILD_DIR/known.log" | cut -c 1-160)"
        fi
    done
done

echo "fuzz: running each target for $seconds s (ASan, UBSan, leak checks); logs in $BUILD_DIR/fuzz_NAME.log"
failed=$known_failed
for t in $targets; do
    run_target "$t" || failed=1
done
if [ "$failed" -ne 0 ]; then
    echo "fuzz: a target or a kept reproducer crashed; reproduce with $BUILD_DIR/fuzz_NAME REPRODUCER (docs/fuzzing.md)" >&2
    exit 1
fi
echo "fuzz: no crash"
