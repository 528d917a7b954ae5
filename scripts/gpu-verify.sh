#!/usr/bin/env bash
# Runs pbench's GPU verification on a machine with a CUDA device, from a
# build made elsewhere: the GPU tests, calibrate --gpu, and the
# pin_memory x device_prefetch x normalize-device sweep of
# configs/image-gpu.yaml. Results go to OUT (default ./gpu-verify).
#
#   scripts/gpu-verify.sh pack          # here: build/ + its libraries -> gpu-bundle.tar.xz
#   scripts/gpu-verify.sh run [OUT]     # there: unpack, test, calibrate, sweep
#
# docs/gpu.md explains the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests that touch the GPU side (each reports skipped without a device).
gpu_tests="${GPU_TESTS:-test_gpu_kernels test_gpu_rt test_gpu_acc test_gpuprof test_compare test_video test_e2e test_trace}"
case "${1:-}" in
pack)
    build=${BUILD_DIR:-build}
    BUILD_DIR=$build BUILD_TYPE=${BUILD_TYPE:-Release} CMAKE_ARGS="-DPBENCH_CUDA=ON" scripts/setup.sh
    rm -rf gpu-bundle && mkdir -p gpu-bundle/lib
    bins="$build/pbench"
    for t in $gpu_tests; do bins="$bins $build/$t"; done
    ../shared/tools/device-bundle.sh $bins gpu-bundle/lib
    cp -L /usr/local/cuda/lib64/libcupti.so.13 gpu-bundle/lib/ 2>/dev/null || true
    cp $bins gpu-bundle/
    strip --strip-debug gpu-bundle/pbench gpu-bundle/test_* gpu-bundle/lib/* 2>/dev/null || true
    tar -cJf gpu-bundle.tar.xz gpu-bundle && rm -rf gpu-bundle
    du -h gpu-bundle.tar.xz
    ;;
run)
    out=${2:-gpu-verify}
    mkdir -p "$out"
    [ -d gpu-bundle ] || tar -xJf gpu-bundle.tar.xz
    export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PBENCH_CUPTI_LIB=$PWD/gpu-bundle/lib/libcupti.so.13
    export PBENCH_SOURCE_DIR=$PWD PBENCH_BINARY=$PWD/gpu-bundle/pbench
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
    for t in $gpu_tests; do
        echo "== $t"
        "gpu-bundle/$t" > "$out/$t.log" 2>&1 && echo "rc 0" || echo "rc $?"
        grep -E "^\[  (FAILED|SKIPPED|PASSED) |^\[  FAILED|ERROR|error" "$out/$t.log" | tail -12
    done | tee "$out/tests.txt"
    # Each step goes on after a failure: the point is to see every one.
    step() { local name=$1; shift; echo "== $name: $*"; "$@" > "$out/$name.txt" 2>&1; echo "rc $?" | tee -a "$out/$name.txt"; tail -40 "$out/$name.txt"; }
    # Enough workers that the loader feeds the GPU (2 leave the config
    # input-bound on any machine, and the sweep then measures the CPU).
    workers=$(( $(nproc) > 14 ? 12 : $(nproc) - 2 ))
    [ "$workers" -ge 1 ] || workers=1
    step calibrate gpu-bundle/pbench calibrate configs/image-gpu.yaml --gpu
    step sweep gpu-bundle/pbench run configs/image-gpu.yaml -s loader.workers=$workers \
        -s run.repeats=2 -o "$out/sweep.json"
    step cupti gpu-bundle/pbench run configs/image-gpu.yaml -a loader.pin_memory=true \
        -a loader.device_prefetch=2 -a pipeline.normalize.device=gpu -s profile.gpu=cupti \
        -s loader.workers=$workers -s run.repeats=1 -o "$out/cupti.json" --trace "$out/cupti.trace.json"
    # NVDEC against the CPU on the same 1080p H.264 files, one worker and
    # several, the loader alone (no step).
    step nvdec gpu-bundle/pbench run configs/video.yaml -s dataset.path=data/video-1080p \
        -s dataset.generate.size=1920x1080 -s dataset.generate.count=8 -s dataset.generate.frames=100 \
        -s run.step_ms=0 -s run.repeats=2 -a pipeline.decode.hwaccel=none,cuda -a loader.workers=1,4 \
        -o "$out/nvdec.json"
    # A/A: the recommended point (pinned, 2 device buffers, normalize on
    # the GPU) against itself, interleaved: it must read as the same.
    sed '/^sweep:/,$d' configs/image-gpu.yaml > configs/.image-gpu-aa.yaml
    step aa gpu-bundle/pbench compare configs/.image-gpu-aa.yaml configs/.image-gpu-aa.yaml \
        -s loader.workers=$workers -s run.repeats=5 -o "$out/aa.json"
    rm -f configs/.image-gpu-aa.yaml
    ;;
*)
    echo "usage: $0 pack | run [OUT]" >&2
    exit 2
    ;;
esac
