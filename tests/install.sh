#!/bin/sh
# The installed pbench, as a new user meets it (docs/install.md): installs
# the build folder into a temporary prefix, then from an empty folder
#   - runs a shipped config by name (pbench run null), whose generated data
#     must go to the cache folder ($PBENCH_DATA), leaving only results/;
#   - lists the shipped configs by name with their descriptions;
#   - checks that the man page has every command `pbench help` lists;
#   - builds examples/plugin out of tree with pkg-config against the
#     installed header and runs it with the installed pbench.
# Usage: tests/install.sh BUILD_DIR   (ctest's test_install; exit 77: skipped)
set -eu
build=$(cd "$1" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pbench-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "test_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "cmake --install failed"; }
pbench=$prefix/bin/pbench
for f in bin/pbench share/pbench/configs/null.yaml share/pbench/examples/plugin/example_plugin.c \
         include/pbench/pipelines/plugin.h lib/pkgconfig/pbench.pc share/man/man1/pbench.1 \
         share/doc/pbench/README.md lib/pbench/plugins/libpbench_example_plugin.so; do
    [ -e "$prefix/$f" ] || fail "$f was not installed"
done

# A shipped config by name, from an empty folder, outside any source tree.
mkdir "$work/empty" "$work/cache"
cd "$work/empty"
export PBENCH_DATA="$work/cache"
unset PBENCH_SHARE PBENCH_SOURCE_DIR
"$pbench" run null -q -s run.repeats=1 -s run.warmup_batches=1 -s run.min_time_s=0.2 \
    -s run.max_time_s=0.4 -s dataset.generate.count=64 -s dataset.generate.size_bytes=4096 \
    >"$work/run.out" 2>"$work/run.err" || { cat "$work/run.err" >&2; fail "pbench run null failed"; }
left=$(ls -A)
[ "$left" = "results" ] || fail "the folder holds '$left' after the run, not only results/"
ls results/null-smoke-*.json >/dev/null || fail "no result in results/"
[ -d "$work/cache/data/null-smoke" ] || fail "the data did not go to \$PBENCH_DATA/data/null-smoke"
# -s values stay relative to the current folder (none given here), and the
# run says where the data is.
"$pbench" run null -s run.repeats=1 -s run.warmup_batches=1 -s run.min_time_s=0.2 \
    -s run.max_time_s=0.4 -s dataset.generate.count=64 -s dataset.generate.size_bytes=4096 \
    -o "$work/second.json" >/dev/null 2>"$work/run2.err" || fail "second run failed"
grep -q "data: $work/cache/data/null-smoke (cached" "$work/run2.err" ||
    { cat "$work/run2.err" >&2; fail "the run does not say where its data is"; }

# An unknown name lists the known ones.
if "$pbench" run nosuchconfig 2>"$work/unknown.err"; then fail "run nosuchconfig succeeded"; fi
grep -q "no config called 'nosuchconfig'.*null" "$work/unknown.err" ||
    { cat "$work/unknown.err" >&2; fail "unknown config: no list of names"; }
"$pbench" list configs >"$work/list.out"
grep -q "^  null " "$work/list.out" || fail "list configs does not list null"
grep -q "$prefix/share/pbench/configs/video.yaml" "$work/list.out" ||
    fail "list configs does not show where video.yaml is"

# The man page: every command of the help's usage has its section.
"$pbench" help | sed -n 's/^  pbench \([a-z]*\).*/\1/p' | sort -u >"$work/commands"
[ -s "$work/commands" ] || fail "no commands in pbench help"
while read -r cmd; do
    grep -q "^\.SS $cmd\$" "$prefix/share/man/man1/pbench.1" || fail "pbench.1 lacks '$cmd'"
done <"$work/commands"
if command -v groff >/dev/null 2>&1; then
    warnings=$(groff -man -Tutf8 -ww -z "$prefix/share/man/man1/pbench.1" 2>&1)
    [ -z "$warnings" ] || fail "groff warns on pbench.1: $warnings"
fi

# The plugin SDK: examples/plugin built out of tree against the installed
# header, then run by the installed pbench from a config beside it.
if ! command -v pkg-config >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1; then
    echo "test_install: no pkg-config or cc: the plugin SDK is not checked" >&2
    exit 0
fi
mkdir "$work/myplugin"
cd "$work/myplugin"
cp "$prefix/share/pbench/examples/plugin/example_plugin.c" .
cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs pbench) ||
    fail "pkg-config --cflags pbench failed"
cc -std=c11 -Wall -Wextra -Werror -shared -fPIC $cflags example_plugin.c -o libgain.so ||
    fail "the example plugin does not build against the installed header"
cat >gain.yaml <<'EOF'
name: gain-sdk
dataset:
  path: data
  generate: {kind: files, count: 64, size_bytes: 4096, seed: 1}
pipeline:
  - read:
  - decode: {decoder: null, width: 64, height: 48, channels: 3, cost_us: 10}
  - plugin: {path: ./libgain.so, gain: 2}
loader: {workers: 1, batch_size: 8}
run: {warmup_batches: 1, min_time_s: 0.2, max_time_s: 0.4, repeats: 1, step_ms: 0}
EOF
"$pbench" run gain.yaml -q -o "$work/gain.json" >"$work/gain.out" 2>"$work/gain.err" ||
    { cat "$work/gain.err" >&2; fail "the installed pbench does not run the plugin"; }
grep -q example_gain "$work/gain.out" || fail "no example_gain row in the run's table"
[ -d data ] || fail "a user's config's data is not beside the config"
echo "test_install: ok ($prefix)"
