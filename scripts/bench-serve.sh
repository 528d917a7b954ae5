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
# --slots: the cost of answering, within served runs, where the noise
# between runs does not enter. This virtual machine's speed drifts in
# phases of seconds (a repeat's CPU per sample moves by ±20%), so whole
# runs, or repeats, differ by more than the cost; adjacent seconds of one
# run differ far less. Served runs of CONFIG go back to back for SECONDS
# (default 600); time is cut into slots of a second and the slots into
# pairs, and in one slot of each pair (the first or the second, flipping:
# A B B A A B ...) a client asks what Prometheus and an open live page ask
# each second (/metrics, /live.json, /result.json, on a kept connection);
# in the other it asks nothing. Each slot's samples/s comes from the
# result's batch records, placed on the clock by each repeat's
# start_unix_s; a pair counts where both its slots lie inside one
# repeat's measured part. The cost is the mean of the pairs' log ratios,
# with a bootstrap 95% interval. --control does the same with no request
# at all: what the method reads where there is nothing to find; --burn MS
# burns MS ms of the client's CPU each asked second instead (a known cost:
# MS / 10 / CPUs % of the machine); --times N asks each route N times a
# second (the verdict is then on the cost per request). Each pair's two
# rates go to results/serve-slots-LABEL.csv.
#   scripts/bench-serve.sh --slots [--control | --burn MS | --times N] [PBENCH] [CONFIG] [SECONDS] [-s key.path=value]...
set -eu
if [ "${1:-}" = "--slots" ]; then
    shift
    CONTROL=0; TIMES=1; BURN=0
    [ "${1:-}" = "--control" ] && { CONTROL=1; shift; }
    [ "${1:-}" = "--times" ] && { TIMES=$2; shift 2; }
    [ "${1:-}" = "--burn" ] && { BURN=$2; shift 2; }
    PBENCH=build/pbench; CONFIG=configs/image.yaml; SECONDS_=600
    case "${1:-}" in ''|-*) ;; *) PBENCH=$1; shift ;; esac
    case "${1:-}" in ''|-*) ;; *) CONFIG=$1; shift ;; esac
    case "${1:-}" in ''|-*) ;; *) SECONDS_=$1; shift ;; esac
    [ -x "$PBENCH" ] || { echo "usage: scripts/bench-serve.sh --slots [--control | --burn MS | --times N] [PBENCH] [CONFIG] [SECONDS] [-s k=v]..." >&2; exit 2; }
    mkdir -p results
    exec python3 - "$PBENCH" "$CONFIG" "$SECONDS_" "$CONTROL" "$TIMES" "$BURN" "$@" <<'PY'
import http.client, json, math, os, random, socket, statistics, subprocess, sys, threading, time
pbench, config, seconds, control, times, burn_ms, extra = (
    sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5]),
    float(sys.argv[6]), sys.argv[7:])
label = "control" if control else "burn%g" % burn_ms if burn_ms else "asked%d" % times
SLOT = 1.0      # seconds; longer where batches are slow (below)
ROUTES = ("/metrics", "/live.json", "/result.json")

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def asked(slot):
    """Slot pairs (2m, 2m+1); pair m asks in its first slot when m is even,
    in its second when odd: A B B A A B B A ..."""
    m, second = divmod(slot, 2)
    return second == m % 2

def client(port, run, log):
    """At 50 ms into each second of a slot that asks, the three routes on one
    kept connection."""
    conn = None
    while run.poll() is None:
        now = time.time()
        second = math.floor(now) + 1
        time.sleep(max(0.0, second + 0.05 - now))
        slot = math.floor(second / SLOT)
        if control or not asked(slot) or run.poll() is not None:
            continue
        if burn_ms:         # a known cost: burn_ms of this process's CPU, no request
            cpu0 = time.thread_time()
            while time.thread_time() - cpu0 < burn_ms / 1000:
                pass
            log.append((slot, "burn", 200))
            continue
        for route in ROUTES * times:
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", route)
                reply = conn.getresponse()
                reply.read()
                log.append((slot, route, reply.status))
            except (OSError, http.client.HTTPException):
                conn = None
                log.append((slot, route, 0))

def slot_rates(result):
    """{slot: samples/s} for each whole slot inside a repeat's measured part.
    Batch k was taken at start + its loop time so far (wait + step, scaled to
    wall_s: the loop's bookkeeping spread evenly). A slot's rate runs from the
    last batch before it to its last batch, over whole rounds of the workers
    (they hand batches over in turn, so takes come in bursts of `workers`)."""
    rates = {}
    workers = max(1, int(result["config"]["loader"].get("workers") or 1))
    for point in result["points"]:
        for rep in point["repeats"]:
            start, wall, b = rep.get("start_unix_s", 0), rep["wall_s"], rep["batch_records"]
            steps = [w + s for w, s in zip(b["wait_ns"], b["step_ns"])]
            total = sum(steps)
            if not start or total <= 0:
                continue
            t, taken, by_slot = start, [], {}
            for k, dt_ns in enumerate(steps):
                t += dt_ns * wall / total
                taken.append(t)
                by_slot.setdefault(math.floor(t / SLOT), []).append(k)
            for slot, ks in by_slot.items():
                first, last = ks[0] - 1, ks[-1]
                last = first + (last - first) // workers * workers
                if (first < 0 or last <= first or slot * SLOT < start
                        or (slot + 1) * SLOT > start + wall):
                    continue
                rates[slot] = sum(b["samples"][first + 1:last + 1]) / (taken[last] - taken[first])
    return rates

