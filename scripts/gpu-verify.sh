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
case "${1:-}" in
pack)
    BUILD_TYPE=Release CMAKE_ARGS="-DPBENCH_CUDA=ON" scripts/setup.sh
    rm -rf gpu-bundle && mkdir -p gpu-bundle/lib
    ../shared/tools/device-bundle.sh build/pbench build/test_* gpu-bundle/lib
    cp -L /usr/local/cuda/lib/libcupti.so.13 gpu-bundle/lib/ 2>/dev/null || true
    cp build/pbench build/test_* gpu-bundle/
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
    for t in gpu-bundle/test_gpu_kernels gpu-bundle/test_gpuprof gpu-bundle/test_e2e; do
        echo "== $t" && "$t" 2>&1 | tail -25
    done | tee "$out/tests.txt"
    gpu-bundle/pbench calibrate configs/image-gpu.yaml --gpu | tee "$out/calibrate.txt"
    gpu-bundle/pbench run configs/image-gpu.yaml -o "$out/sweep.json" | tee "$out/sweep.txt"
    gpu-bundle/pbench run configs/image-gpu.yaml -a loader.pin_memory=true \
        -a loader.device_prefetch=2 -a pipeline.normalize.device=gpu -s profile.gpu=cupti \
        -s run.repeats=1 -o "$out/cupti.json" | tee "$out/cupti.txt"
    ;;
*)
    echo "usage: $0 pack | run [OUT]" >&2
    exit 2
    ;;
esac
