#!/bin/sh
# Installs what pbench needs from Debian's packages, then configures and
# builds it into build/. Safe to run again: installed packages are skipped.
# clang and libclang-rt-dev (libFuzzer) are for scripts/fuzz.sh; Debian's
# python3-torch, python3-torchvision and python3-av are the torch engine's
# (loader.engine: torch, docs/engines.md), python3-pyflakes checks its code.
# libmicrohttpd-dev serves the live page and the Prometheus endpoint
# (bench/sys/http.c; pbench builds without it); prometheus brings promtool,
# which tests/test_live.c checks the metrics text with; tests/live.sh pushes
# a result to prometheus-pushgateway as the nightly workflow does.
#   scripts/setup.sh            install + build (Release with debug info)
#   BUILD_DIR=build-asan CMAKE_ARGS=-DPBENCH_SANITIZE=address,undefined scripts/setup.sh
set -eu

cd "$(dirname "$0")/.."

PACKAGES="build-essential cmake pkg-config libyaml-dev libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs \
libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libhwloc-dev libcmocka-dev \
libjansson-dev libsqlite3-dev clang libclang-rt-dev libopenmpi-dev openmpi-bin \
libarchive-dev fio chromium python3-pil python3-torch python3-torchvision python3-av \
python3-pyflakes libmicrohttpd-dev prometheus prometheus-pushgateway libcurl4-openssl-dev"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo"
    fi
    echo "setup: installing:$missing"
    # Refresh the package lists when they are missing or older than a day.
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
        $SUDO apt-get update -qq
    fi
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
else
    echo "setup: all Debian packages present"
fi

BUILD_DIR="${BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/pbench"
