#!/bin/sh
# What serving a run costs (docs/live.md, "What serving costs"): runs of one
# config without and with --serve, side by side, while a scraper reads the
# served run's /metrics and /live.json every second, as Prometheus and the
# live page would. pbench compare serves both of its sides or neither, so
# the runs alternate here instead, in pairs whose order flips (A B, B A,
# A B, ...: a drift of the machine falls on both sides alike). Each run
# gives its samples/s (the median of its repeats); each pair a ratio
# with/without. Prints every pair, both sides' medians, the difference as
# the median of the paired ratios with its noise (a bootstrap 95% interval
# of that median, and the range of the pairs), and a verdict against the
# goal of 1%:
#   scripts/bench-serve.sh [PBENCH] [CONFIG] [PAIRS] [-s key.path=value]...
# PBENCH defaults to build/pbench, CONFIG to configs/image.yaml, PAIRS to 16
# (each run has 3 repeats unless -s run.repeats=N says otherwise; 16 pairs
# of configs/image.yaml take about 9 minutes on 2 cores). The data is made
# by a first run that is not counted, in the current folder as the config
# says; results go to results/serve-{off,on}-N.json.
#
# --within: the cost of answering scrapes, within one served run, where the
# noise between runs does not enter: runs of CONFIG with --serve and
# run.repeats=R (default 24), a scraper reading /metrics every second
# during repeats 1, 4, 5, 8, 9, ... and only the page's /live.json (which
# it polls to know the repeat) during 2, 3, 6, 7, ...: pairs (1,2), (3,4),
# ... in flipping order. The server is up for both; what differs is
# Prometheus's scrape:
#   scripts/bench-serve.sh --within [PBENCH] [CONFIG] [RUNS] [-s key.path=value]...
set -eu
if [ "${1:-}" = "--within" ]; then
    shift
    PBENCH=build/pbench; CONFIG=configs/image.yaml; RUNS=3
    case "${1:-}" in ''|-*) ;; *) PBENCH=$1; shift ;; esac
    case "${1:-}" in ''|-*) ;; *) CONFIG=$1; shift ;; esac
    case "${1:-}" in ''|-*) ;; *) RUNS=$1; shift ;; esac
    [ -x "$PBENCH" ] || { echo "usage: scripts/bench-serve.sh --within [PBENCH] [CONFIG] [RUNS] [-s k=v]..." >&2; exit 2; }
    mkdir -p results
    exec python3 - "$PBENCH" "$CONFIG" "$RUNS" "$@" <<'PY'
import http.client, json, random, socket, statistics, subprocess, sys, threading, time
pbench, config, runs, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
repeats = 24

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def scraped(repeat):
    """Repeats 1, 4, 5, 8, 9, ...: pairs (1,2), (3,4), ... in flipping order."""
    return repeat % 4 in (0, 1)

def one_run(n):
    port = free_port()
    out = "results/serve-within-%d.json" % n
    run = subprocess.Popen([pbench, "run", config, "-q", "-s", "run.repeats=%d" % repeats] + extra +
                           ["--serve", "127.0.0.1:%d" % port, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn, last_scrape, counts = None, 0.0, {"metrics": 0, "live": 0, "failed": 0}
    while run.poll() is None:
        try:
            conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/live.json")
            live = json.loads(conn.getresponse().read())
            counts["live"] += 1
            now = time.monotonic()
            if (live.get("state") == "measuring" and scraped(int(live.get("repeat") or 0))
                    and now - last_scrape >= 1.0):
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                counts["metrics"] += 1
                last_scrape = now
        except (OSError, ValueError, http.client.HTTPException):
            conn = None
            counts["failed"] += 1
        time.sleep(0.25)
    rates = [r["samples_per_s"] for r in json.load(open(out))["points"][0]["repeats"]]
    return rates, counts

print("bench-serve --within: %s, %d runs of %d served repeats; /metrics scraped every second "
      "in repeats 1, 4, 5, 8, ..." % (config, runs, repeats), file=sys.stderr)
subprocess.run([pbench, "run", config, "-q", "-s", "run.repeats=1"] + extra +
               ["-o", "results/serve-within-warmup.json"], stdout=subprocess.DEVNULL, check=True)
ratios, scrapes = [], 0
for n in range(runs):
    rates, counts = one_run(n)
    scrapes += counts["metrics"]
    for k in range(0, len(rates) - 1, 2):
        a, b = (rates[k], rates[k + 1]) if scraped(k + 1) else (rates[k + 1], rates[k])
        ratios.append(a / b)   # scraped / not scraped
    print("  run %d: %d repeats, %d scrapes of /metrics" % (n + 1, len(rates), counts["metrics"]),
          file=sys.stderr)
random.seed(1)
boot = sorted(statistics.median(random.choices(ratios, k=len(ratios))) for _ in range(10000))
low, high = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
cost, cost_low, cost_high = (100 * (1 - statistics.median(ratios)), 100 * (1 - high),
                             100 * (1 - low))
print("pairs of adjacent repeats, scraped / not: %d (%d scrapes of /metrics)" % (len(ratios), scrapes))
print("cost of answering Prometheus every second: %+.2f %% of samples/s (median of the pairs; "
      "95%% bootstrap interval %+.2f %% .. %+.2f %%; pairs %+.2f %% .. %+.2f %%)" % (
          cost, cost_low, cost_high, 100 * (1 - max(ratios)), 100 * (1 - min(ratios))))
if cost_high <= 1:
    print("verdict: 1% or less")
elif cost_low > 1:
    print("verdict: more than 1%")
else:
    print("verdict: not settled at this noise (the interval spans 1%); more runs")
PY
fi
PBENCH=build/pbench
CONFIG=configs/image.yaml
PAIRS=16
case "${1:-}" in ''|-*) ;; *) PBENCH=$1; shift ;; esac
case "${1:-}" in ''|-*) ;; *) CONFIG=$1; shift ;; esac
case "${1:-}" in ''|-*) ;; *) PAIRS=$1; shift ;; esac
[ -x "$PBENCH" ] || { echo "usage: scripts/bench-serve.sh [PBENCH] [CONFIG] [PAIRS] [-s k=v]..." >&2; exit 2; }
mkdir -p results
scrapes=results/serve-scrapes.txt
: >"$scrapes"
: >results/serve-on.log

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# one_run off|on N [-s k=v]...: one run; on: served, with the scraper
# reading it every second.
one_run() {
    side=$1; n=$2; shift 2
    out="results/serve-$side-$n.json"
    if [ "$side" = off ]; then
        "$PBENCH" run "$CONFIG" -q -s run.repeats=3 "$@" -o "$out" >/dev/null
        return
    fi
    port=$(free_port)
    "$PBENCH" run "$CONFIG" -q -s run.repeats=3 "$@" --serve "127.0.0.1:$port" -o "$out" \
        >/dev/null 2>>results/serve-on.log &
    served=$!
    # The scraper: /metrics and /live.json once a second until the run ends,
    # one process on a kept connection as Prometheus and the page are (a
    # process started per request, as curl in a loop is, would cost the
    # machine more than the serving it measures); a refused connection
    # before the server is up counts as no answer.
    python3 - "$port" "$served" >>"$scrapes" <<'PY'
import http.client, os, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
conn = None
def alive():
    """The run is still going: not gone, and not a zombie waiting for the shell."""
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
while alive():
    for route in ("/metrics", "/live.json"):
        try:
            conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", route)
            reply = conn.getresponse()
            reply.read()
            print(reply.status)
        except (OSError, http.client.HTTPException):
            conn = None
            print("000")
    sys.stdout.flush()
    time.sleep(1)
PY
    wait "$served"
}