subprocess.run([pbench, "run", config, "-q", "-s", "run.repeats=1"] + extra +
               ["-o", "results/serve-slots-warmup.json"], stdout=subprocess.DEVNULL, check=True)
# A slot holds 8 batches or more, so that a slot's rate is more than a
# batch or two: a second for configs/image.yaml, more where batches are slow.
warm = json.load(open("results/serve-slots-warmup.json"))["points"][0]["repeats"][0]
SLOT = float(max(1, math.ceil(8 * warm["wall_s"] / max(1, warm["batches"]))))
print("bench-serve --slots: %s, %s for %.0f s; slots of %.0f s in pairs, %s" % (
    config, "served runs", seconds, SLOT,
    "no request in either slot (control)" if control else
    "one slot of each pair burning %g ms of CPU each second, no request" % burn_ms if burn_ms else
    "one slot of each pair asked " + ", ".join(ROUTES) + (" %d times" % times if times > 1 else "")
    + " each second"),
    file=sys.stderr)
rates, log, t_end, n = {}, [], time.time() + seconds, 0
while time.time() < t_end:
    port, out = free_port(), "results/serve-slots-%s-%d.json" % (label, n)
    run = subprocess.Popen([pbench, "run", config, "-q", "-s", "run.repeats=20", "-s",
                            "run.min_time_s=%g" % (6 * SLOT), "-s", "run.max_time_s=%g" % (8 * SLOT)]
                           + extra +
                           ["--serve", "127.0.0.1:%d" % port, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    thread = threading.Thread(target=client, args=(port, run, log))
    thread.start()
    # Stop at the deadline: pbench keeps what it measured (SIGINT).
    while run.poll() is None and time.time() < t_end:
        time.sleep(0.5)
    if run.poll() is None:
        run.send_signal(2)
    run.wait()
    thread.join()
    rates.update(slot_rates(json.load(open(out))))
    n += 1
    print("  run %d: %d slots measured so far" % (n, len(rates)), file=sys.stderr)
failed = {slot for slot, _, status in log if status != 200}
logs = []
with open("results/serve-slots-%s.csv" % label, "w") as csv:
    csv.write("slot_unix_s,asked_samples_per_s,other_samples_per_s\n")
    for slot in sorted(rates):
        if slot % 2 == 0 and slot + 1 in rates and slot not in failed and slot + 1 not in failed:
            a, b = (slot, slot + 1) if asked(slot) else (slot + 1, slot)
            logs.append(math.log(rates[a] / rates[b]))      # asked / not asked
            csv.write("%.0f,%.2f,%.2f\n" % (slot * SLOT, rates[a], rates[b]))
if len(logs) < 10:
    sys.exit("bench-serve --slots: %d pairs measured; give it more SECONDS" % len(logs))
random.seed(1)
boot = sorted(statistics.fmean(random.choices(logs, k=len(logs))) for _ in range(10000))
cost = 100 * (1 - math.exp(statistics.fmean(logs)))
low, high = 100 * (1 - math.exp(boot[-250])), 100 * (1 - math.exp(boot[249]))
answered = sum(1 for _, _, status in log if status == 200)
print("runs: %d; slot pairs measured: %d (results/serve-slots-%s.csv); %s" % (
    n, len(logs), label, "burned %g ms of CPU in %d asked seconds" % (burn_ms, len(log)) if burn_ms
    else "requests answered: %d of %d (%s each asked second)" % (answered, len(log), ", ".join(ROUTES))))
print("pairs: log ratio sd %.1f %%, median %+.2f %%" % (
    100 * statistics.stdev(logs), 100 * (1 - math.exp(statistics.median(logs)))))
what = ("method's reading with nothing asked (control)" if control else
        "method's reading of %g ms of CPU burned each asked second (%.2f %% of this machine's %d CPUs)"
        % (burn_ms, burn_ms / 10 / os.cpu_count(), os.cpu_count()) if burn_ms else
        "cost of answering a Prometheus scrape and a live page every second" if times == 1 else
        "cost of answering %d scrapes and %d page polls every second" % (times, times))
print("%s: %+.2f %% of samples/s (mean of the pairs; 95%% bootstrap interval %+.2f %% .. %+.2f %%)" % (
    what, cost, low, high))
if control or burn_ms:
    truth = burn_ms / 10 / os.cpu_count() if burn_ms else 0.0
    print("verdict: the method %s %.2f %% (the interval %s it)" % (
        "finds" if low <= truth <= high else "misses", truth,
        "holds" if low <= truth <= high else "does not hold"))
    sys.exit(0)
if times > 1:
    cost, low, high = cost / times, low / times, high / times
    print("per request of each route a second (the cost is CPU time, which adds up): %+.2f %% "
          "(%+.2f %% .. %+.2f %%)" % (cost, low, high))
if high <= 1:
    print("verdict: 1% or less (the whole interval is at or below 1%)")
elif low > 1:
    print("verdict: more than 1%")
else:
    print("verdict: not settled at this noise (the interval spans 1%); give it more SECONDS")
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
