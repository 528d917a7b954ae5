#!/usr/bin/env bash
# Fault injection for stuck stages and dying engines (issue 38), on both
# engines: a plugin stage that never returns after 50 samples
# (tests/plugins/hang.c) on pbench's engine, and a Dataset that sleeps for
# good after 60 items on the torch engine. Prints, per case, PASS or FAIL
# with the exit code and how long it took:
#
#   scripts/fault-stuck.sh [PBENCH]        (default build/pbench)
#
# Cases, for each engine: `timeout -k 5 10 pbench run ...` (exit 124, the
# measured part written, the stuck stage named); one SIGTERM (ends within
# 3 s, exit 143); left alone with run.max_time_s=2 (ends within 20 s, the
# stage named); and after each, no engine process left. For the torch
# engine also: pbench SIGKILLed (its engine and workers die with it), and
# `timeout -k 5 10` on a Dataset whose constructor hangs (ends before the
# SIGKILL, exit 124). Data and results go to a temporary folder, removed
# at the end.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
pbench=$(realpath "${1:-$here/build/pbench}")
plugin=$(dirname "$pbench")/plugins/libpbench_test_hang.so
python=${PBENCH_PYTHON:-/usr/bin/python3}
work=$(mktemp -d /tmp/pbench-stuck-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failed=0

[ -f "$plugin" ] || { echo "no $plugin: build the tests (cmake --build build)"; exit 2; }
cat >pbench.yaml <<EOF
name: stuck-pbench
dataset: {path: data, generate: {kind: files, count: 64, size_bytes: 4096, seed: 1}}
pipeline:
  - read:
  - decode: {decoder: null, width: 32, height: 32, channels: 3, cost_us: 1000}
  - plugin: {path: $plugin, after: 50}
loader: {workers: 2, batch_size: 8, prefetch_factor: 2}
run: {warmup_batches: 2, min_time_s: 30, max_time_s: 30, window_s: 0.05, repeats: 3}
EOF
cat >sleepy.py <<'EOF'
import os, time
import torch
from torch.utils.data import Dataset

def note(name, text):
    with open(name, "a") as f:
        f.write(text)

class Sleepy(Dataset):
    """Sleeps for good from its `after`th item on (all processes together),
    or in its constructor; notes each process's pid in pids.txt."""
    def __init__(self, after=60, hang_init=False):
        self.after, self.pid = after, None
        self.mine()
        while hang_init:
            time.sleep(3600)
    def mine(self):
        if self.pid != os.getpid():
            self.pid = os.getpid()
            note("pids.txt", "%d\n" % self.pid)
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        self.mine()
        fd = os.open("count.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.write(fd, b"x")
        n = os.fstat(fd).st_size
        os.close(fd)
        while n >= self.after:
            time.sleep(3600)
        time.sleep(0.002)
        return torch.zeros(3, 8, 8)
EOF
mkdir -p sleepy-data && echo x >sleepy-data/x
cat >torch.yaml <<'EOF'
name: stuck-torch
dataset: {path: sleepy-data, shuffle: false, python: "sleepy:Sleepy", args: {after: 60}}
pipeline: []
loader: {engine: torch, python_path: ".", workers: 2, batch_size: 8, prefetch_factor: 2}
run: {warmup_batches: 2, min_time_s: 30, max_time_s: 30, window_s: 0.1, repeats: 3}
EOF
"$pbench" run pbench.yaml -s run.repeats=1 -s run.min_time_s=0.1 -s run.max_time_s=0.1 \
    -s pipeline.plugin.after=1000000 -o warm.json >/dev/null 2>&1 # generates the data once

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

# written FILE: the result parses and holds a measured repeat.
written() {
    python3 - "$1" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    sys.exit(0 if r["points"][0]["repeats"] else 1)
except Exception:
    sys.exit(1)
EOF
}

# left: the pids in pids.txt still alive (not gone, not a zombie).
left() {
    local out=""
    for p in $(sort -u pids.txt 2>/dev/null); do
        state=$(awk '{print $3}' /proc/$p/stat 2>/dev/null)
        [ -n "$state" ] && [ "$state" != Z ] && out="$out $p"
    done
    echo "${out# }"
}

# report NAME OK DETAIL: one line per case.
report() {
    if [ "$2" = 1 ]; then echo "PASS  $1: $3"; else echo "FAIL  $1: $3"; failed=1; fi
}

# fresh: a new item count and pid list for the torch Dataset.
fresh() { rm -f pids.txt count.bin ./*.json; }

# stuck_started ENGINE: waits until the stage or Dataset hangs.
stuck_started() {
    local pid=$2 i=0
    if [ "$1" = torch ]; then
        until [ "$(stat -c %s count.bin 2>/dev/null || echo 0)" -ge 60 ]; do
            sleep 0.1
            i=$((i + 1))
            if [ $i -gt 1200 ] || ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        done
    else
        sleep 2
    fi
    sleep 1 # inside the measured part, waiting
}

for engine in pbench torch; do
    config=$engine.yaml
    if [ $engine = torch ] && ! "$python" -c 'import torch' 2>/dev/null; then
        echo "SKIP  torch engine: $python cannot import torch"
        continue
    fi
    named="stopped while stage 'hang' had not returned"
    [ $engine = torch ] && named="the torch engine's loop was stuck"

    # timeout -k 5 10: GNU timeout's SIGTERM at 10 s, its SIGKILL 5 s later.
    fresh
    start=$(now)
    timeout -k 5 10 "$pbench" run $config -o t.json >t.out 2>t.err
    code=$?
    took=$(secs "$start" "$(now)")
    sleep 1
    w=no; written t.json && w=yes
    n=no; grep -q "$named" t.out && n=yes
    l=$(left)
    ok=0; [ $code = 124 ] && [ $w = yes ] && [ $n = yes ] && [ -z "$l" ] && ok=1
    report "$engine: timeout -k 5 10" $ok "exit $code (want 124) after $took s, result written: $w, stage named: $n, engine processes left: ${l:-none}"

    # One SIGTERM while the stage is stuck.
    fresh
    "$pbench" run $config -o s.json >s.out 2>s.err &
    pid=$!
    stuck_started $engine $pid
    start=$(now)
    kill -TERM $pid
    ( sleep 30; kill -KILL $pid 2>/dev/null ) &
    guard=$!
    wait $pid
    code=$?
    took=$(secs "$start" "$(now)")
    kill $guard 2>/dev/null
    sleep 1
    w=no; written s.json && w=yes
    n=no; grep -q "$named" s.out && n=yes
    l=$(left)
    ok=0
    [ $code = 143 ] && python3 -c "import sys; sys.exit(0 if $took < 3 else 1)" && [ $w = yes ] &&
        [ $n = yes ] && [ -z "$l" ] && ok=1
    report "$engine: one SIGTERM" $ok "exit $code (want 143) $took s after SIGTERM (want < 3), result written: $w, stage named: $n, engine processes left: ${l:-none}"

    # Left alone, run.max_time_s=2: the stage timeout follows it.
    fresh
    start=$(now)
    timeout -k 5 60 "$pbench" run $config -s run.max_time_s=2 -s run.min_time_s=1 \
        -o a.json >a.out 2>a.err
    code=$?
    took=$(secs "$start" "$(now)")
    sleep 1
    said="stage 'hang' has not returned after"
    [ $engine = torch ] && said="the torch engine sent nothing for"
    n=no; grep -q "$said" a.err && n=yes
    l=$(left)
    ok=0
    [ $code = 1 ] && python3 -c "import sys; sys.exit(0 if $took < 20 else 1)" && [ $n = yes ] &&
        [ -z "$l" ] && ok=1
    report "$engine: left alone, run.max_time_s=2" $ok "exit $code (want 1) after $took s (want < 20), stuck stage named: $n, engine processes left: ${l:-none}"
    grep -h "$said" a.err | cut -c1-300 | sed 's/^/        /'
done

if "$python" -c 'import torch' 2>/dev/null; then
    # pbench SIGKILLed: the engine and its workers die with it.
    fresh
    code=$(timeout -s KILL 10 "$pbench" run torch.yaml -o k.json >/dev/null 2>&1; echo $?)
    sleep 2
    l=$(left)
    ok=0; [ -z "$l" ] && [ "$(sort -u pids.txt | wc -l)" -ge 3 ] && ok=1
    report "torch: pbench SIGKILLed (timeout -s KILL 10)" $ok "exit $code, engine processes: $(sort -u pids.txt | wc -l), left 2 s later: ${l:-none}"

    # A constructor that hangs: pbench ends the engine before timeout's SIGKILL.
    fresh
    start=$(now)
    timeout -k 5 10 "$pbench" run torch.yaml -s 'dataset.args={"hang_init": true}' \
        -o c.json >c.out 2>c.err
    code=$?
    took=$(secs "$start" "$(now)")
    sleep 1
    l=$(left)
    ok=0; [ $code = 124 ] && [ -z "$l" ] && ok=1
    report "torch: Dataset constructor hangs, timeout -k 5 10" $ok "exit $code (want 124, not 137) after $took s, engine processes left: ${l:-none}"
    grep -h "nothing" c.err | sed 's/^/        /'
fi
exit $failed
