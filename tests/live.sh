#!/bin/sh
# A run served live (--serve, docs/live.md), checked with the real parts:
# promtool checks /metrics, Debian's prometheus scrapes it every second and
# its query API gives back the stall, headless Chromium shows the page
# updating, hostile clients (garbage, 200 connections, one that never reads)
# change nothing, a busy port is exit 2 before any data is made, and the
# live stall, per window of a second, agrees with each repeat's final one.
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

# The run: 2 points x 8 repeats of 3 s of the harness alone, about 50 s: long
# enough for the page, the hostile clients and promtool to find it running.
"$pbench" run "$src/configs/null.yaml" -q -a loader.workers=1,2 -s run.repeats=8 \
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

# The page in headless Chromium, twice a few seconds apart, once a repeat
# has finished: its figures change, and each load's equal /result.json's
# fetched around it (tests/live_page.py). PBENCH_LIVE_SHOTS=DIR keeps a
# screenshot of each load there.
chromium=$(command -v chromium || command -v chromium-browser || true)
shots=${PBENCH_LIVE_SHOTS:-}
[ -z "$shots" ] || mkdir -p "$shots"
headless() {
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --virtual-time-budget=2500 "$@" 2>/dev/null
}
load_page() { # N: dom$N.html between before$N.json and after$N.json
    curl -sf "$url/result.json" >"before$1.json"
    headless --dump-dom "$url/" >"dom$1.html"
    curl -sf "$url/result.json" >"after$1.json"
    [ -z "$shots" ] || headless --window-size=1280,1100 --screenshot="$shots/live-$1.png" "$url/" >/dev/null
    python3 "$src/tests/live_page.py" points "dom$1.html" "before$1.json" "after$1.json" >"shown$1.json" ||
        fail "load $1: the page does not match /result.json"
}
if [ -n "$chromium" ]; then
    for i in $(seq 1 100); do
        curl -sf "$url/result.json" | grep -q '"repeats":\[{' && break
        sleep 0.2
    done
    load_page 1
    sleep 4
    load_page 2
    grep -q "null" dom1.html || fail "the page does not name the config"
    cmp -s shown1.json shown2.json && fail "the page's figures did not change in 4 s: $(cat shown1.json)"
    echo "chromium: the page's figures changed between two loads 4 s apart, each as /result.json gives them"
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

# The result as the nightly workflow pushes it: pbench report -f prometheus
# passes promtool, and a Pushgateway takes it and gives back each point's
# stall as the result holds it.
"$pbench" report run.json --format prometheus >pushed.prom || fail "report --format prometheus"
if command -v promtool >/dev/null; then
    promtool check metrics <pushed.prom || fail "promtool check metrics of report --format prometheus"
fi
if command -v prometheus-pushgateway >/dev/null; then
    gport=$(free_port)
    prometheus-pushgateway --web.listen-address="127.0.0.1:$gport" >pushgateway.log 2>&1 &
    gateway=$!
    pids="$pids $gateway"
    for i in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$gport/-/ready" >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -sS --fail-with-body --data-binary @pushed.prom "http://127.0.0.1:$gport/metrics/job/pbench_nightly" ||
        fail "the Pushgateway refused the push: $(tail -3 pushgateway.log)"
    curl -sf "http://127.0.0.1:$gport/metrics" >gateway.txt || fail "the Pushgateway does not answer"
    python3 - <<'EOF' || fail "the Pushgateway's stall differs from the result's"
import json, re
r = json.load(open("run.json"))
got = {}
for line in open("gateway.txt"):
    m = re.match(r'pbench_stall_ratio\{(.*)\} (\S+)$', line.strip())
    if m and 'job="pbench_nightly"' in m.group(1) and "rank=" not in m.group(1):
        got[re.search(r'point="(\d+)"', m.group(1)).group(1)] = float(m.group(2))
for i, p in enumerate(r["points"]):
    assert abs(got[str(i + 1)] - p["stall_pct"] / 100) < 1e-9, (i + 1, got, p["stall_pct"])
print("pushgateway: stall of %d points as the result gives it" % len(got))
EOF
    kill "$gateway"
else
    echo "skipped the Pushgateway: prometheus-pushgateway is not installed (scripts/setup.sh installs it)"
fi

# pbench serve history.db: the history report as pbench history show makes
# it, its JSON, and the newest figures per series; read-only, nothing else.
"$pbench" history add run.json --db history.db --force >/dev/null || fail "history add"
"$pbench" history show --db history.db --format html -o history.html
"$pbench" history show --db history.db --format json >history.json
sum_before=$(sha256sum history.db)
hport=$(free_port)
"$pbench" serve history.db --serve "127.0.0.1:$hport" >hserve.out 2>hserve.err &
hserved=$!
pids="$pids $hserved"
for i in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$hport/history.json" >served-history.json 2>/dev/null && break
    sleep 0.1
