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
# Datasets in object storage (s3://, https://): libcurl
# reads them; tests/objstore.sh and scripts/bench-s3.sh test and measure them
# against real servers on loopback: s3rver (npm, installed into
# tests/objstore/node_modules, so it needs nodejs and npm: taken from Debian
# only when no node is on PATH already), nginx-light and openssl for https,
# awscli as the yardstick, python3-boto3 for the torch engine's S3 reads.
# Without the npm registry, setup still succeeds and says that those tests
# will be skipped.
#   scripts/setup.sh            install + build (Release with debug info)
#   BUILD_DIR=build-asan CMAKE_ARGS=-DPBENCH_SANITIZE=address,undefined scripts/setup.sh
set -eu

cd "$(dirname "$0")/.."

PACKAGES="build-essential cmake pkg-config libyaml-dev libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs \
libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libhwloc-dev libcmocka-dev \
libjansson-dev libsqlite3-dev clang libclang-rt-dev libopenmpi-dev openmpi-bin \
libarchive-dev fio chromium python3-pil python3-torch python3-torchvision python3-av \
python3-pyflakes libmicrohttpd-dev prometheus prometheus-pushgateway libcurl4-openssl-dev \
python3-boto3 awscli nginx-light openssl"
# A node from elsewhere (nodesource's nodejs, nvm) conflicts with Debian's
# nodejs and npm packages: those are only asked for where node or npm is
# missing.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    PACKAGES="$PACKAGES nodejs npm"
fi

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

# s3rver, the S3-compatible server of the object-storage tests, pinned by
# tests/objstore/package-lock.json. Offline, setup goes on without it.
if [ ! -x tests/objstore/node_modules/.bin/s3rver ]; then
    if [ -f tests/objstore/package-lock.json ]; then
        npm_install="ci"
    else
        npm_install="install"
    fi
    if command -v npm >/dev/null 2>&1 &&
        npm "$npm_install" --prefix tests/objstore --no-audit --no-fund; then
        echo "setup: installed s3rver into tests/objstore/node_modules"
    else
        echo "setup: could not install s3rver with npm (offline?): the object-storage" \
            "tests (test_objstore) will be skipped; run scripts/setup.sh again online"
    fi
fi

BUILD_DIR="${BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/pbench"
