#!/bin/sh
# A run served live (--serve, docs/live.md), checked with the real parts:
# promtool checks /metrics, Debian's prometheus scrapes it every second and
# its query API gives back the stall, headless Chromium shows the page
# updating, hostile clients (garbage, 200 connections, one that never reads)
# change nothing, and a busy port is exit 2 before any data is made.
# Usage: live.sh BUILD_DIR. Exit 77 (skipped) where pbench was built
# without libmicrohttpd; parts whose tool is missing say so and are skipped.
set -u
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
pbench="$build/pbench"
work=$(mktemp -d /tmp/pbench-live-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cd "$work"

port=$(free_port)
# Built without the server: said, and skipped.
if ! "$pbench" serve /nonexistent --serve 127.0.0.1:0 2>&1 | grep -q "nonexistent\|No such"; then
    "$pbench" serve /nonexistent 2>&1 | grep -q "libmicrohttpd" && { echo "skipped: built without libmicrohttpd"; exit 77; }
fi

# The run: 2 points x 5 repeats of 3 s of the harness alone, about 30 s.
"$pbench" run "$src/configs/null.yaml" -q -a loader.workers=1,2 -s run.repeats=5 \
    -s run.min_time_s=3 -s run.max_time_s=3 --serve "127.0.0.1:$port" -o run.json \
    >run.out 2>run.err &
run=$!
pids="$pids $run"
url="http://127.0.0.1:$port"
for i in $(seq 1 100); do
    curl -sf "$url/live.json" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -sf "$url/live.json" >/dev/null || fail "the server never answered: $(cat run.err)"

# Prometheus scrapes /metrics every second from the start.
prom=""
if command -v prometheus >/dev/null; then
    pport=$(free_port)
    cat >prometheus.yml <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: pbench
    static_configs: [{targets: ["127.0.0.1:$port"]}]
EOF
    prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb \
        --web.listen-address="127.0.0.1:$pport" >prometheus.log 2>&1 &
    prom=$!
    pids="$pids $prom"
else
    echo "skipped prometheus: it is not installed (scripts/setup.sh installs it)"
fi


# A busy port: exit 2, before any data is made (no result file).
"$pbench" run "$src/configs/null.yaml" -q --serve "127.0.0.1:$port" -o busy.json >busy.out 2>busy.err
rc=$?
[ "$rc" = 2 ] || fail "a busy port exited $rc, not 2: $(cat busy.err)"
grep -q "in use" busy.err || fail "a busy port did not say so: $(cat busy.err)"
[ ! -e busy.json ] || fail "a busy port still wrote a result"

# The page in headless Chromium, twice a few seconds apart: it updates.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium" ]; then
    sleep 1
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --virtual-time-budget=2500 \
        --dump-dom "$url/" >dom1.html 2>/dev/null
    sleep 3
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --virtual-time-budget=2500 \
        --dump-dom "$url/" >dom2.html 2>/dev/null
    grep -q "null" dom1.html || fail "the page does not name the config"
    cmp -s dom1.html dom2.html && fail "the page did not change in 3 s"
else
    echo "skipped the page: chromium is not installed"
fi

# Hostile clients while the run goes on: garbage, 200 connections, one that
# never reads its answer.
python3 - "$port" <<'EOF' &
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(200):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        held.append(s)
    except OSError:
        pass
for s in held[:20]:
    try:
        s.sendall(b"\x00\xff GARBAGE \r\n\r\n" * 10)
    except OSError:
        pass
try:  # over the connection limit it may be refused, which is the point
    slow = socket.create_connection(("127.0.0.1", port), timeout=2)
    slow.sendall(b"GET /result.json HTTP/1.1\r\nHost: x\r\n\r\n" * 50)
except OSError:
    pass
time.sleep(6)
EOF
hostile=$!
pids="$pids $hostile"
wait "$hostile"
# They are gone: the server answers again (it drops idle ones after 5 s).
for i in $(seq 1 100); do
    curl -sf -m 2 "$url/live.json" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -sf -m 2 "$url/live.json" >/dev/null || fail "the server does not answer after the hostile clients"


# /metrics, once points have finished repeats, passes promtool.
curl -sf "$url/metrics" >metrics.txt || fail "no /metrics"
grep -q '^pbench_stall_ratio{' metrics.txt || fail "no pbench_stall_ratio in /metrics"
if command -v promtool >/dev/null; then
    promtool check metrics <metrics.txt || fail "promtool check metrics"
else
    echo "skipped promtool: prometheus is not installed (scripts/setup.sh installs it)"
fi
wait "$run"
rc=$?
[ "$rc" = 0 ] || fail "the served run exited $rc: $(cat run.err)"
[ -s run.json ] || fail "no result"

if [ -n "$prom" ]; then
    # The stall Prometheus kept against the final result's, point by point:
    # the last scrape came after the run's end (pbench serves 2 s more).
    sleep 1
    curl -sf "http://127.0.0.1:$pport/api/v1/query?query=last_over_time(pbench_stall_ratio%5B5m%5D)" >query.json ||
        fail "Prometheus's query API did not answer: $(tail -5 prometheus.log)"
    python3 - <<'EOF' || fail "Prometheus's stall differs from the result's"
import json
q = json.load(open("query.json"))["data"]["result"]
r = json.load(open("run.json"))
final = {str(i + 1): p["stall_pct"] / 100 for i, p in enumerate(r["points"])}
got = {x["metric"]["point"]: float(x["value"][1]) for x in q if "rank" not in x["metric"]}
assert got, "Prometheus holds no pbench_stall_ratio: %s" % q
for point, stall in final.items():
    assert point in got, "point %s missing from %s" % (point, got)
    assert abs(got[point] - stall) < 1e-6, "point %s: %s scraped, %s in the result" % (point, got[point], stall)
print("prometheus: stall of %d points as the result gives it" % len(got))
EOF
fi
echo "ok"