done
curl -sf "http://127.0.0.1:$hport/" >served-history.html || fail "serve history.db: no page: $(cat hserve.err)"
cmp -s history.html served-history.html || fail "serve history.db's page is not history show --format html's"
cmp -s history.json served-history.json || fail "serve history.db's /history.json is not history show --format json's"
curl -sf "http://127.0.0.1:$hport/metrics" >history-metrics.txt || fail "serve history.db: no /metrics"
if command -v promtool >/dev/null; then
    promtool check metrics <history-metrics.txt || fail "promtool check metrics of a history's /metrics"
fi
for route in /result.json /report.html /history.db /../history.db; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "http://127.0.0.1:$hport$route")
    [ "$code" = 404 ] || fail "serve history.db answered $route with $code, not 404"
done
# DNS rebinding: a request naming another site as its Host reads nothing.
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example.com' "http://127.0.0.1:$hport/history.json")
[ "$code" = 421 ] || fail "serve history.db answered Host: evil.example.com with $code, not 421"
python3 - <<'EOF' || fail "a history's /metrics differs from the result's"
import json, re
r = json.load(open("run.json"))
got = {}
for line in open("history-metrics.txt"):
    m = re.match(r'pbench_samples_per_second\{.*point="([^"]*)".*\} (\S+)$', line.strip())
    if m:
        got[m.group(1)] = float(m.group(2))
want = {", ".join("%s=%s" % kv for kv in p["axes"].items()): p["samples_per_s"] for p in r["points"]}
assert set(got) == set(want), (got, want)
for k in want:
    assert abs(got[k] - want[k]) <= 1e-6 * want[k], (k, got[k], want[k])
print("serve history.db: the newest samples/s of %d series as the result gives them" % len(got))
EOF
kill "$hserved"
[ "$(sha256sum history.db)" = "$sum_before" ] || fail "serving history.db changed it"

# A result with ranks, served by pbench serve: a line per rank on the page,
# the slowest marked.
if [ -n "$chromium" ]; then
    python3 - <<'EOF' || fail "could not make a result with ranks"
import json
r = json.load(open("run.json"))
p = r["points"][0]
shares = [0.3, 0.45, 0.25]  # rank 2 is the slowest
p["ranks"] = [{"rank": k, "host": "node%d" % k, "shard": "%d/3" % k,
               "samples_per_s": p["samples_per_s"] * share, "mean_samples_per_s": 100.0 * share,
               "stall_pct": 10.0 + k, "worker_cpu_pct": 50.0 - k, "cpu_util_pct": 40.0,
               "rss_peak_bytes": 1 << 20, "samples": 1000, "repeats": 5, "barrier_ms_mean": 0.1}
              for k, share in enumerate(shares)]
p["multi_rank"] = {"ranks": 3, "decided_by": "rank 0's stopping rule, broadcast",
                   "slowest_rank": 2, "slowest_host": "node2", "imbalance": 1.8,
                   "stall_mean_pct": 11.0, "stall_worst_pct": 12.0, "stall_worst_rank": 2}
json.dump(r, open("ranks.json", "w"))
EOF
    rport=$(free_port)
    "$pbench" serve ranks.json --serve "127.0.0.1:$rport" >serve.out 2>serve.err &
    served=$!
    pids="$pids $served"
    for i in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$rport/result.json" >/dev/null 2>&1 && break
        sleep 0.1
    done
    headless --dump-dom "http://127.0.0.1:$rport/" >ranks.html
    [ -z "$shots" ] || headless --window-size=1280,1100 --screenshot="$shots/live-ranks.png" \
        "http://127.0.0.1:$rport/" >/dev/null
    python3 "$src/tests/live_page.py" ranks ranks.html ranks.json || fail "the ranks on the page: $(cat serve.err)"
    kill "$served"
fi

# The live stall: JPEGs decoded under a 50 ms step, so that the loop waits
# for some batches and not others (a moderate stall). While it measures,
# /live.json and pbench_live_stall_ratio hold the running repeat's last
# window's share; each repeat's windows agree with its final stall within
# their noise (tests/live_page.py stall).
sport=$(free_port)
"$pbench" run "$src/configs/image.yaml" -q -s run.repeats=3 -s run.step_ms=50 \
    -s run.min_time_s=4 -s run.max_time_s=5 --serve "127.0.0.1:$sport" -o stall.json \
    >stall.out 2>stall.err &
stalled=$!
pids="$pids $stalled"
for i in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$sport/live.json" >/dev/null 2>&1 && break
    sleep 0.1
done
python3 "$src/tests/live_page.py" watch "http://127.0.0.1:$sport" watched.json
wait "$stalled" || fail "the image run exited $?: $(cat stall.err)"
python3 "$src/tests/live_page.py" stall watched.json stall.json ||
    fail "the live stall differs from the result's: $(cat stall.err)"

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
