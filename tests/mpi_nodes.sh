#!/bin/sh
# `pbench run` under mpirun across hosts (issue 44), on one machine: two
# "nodes", each a network namespace on a bridge (10.78.0.0/24) with its own
# hostname and its own private /tmp, held by a process that
# tests/mpi_nodes/agent.sh enters in place of ssh (Open MPI's plm_rsh_agent,
# `--host 10.78.0.2,10.78.0.3`). mpirun runs outside both, as on a login
# node; the ranks reach it and each other over TCP on the bridge only. The
# rest of the file system is shared, as a cluster's home or project folder
# is: the work folder (pbench's build folder, not /tmp) holds the config and
# the result. Each check prints PASS or FAIL with its name; exit 1 when any
# failed.
#
#   a  2 nodes, 1 rank each, data in the shared work folder (rank 0 makes
#      it): exit 0, one result file, its ranks on 2 distinct hosts, the
#      aggregate samples/s the sum of the ranks', each rank its whole shard
#   b  3 ranks (2 on node 1), data in each node's private /tmp: each node
#      makes its own copy (rank 0 on node 1, rank 2 on node 2) and node 1's
#      second rank waits for it; the same one merged result
#   c  dataset.cache: cold on both nodes: node 1's copy (on disk) leaves its
#      page cache, node 2's (a tmpfs) cannot; each rank's residency is its
#      node's, the job's the mean, not rank 0's alone, and node 2's warning
#      that it could not evict is in the result, naming rank 1 and its host
#   d  data that only node 1 has: the job stops, naming rank 1 on node 2,
#      and writes no result
#
# Usage: mpi_nodes.sh PBENCH (the binary). Exit 77 (ctest: skipped), with
# the reason, where pbench has no MPI, mpirun, ip, unshare or nsenter is
# missing, or namespaces cannot be made (not root, no CAP_SYS_ADMIN). The
# namespaces and every process in them are removed on exit, failed or not;
# the work folder too, unless PBMPI_KEEP is set.
# About 20 s; every mpirun is bounded by 'timeout 90'.
set -u
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: mpi_nodes.sh PBENCH (the pbench binary)" >&2; exit 2; }
pbench=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
agent="$src/tests/mpi_nodes/agent.sh"
skip() { echo "skipped: $*"; exit 77; }

"$pbench" version 2>/dev/null | grep -q "MPI support: built" ||
    skip "pbench was built without MPI (PBENCH_MPI=OFF or no MPI found)"
for tool in mpirun ip unshare nsenter flock timeout /usr/bin/python3; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is not on PATH"
done
[ "$(id -u)" = 0 ] || skip "making network namespaces needs root"

NET=10.78.0
BRIDGE=pbmpi-br0
NODES="1 2"
# One run at a time: the names and the subnet are fixed.
exec 9>/run/lock/pbench-mpi-nodes.lock || skip "cannot open /run/lock/pbench-mpi-nodes.lock"
flock -w 120 9 || skip "another tests/mpi_nodes.sh held the lock for 2 minutes"