echo "bench-serve: $CONFIG, $PAIRS pairs without and with --serve (order flipping), a scraper every 1 s" >&2
"$PBENCH" run "$CONFIG" -q -s run.repeats=1 "$@" -o results/serve-warmup.json >/dev/null
i=0
while [ "$i" -lt "$PAIRS" ]; do
    if [ $((i % 2)) = 0 ]; then
        one_run off "$i" "$@"; one_run on "$i" "$@"
    else
        one_run on "$i" "$@"; one_run off "$i" "$@"
    fi
    echo "  pair $((i + 1)) of $PAIRS done" >&2
    i=$((i + 1))
done

python3 - "$PAIRS" "$CONFIG" "$scrapes" <<'EOF'
import json, random, statistics, sys
pairs, config, scrapes = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def rate(side, n):
    r = json.load(open("results/serve-%s-%d.json" % (side, n)))
    return r["points"][0]["samples_per_s"]
off = [rate("off", n) for n in range(pairs)]
on = [rate("on", n) for n in range(pairs)]
ratios = [b / a for a, b in zip(off, on)]
codes = [line.strip() for line in open(scrapes)]
answered = sum(1 for c in codes if c == "200")
print("pair  order  without --serve  with --serve  with/without")
for n, (a, b, q) in enumerate(zip(off, on, ratios)):
    print("%4d  %s  %15.1f  %12.1f  %+11.2f %%" % (n + 1, "A B" if n % 2 == 0 else "B A", a, b,
                                                   100 * (q - 1)))
random.seed(1)
boot = sorted(statistics.median(random.choices(ratios, k=len(ratios))) for _ in range(10000))
low, high = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
diff = 100 * (statistics.median(ratios) - 1)
print("without --serve: %.1f samples/s (median of %d runs)" % (statistics.median(off), pairs))
print("with --serve:    %.1f samples/s (median of %d runs; %d of %d scrapes answered 200)" % (
    statistics.median(on), pairs, answered, len(codes)))
print("difference:      %+.2f %% (median of the paired ratios; 95%% bootstrap interval %+.2f %% .. "
      "%+.2f %%; pairs %+.2f %% .. %+.2f %%)" % (diff, 100 * (low - 1), 100 * (high - 1),
                                                100 * (min(ratios) - 1), 100 * (max(ratios) - 1)))
cost_high, cost_low = 100 * (1 - low), 100 * (1 - high)
if cost_high <= 1:
    verdict = "serving costs 1%% or less: the 95%% interval of its cost is %+.2f %% .. %+.2f %%" % (
        cost_low, cost_high)
elif cost_low > 1:
    verdict = "serving costs more than 1%%: the 95%% interval of its cost is %+.2f %% .. %+.2f %%" % (
        cost_low, cost_high)
else:
    verdict = ("not settled at this noise: the interval (a cost of %+.2f %% .. %+.2f %%) spans "
               "the 1%% goal; run more pairs on a quieter machine" % (cost_low, cost_high))
print("verdict:         " + verdict)
EOF