case "$(dirname "$pbench")" in
    "$src"/*) ;;
    /tmp/*) skip "the build folder lies under /tmp outside the source tree, which a node's private /tmp would hide" ;;
esac
work=$(mktemp -d "$(dirname "$pbench")/mpi-nodes-XXXXXX") || exit 1
holders=""
# Every process left in a node (a job that outlived its timeout), then the
# holders, the namespaces and the bridge.
teardown() {
    for k in $NODES; do
        for p in $(ip netns pids "pbmpi-n$k" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    for p in $holders; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    for k in $NODES; do ip netns del "pbmpi-n$k" 2>/dev/null; done
    ip link del "$BRIDGE" 2>/dev/null
}
cleanup() {
    teardown
    [ -n "${PBMPI_KEEP:-}" ] && echo "the work folder: $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
teardown # what a killed earlier run left

# --- the nodes -----------------------------------------------------------
ip link add "$BRIDGE" type bridge 2>/dev/null || skip "cannot make a bridge (no CAP_NET_ADMIN?)"
ip addr add "$NET.1/24" dev "$BRIDGE" && ip link set "$BRIDGE" up || exit 1
for k in $NODES; do
    ns=pbmpi-n$k
    ip netns add "$ns" || skip "cannot make a network namespace"
    ip link add "pbmpi-v$k" type veth peer name "pbmpi-p$k" &&
        ip link set "pbmpi-p$k" netns "$ns" &&
        ip link set "pbmpi-v$k" master "$BRIDGE" up &&
        ip -n "$ns" addr add "$NET.$((k + 1))/24" dev "pbmpi-p$k" &&
        ip -n "$ns" link set "pbmpi-p$k" up && ip -n "$ns" link set lo up || exit 1
    # The holder: the node's hostname and private /tmp live as long as it.
    # Node 1's /tmp is a folder on the build folder's disk (its page cache
    # can be emptied), node 2's a tmpfs (always in memory).
    if [ "$k" = 2 ]; then tmp=tmpfs; else tmp="$work/node$k-tmp" && mkdir "$tmp"; fi
    # A tree that lies under /tmp, as a CI clone may, is held on /mnt (in
    # the node's own mount namespace) while /tmp is covered, then moved back
    # to its path: the node sees pbench's tree and work folder, and nothing
    # else of the host's /tmp.
    ip netns exec "$ns" unshare --uts --mount --propagation private sh -c \
        'hostname "$1" &&
         case "$4" in /tmp/*) mount --bind "$4" /mnt;; *) false;; esac; held=$?
         { [ "$3" = tmpfs ] && mount -t tmpfs tmpfs /tmp || mount --bind "$3" /tmp; } &&
         { [ $held != 0 ] || { mkdir -p "$4" && mount --move /mnt "$4"; }; } &&
         echo $$ >"$2.tmp" && mv "$2.tmp" "$2" && exec sleep 600' \
        sh "pbmpi-node$k" "$work/$NET.$((k + 1)).pid" "$tmp" "$src" 2>"$work/holder$k.err" &
    holders="$holders $!"
done
for k in $NODES; do
    for i in $(seq 1 100); do
        [ -s "$work/$NET.$((k + 1)).pid" ] && break
        sleep 0.1
    done
    [ -s "$work/$NET.$((k + 1)).pid" ] ||
        skip "cannot make node $k (unshare --uts --mount): $(cat "$work/holder$k.err")"
done
# on K CMD...: runs CMD on node K, as the agent does.
on() {
    k=$1
    shift
    PBMPI_NODES="$work" "$agent" "$NET.$((k + 1))" "$@"
}
[ "$(on 1 hostname)" = pbmpi-node1 ] && [ "$(on 2 hostname)" = pbmpi-node2 ] ||
    skip "the nodes do not have their own hostnames"
# Node 1 reaches node 2 over TCP on the bridge (ping is not on every machine).
cat >"$work/reach.py" <<'EOF'
import socket, sys, time
what, addr = sys.argv[1], (sys.argv[2], 7999)
if what == "listen":
    s = socket.create_server(addr)
    s.settimeout(10)
    s.accept()
    sys.exit(0)
for _ in range(50):
    try:
        socket.create_connection(addr, timeout=2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
EOF
on 2 "/usr/bin/python3 $work/reach.py listen $NET.3" 2>/dev/null &
listener=$!
on 1 "/usr/bin/python3 $work/reach.py connect $NET.3" 2>/dev/null && wait $listener ||
    skip "node 1 cannot reach node 2 over TCP on the bridge"

# --- helpers -------------------------------------------------------------
failures=0
pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1: $2"
    failures=$((failures + 1))
}
said() { echo "exit $rc; $(tail -n 6 "$1.err" | tr '\n' ' ')"; }

# The config of tests/test_mpi.c: 61 files (odd, so the shards differ by
# one), one epoch per repeat, each repeat ending at the end of the data.
cat >"$work/tiny.yaml" <<'EOF'
name: mpi-nodes
dataset:
  path: data
  generate: {kind: files, count: 61, size_bytes: 512, seed: 3}
  shuffle: true
  seed: 7
  epochs: 1
pipeline:
  - read:
  - decode: {decoder: null, width: 8, height: 8, channels: 3, cost_us: 20}
loader: {workers: 1, batch_size: 8, prefetch_factor: 2, drop_last: false}
run: {warmup_batches: 0, min_time_s: 30, max_time_s: 60, repeats: 2, step_ms: 0}
EOF

# job NAME HOSTS RANKS CONFIG ARGS...: `pbench run CONFIG ARGS -o NAME.json`
# under mpirun on HOSTS, from the work folder; NAME.out, NAME.err, rc.
# Open MPI's own traffic and the ranks' stay on the bridge; as root it needs
# --allow-run-as-root; under a sanitizer the ranks get Open MPI's leak
# suppressions (tests/test_mpi.c).
job() {
    name=$1 hosts=$2 ranks=$3 config=$4
    shift 4
    (cd "$work" && PBMPI_NODES="$work" timeout 90 mpirun --allow-run-as-root -n "$ranks" \
        --host "$hosts" --bind-to none --mca plm_rsh_agent "$agent" \
        --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$NET.0/24" \
        --mca btl_tcp_if_include "$NET.0/24" --mca btl self,vader,tcp \
        --mca mca_base_component_disable_dlclose 1 \
        -x "LSAN_OPTIONS=suppressions=$src/tests/lsan-openmpi.supp:fast_unwind_on_malloc=0" \
        "$pbench" run -q "$config" "$@" -o "$name.json" >"$name.out" 2>"$name.err")
    rc=$?
}

# merged NAME FILES RANKS HOST...: NAME.json is one merged result of RANKS
# ranks over FILES samples per repeat, the ranks on the HOSTs in rank order,
# its samples/s the sum of the ranks'. Says what is wrong, else nothing.
merged() {
    result=$1 files=$2 ranks=$3
    shift 3
    /usr/bin/python3 - "$work/$result.json" "$files" "$ranks" "$@" <<'EOF'
import json, sys
path, files, ranks, hosts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
point = json.load(open(path))["points"][0]
rows = sorted(point.get("ranks") or [], key=lambda r: r["rank"])
problems = []
if [r["rank"] for r in rows] != list(range(ranks)):
    problems.append("ranks %s, not 0..%d" % ([r["rank"] for r in rows], ranks - 1))
if [r["host"] for r in rows] != hosts:
    problems.append("hosts %s, not %s" % ([r["host"] for r in rows], hosts))
total = point["samples_per_s"]
summed = sum(r["samples_per_s"] for r in rows)
if not total > 0 or abs(summed - total) > 1e-6 * total:
    problems.append("samples/s %.3f, the ranks' sum %.3f" % (total, summed))
for r in rows:
    shard = (files - r["rank"] + ranks - 1) // ranks
    if r["shard"] != "%d/%d" % (r["rank"], ranks) or r["samples"] != 2 * shard:
        problems.append("rank %d read %s of shard %s, not 2 x %d"
                        % (r["rank"], r["samples"], r["shard"], shard))
for rep in point["repeats"]:
    if rep["samples"] != files:
        problems.append("a repeat read %s samples, not %d" % (rep["samples"], files))
summary = point.get("multi_rank") or {}
if (summary.get("ranks") != ranks or summary.get("nodes") != len(set(hosts))
        or summary.get("slowest_host") not in hosts):
    problems.append("multi_rank %s" % summary)
# Each node's page cache is its own: the job's residency is the ranks'
# mean, not rank 0's alone.
resident = [r.get("page_cache_resident_pct") for r in rows]
of_repeats = [rep["page_cache_resident_pct"] for rep in point["repeats"]]
if None in resident or abs(sum(resident) / len(rows) - sum(of_repeats) / len(of_repeats)) > 1e-6:
    problems.append("page cache: ranks %s, repeats %s" % (resident, of_repeats))
print("; ".join(problems))
EOF
}

# results: every .json the job left in the work folder or a results/ there.
results() { (cd "$work" && ls -- *.json results 2>/dev/null | tr '\n' ' '); }

# --- a: 2 nodes, shared data ---------------------------------------------
job a "$NET.2,$NET.3" 2 tiny.yaml
if [ $rc -ne 0 ]; then
    fail "a 2 nodes, shared data" "$(said "$work/a")"
else
    wrong=$(merged a 61 2 pbmpi-node1 pbmpi-node2)
    left=$(results)
    if [ -n "$wrong" ]; then
        fail "a 2 nodes, shared data" "$wrong"
    elif [ "$left" != "a.json " ]; then
        fail "a 2 nodes, shared data" "result files: $left (want a.json alone)"
    elif ! grep -q "2 ranks" "$work/a.out"; then
        fail "a 2 nodes, shared data" "rank 0's table has no rank block: $(head -c 400 "$work/a.out")"
    else
        pass "a 2 nodes, 1 rank each, shared data: one result, 2 hosts, samples/s summed"
    fi
fi

# --- b: 3 ranks, node-local data -----------------------------------------
job b "$NET.2:2,$NET.3:1" 3 tiny.yaml -s dataset.path=/tmp/pbmpi-data
if [ $rc -ne 0 ]; then
    fail "b 3 ranks, node-local data" "$(said "$work/b")"
else
    wrong=$(merged b 61 3 pbmpi-node1 pbmpi-node1 pbmpi-node2)
    n1=$(on 1 "ls /tmp/pbmpi-data | wc -l")
    n2=$(on 2 "ls /tmp/pbmpi-data | wc -l")
    if [ -n "$wrong" ]; then
        fail "b 3 ranks, node-local data" "$wrong"
    elif [ -e /tmp/pbmpi-data ] || [ "$n1" -lt 61 ] || [ "$n2" -lt 61 ]; then
        fail "b 3 ranks, node-local data" "files in /tmp/pbmpi-data: node 1 $n1, node 2 $n2, \
outside the nodes $([ -e /tmp/pbmpi-data ] && echo some || echo none)"
    else
        pass "b 3 ranks on 2 nodes, data in each node's /tmp: each made its copy, one result"
    fi
fi

# --- c: each node's page cache ------------------------------------------
# dataset.cache: cold evicts the data on each node: node 1's leaves its
# page cache, node 2's stays (a tmpfs) and rank 1 says so; the job's
# residency is the mean.
job c "$NET.2,$NET.3" 2 tiny.yaml -s dataset.path=/tmp/pbmpi-data -s dataset.cache=cold
if [ $rc -ne 0 ]; then
    fail "c each node's page cache" "$(said "$work/c")"
else
    wrong=$(merged c 61 2 pbmpi-node1 pbmpi-node2)
    cached=$(/usr/bin/python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
r = sorted(p["ranks"], key=lambda r: r["rank"])
print("%.0f %.0f %.0f %d" % (r[0]["page_cache_resident_pct"], r[1]["page_cache_resident_pct"],
                             p["repeats"][0]["page_cache_resident_pct"],
                             any(w.startswith("rank 1 on pbmpi-node2: dataset.cache: cold could "
                                              "not evict") for w in p.get("warnings", []))))' \
        "$work/c.json")
    set -- $cached
    if [ -n "$wrong" ]; then
        fail "c each node's page cache" "$wrong"
    elif [ "$1" -gt 10 ] || [ "$2" -lt 90 ]; then
        fail "c each node's page cache" "in the page cache: node 1 $1%, node 2 $2% (want ~0, ~100)"
    elif [ "$4" != 1 ]; then
        fail "c each node's page cache" "no warning from rank 1 on pbmpi-node2 that it could not \
evict: $(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["points"][0].get("warnings"))' "$work/c.json")"
    else
        pass "c each node's page cache: node 1 $1%, node 2 $2%, the job $3%; node 2's warning kept"
    fi
fi

# --- d: data on node 1 only ----------------------------------------------
on 1 "cp -r /tmp/pbmpi-data /tmp/pbmpi-only1"
cat >"$work/only1.yaml" <<EOF
name: mpi-nodes-only1
dataset: {path: /tmp/pbmpi-only1, epochs: 1}
pipeline:
  - read:
loader: {workers: 1, batch_size: 8}
run: {warmup_batches: 0, repeats: 1, min_time_s: 0, max_time_s: 10}
EOF
job d "$NET.2,$NET.3" 2 only1.yaml
if [ $rc -eq 0 ]; then
    fail "d data on node 1 only" "exit 0"
elif ! grep -q "rank 1 on pbmpi-node2" "$work/d.err"; then
    fail "d data on node 1 only" "stderr names no rank 1 on pbmpi-node2: $(said "$work/d")"
elif [ -e "$work/d.json" ]; then
    fail "d data on node 1 only" "a result was written"
else
    pass "d data on node 1 only: the job stops, naming rank 1 on pbmpi-node2; no result"
fi

[ $failures -eq 0 ] || { echo "$failures check(s) failed; the work folder was $work"; exit 1; }
echo "all checks passed"
