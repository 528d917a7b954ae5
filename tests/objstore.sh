#!/bin/sh
# Datasets in object storage against real servers on loopback (issue 37's
# fault list): s3rver for s3://, nginx with a self-signed
# certificate for https://, and tests/objstore/proxy.py between pbench and
# s3rver for 503 SlowDown, closed connections, truncated bodies and answers
# slower than dataset.request_timeout_s. Each check prints PASS or FAIL with
# its name; the script exits 1 when any failed.
#
#   a  s3://bucket/prefix/ through s3rver: every sample read, counted
#   b  a bucket that does not exist: exit 2, the bucket named
#   c  wrong credentials: the 403 and the credential source, never the secret
#   d  an https manifest naming a missing object (with and without its
#      size): the run completes, the object counted as a bad sample by name
#   e  the https dataset without dataset.ca_file: a TLS error, no hang
#   f  1 request in 10 answered 503 SlowDown: every sample counted, the
#      503s retried and counted (retry_503)
#   g  connections closed, bodies truncated, answers slower than the
#      request timeout: each run finishes (retries counted) or fails with a
#      message; none hangs. And each fault the proxy injected is a retry in
#      the result, those libcurl makes by itself included (a kept connection
#      that died before answering is retried once on a fresh one, "Connection
#      died, retrying a fresh connect" in curl -v)
#   h  secret keys never appear in stdout, stderr, the result, the trace or
#      the HTML report
#   i  a password in the dataset's URL (https://user:PASS@host/..., nginx
#      asking for Basic auth; and in dataset.endpoint for s3rver) is sent,
#      and appears in no output, result, trace, report or served page; a
#      wrong one is a 401 that names where it came from, not what it is
#
# Usage: objstore.sh PBENCH (the binary). Exit 77 (ctest: skipped) where
# s3rver, awscli, nginx or openssl is missing (scripts/setup.sh installs
# them) or this pbench reads no object storage. Every pbench run is bounded
# by 'timeout 120'; the whole script takes about a minute.
set -u
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: objstore.sh PBENCH (the pbench binary)" >&2; exit 2; }
pbench=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
OBJSTORE_DIR="$src/tests/objstore"
. "$OBJSTORE_DIR/servers.sh"

"$pbench" list dataset.endpoint >/dev/null 2>&1 ||
    objstore_skip "this pbench reads no object storage (it has no dataset.endpoint)"
objstore_require s3rver aws nginx openssl curl
objstore_init
work=$OBJSTORE_WORK
cd "$work"

# --- helpers -------------------------------------------------------------
failures=0
pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1: $2"
    failures=$((failures + 1))
}

# pb NAME [-s key=value]...: runs configs/null.yaml, short, once over the
# data, with s3rver's credentials, bounded by 'timeout 120'. Leaves NAME.out,
# NAME.err, NAME.json (the result) and sets rc. PB_ENV adds or replaces
# environment variables (the last of a name wins).
SAMPLES=48
RUN_SHORT="-q -s run.repeats=1 -s run.warmup_batches=0 -s dataset.epochs=1 -s run.min_time_s=0 \
-s run.max_time_s=60 -s run.step_ms=0 -s loader.workers=2 -s loader.batch_size=8 \
-s pipeline.decode.cost_us=0 -s pipeline.decode.cost_jitter=0"
PB_ENV=""
pb() {
    name=$1
    shift
    # shellcheck disable=SC2086
    timeout 120 env -u AWS_SESSION_TOKEN -u AWS_PROFILE -u AWS_REGION -u CURL_CA_BUNDLE \
        -u SSL_CERT_FILE -u SSL_CERT_DIR HOME="$work/home" \
        AWS_ACCESS_KEY_ID=$OBJSTORE_KEY_ID AWS_SECRET_ACCESS_KEY=$OBJSTORE_SECRET \
        AWS_DEFAULT_REGION=$OBJSTORE_REGION AWS_CONFIG_FILE=/dev/null \
        AWS_SHARED_CREDENTIALS_FILE="$work/home/no-credentials" $PB_ENV \
        "$pbench" run "$src/configs/null.yaml" $RUN_SHORT "$@" -o "$name.json" \
        >"$name.out" 2>"$name.err"
    rc=$?
    PB_ENV=""
}
# What a run said, for a FAIL line: its exit code and last lines.
said() { echo "exit $rc; $(tail -n 4 "$1.err" | tr '\n' ' ')"; }

# res NAME EXPR: a Python expression over the result NAME.json (r), with
# find(key) -> every value of that name anywhere in it (the read stage's
# counters, wherever the result keeps them). Prints it, or nothing.
cat >"$work/res.py" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(1)
def find(key, obj=r, out=None):
    out = [] if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                out.append(v)
            find(key, v, out)
    elif isinstance(obj, list):
        for v in obj:
            find(key, v, out)
    return out
def counter(key):
    """The read stage's counter key (requests, retries, retry_503, ...):
    its largest value over the counters the result holds (the point's
    and its repeats'), or None."""
    values = [c[key] for c in find("counters") if isinstance(c, dict) and key in c]
    return max(values) if values else None
def names():
    return set(v for v in find("name") if isinstance(v, str))
point = r["points"][0] if r.get("points") else {}
errors = point.get("errors", {}) if isinstance(point.get("errors"), dict) else {}
value = eval(sys.argv[2])
print("" if value is None else value)
PY
res() { /usr/bin/python3 "$work/res.py" "$1.json" "$2" 2>/dev/null; }
# Whether VALUE is a whole number above 0 (a counter; empty when absent).
positive() {
    case "$1" in
    '' | *[!0-9]*) return 1 ;;
    esac
    [ "$1" -gt 0 ]
}
# Samples read plus bad ones, of a run over the whole dataset once.
counted() { res "$1" 'point.get("samples", 0) + errors.get("count", 0)'; }

# --- the servers and the data ----------------------------------------------
"$pbench" gen --kind jpeg --out data --count "$SAMPLES" --seed 37 >gen.log 2>&1 ||
    { echo "FAIL: pbench gen: $(cat gen.log)"; exit 1; }
rm -f data/.pbench-generate
mkdir -p home
BUCKET=pbtest
objstore_start_s3rver "$BUCKET" || exit 1
objstore_upload data "s3://$BUCKET/train/" || { echo "FAIL: the upload to s3rver"; exit 1; }
S3="s3://$BUCKET/train/"
s3rver_url=$S3RVER_URL

# --- a: a run over s3://bucket/prefix/ ------------------------------------
pb a -s "dataset.path=$S3" -s "dataset.endpoint=$s3rver_url"
n=$(counted a)
if [ "$rc" != 0 ]; then
    fail "a. s3:// run" "$(said a)"
elif [ "$(res a 'r["dataset"]["samples"]')" != "$SAMPLES" ] || [ "$n" != "$SAMPLES" ] ||
    [ "$(res a 'errors.get("count", 0)')" != 0 ]; then
    fail "a. s3:// run" "listed $(res a 'r["dataset"]["samples"]'), counted $n, $(res a 'errors.get("count", 0)') bad; $SAMPLES uploaded"
else
    pass "a. s3:// run: $SAMPLES of $SAMPLES samples read from $S3"
fi
# The samples are named by their URLs, and the read stage has its sub-rows.
if [ "$rc" = 0 ]; then
    if ! grep -q "\"$S3" a.json; then
        fail "a2. samples named by URL" "no \"$S3...\" in the result"
    else
        pass "a2. samples named by URL ($S3...)"
    fi
    # The listing is timed: a read.list row, or the dataset's list_s.
    rows=$(res a '" ".join(s for s in ("read.connect", "read.ttfb", "read.transfer") if s not in names())')
    listing=$(res a '"read.list" in names() or "list_s" in r["dataset"]')
    requests=$(res a 'counter("requests")')
    if [ -n "$rows" ]; then
        fail "a3. read sub-rows and counters" "missing stage rows: $rows"
    elif [ "$listing" != True ]; then
        fail "a3. read sub-rows and counters" "the listing is not timed (no read.list row, no dataset.list_s)"
    elif ! positive "$requests" || [ "$requests" -lt "$SAMPLES" ]; then
        fail "a3. read sub-rows and counters" "requests ${requests:-absent}, fewer than the $SAMPLES objects"
    else
        pass "a3. read sub-rows and counters: read.connect, .ttfb, .transfer, the listing timed; $requests requests, $(res a 'counter("reused_connections")') on kept connections"
    fi
fi

# --- b: a bucket that does not exist --------------------------------------
pb b -s "dataset.path=s3://no-such-bucket-pbench/train/" -s "dataset.endpoint=$s3rver_url"
if [ "$rc" != 2 ]; then
    fail "b. missing bucket" "exit $rc, not 2 (a config error); $(said b)"
elif ! grep -q "no-such-bucket-pbench" b.err; then
    fail "b. missing bucket" "the message does not name the bucket: $(said b)"
else
    pass "b. missing bucket: exit 2, $(grep -m 1 no-such-bucket-pbench b.err | cut -c 1-160)"
fi

# --- c: wrong credentials ---------------------------------------------------
secret_c="pbench-secret-c-$$-wrongkey"
PB_ENV="AWS_ACCESS_KEY_ID=WRONGKEY AWS_SECRET_ACCESS_KEY=$secret_c"
pb c -s "dataset.path=$S3" -s "dataset.endpoint=$s3rver_url"
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
    fail "c. wrong credentials" "exit $rc (0: no error; 124: a hang)"
elif ! grep -q 403 c.err || ! grep -q environment c.err; then
    fail "c. wrong credentials" "no 403 or no credential source (\"environment\") in: $(said c)"
elif grep -l -- "$secret_c" c.out c.err c.json 2>/dev/null | grep -q .; then
    fail "c. wrong credentials" "the secret key appears in $(grep -l -- "$secret_c" c.out c.err c.json 2>/dev/null | tr '\n' ' ')"
else
    pass "c. wrong credentials: exit $rc, $(grep -m 1 403 c.err | cut -c 1-160)"
fi

# --- d: an https manifest naming a missing object ---------------------------
mkdir -p www/train
cp data/*.jpg www/train/
objstore_manifest www/train
# A manifest with sizes (the object is read and is not there) and one
# without (its size asked with HEAD first).
echo "img_missing.jpg 51234" >>www/train/manifest.txt
sed 's/ .*//' www/train/manifest.txt >www/train/names.txt
objstore_start_nginx www || exit 1
HTTPS="$NGINX_URL/train/"
for variant in sized names; do
    manifest=manifest.txt
    [ "$variant" = names ] && manifest=names.txt
    pb "d-$variant" -s "dataset.path=$HTTPS" -s "dataset.manifest=$manifest" -s "dataset.ca_file=$NGINX_CA"
    check="d. https manifest ($manifest) naming a missing object"
    bad=$(res "d-$variant" 'errors.get("count", 0)')
    if [ "$rc" != 0 ]; then
        fail "$check" "$(said "d-$variant")"
    elif [ "$(res "d-$variant" 'point.get("samples", 0)')" != "$SAMPLES" ] || [ "$bad" != 1 ]; then
        fail "$check" "$(res "d-$variant" 'point.get("samples", 0)') samples and $bad bad; want $SAMPLES and 1"
    elif ! res "d-$variant" 'errors.get("files", [])' | grep -q img_missing.jpg; then
        fail "$check" "the bad sample is not named: $(res "d-$variant" 'errors.get("files", [])')"
    else
        pass "$check: $SAMPLES read, 1 bad: $(res "d-$variant" 'errors["files"][0]' | cut -c 1-140)"
    fi
done

# --- e: TLS failure -----------------------------------------------------------
pb e -s "dataset.path=$HTTPS"
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
    fail "e. untrusted TLS certificate" "exit $rc (0: no error; 124: a hang)"
elif ! grep -qi "certificate\|TLS\|SSL" e.err; then
    fail "e. untrusted TLS certificate" "the message says nothing of TLS: $(said e)"
else
    pass "e. untrusted TLS certificate: exit $rc, $(grep -i -m 1 "certificate\|TLS\|SSL" e.err | cut -c 1-160)"
fi

# --- f: 1 request in 10 answered 503 SlowDown ------------------------------
objstore_start_proxy "$s3rver_url" --delay-ms 2 --fail-every 10 || exit 1
pb f -s "dataset.path=$S3" -s "dataset.endpoint=$PROXY_URL" -s dataset.requests_in_flight=4
slowdowns=$(grep -c ' fail$' "$PROXY_LOG")
retry_503=$(res f 'counter("retry_503")')
if [ "$rc" != 0 ]; then
    fail "f. 503 SlowDown, 1 in 10" "$(said f)"
elif [ "$(counted f)" != "$SAMPLES" ] || [ "$(res f 'errors.get("count", 0)')" != 0 ]; then
    fail "f. 503 SlowDown, 1 in 10" "$(counted f) of $SAMPLES counted, $(res f 'errors.get("count", 0)') bad"
elif ! positive "$retry_503"; then
    fail "f. 503 SlowDown, 1 in 10" "retry_503 is ${retry_503:-absent} after the proxy answered $slowdowns 503s"
else
    pass "f. 503 SlowDown, 1 in 10: $SAMPLES of $SAMPLES samples, retry_503 $retry_503"
    if [ "$retry_503" != "$slowdowns" ]; then
        fail "f2. each 503 counted" "the proxy answered $slowdowns 503s, retry_503 is $retry_503"
    else
        pass "f2. each 503 counted: the proxy answered $slowdowns, retry_503 $retry_503"
    fi
fi
objstore_stop "$PROXY_PID"

# --- g: closed connections, truncated bodies, slow answers -----------------
# g FAULT PROXY-ARGS -- PBENCH-SETTINGS: a run that finishes has counted
# every sample and its retries; one that fails says why; none hangs.
g() {
    check="g. $1"
    shift
    proxy_args=""
    while [ "$1" != -- ]; do
        proxy_args="$proxy_args $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    objstore_start_proxy "$s3rver_url" --delay-ms 2 $proxy_args || exit 1
    start=$(date +%s)
    pb g -s "dataset.path=$S3" -s "dataset.endpoint=$PROXY_URL" -s dataset.requests_in_flight=4 "$@"
    secs=$(($(date +%s) - start))
    # The proxy's log: "N METHOD PATH STATUS FAULT" (FAULT: close, truncate,
    # slow, slow,client-gone (the client gave up first), or -).
    faults=$(grep -c ' \(close\|truncate\|slow\)[a-z,-]*$' "$PROXY_LOG")
    retries=$(res g 'counter("retries")')
    if [ "$rc" = 124 ]; then
        fail "$check" "pbench hung (killed after 120 s)"
    elif [ "$rc" -gt 128 ]; then
        fail "$check" "pbench died of a signal: $(said g)"
    elif [ "$rc" != 0 ]; then
        if [ -s g.err ]; then
            pass "$check: failed with a message in ${secs} s: $(tail -n 1 g.err | cut -c 1-160)"
        else
            fail "$check" "exit $rc without a message"
        fi
    elif [ "$(counted g)" != "$SAMPLES" ]; then
        fail "$check" "$(counted g) of $SAMPLES samples counted"
    elif ! positive "$retries"; then
        fail "$check" "finished, but retries is ${retries:-absent} after $faults faults"
    else
        pass "$check: finished in ${secs} s, $SAMPLES of $SAMPLES counted ($(res g 'errors.get("count", 0)') bad), $retries retries"
        # Every fault the proxy injected is a retry in the result: a retry
        # that libcurl makes by itself (a kept connection that closed
        # before answering is retried once on a fresh one) is one too.
        if [ "$retries" -lt "$faults" ]; then
            fail "$check: each fault counted" "the proxy injected $faults faults ($PROXY_LOG), the result counts $retries retries ($(res g 'dict((k, v) for k, v in point["stages"][0].get("counters", {}).items() if k.startswith("retr"))'))"
        else
            pass "$check: each fault counted: $faults injected, $retries retries"
        fi
    fi
    objstore_stop "$PROXY_PID"
}
g "connections closed without an answer, 1 in 7" --close-every 7 --
g "bodies truncated, 1 in 9" --truncate-every 9 --
g "answers 3 s late, 1 in 5, request_timeout_s 1" --slow-ms 3000 --slow-every 5 -- \
    -s dataset.request_timeout_s=1

# --- h: the secret grep -------------------------------------------------------
# A second s3rver that takes any secret key, so that the run succeeds with
# marked secrets; everything the run wrote is then searched for them.
objstore_start_s3rver --allow-mismatched-signatures "$BUCKET" || exit 1
objstore_upload data "s3://$BUCKET/train/" || { echo "FAIL: the upload to s3rver"; exit 1; }
secret_h="pbench-secret-h-$$-9f2c7e"
token_h="pbench-token-h-$$-41d0aa"
PB_ENV="AWS_SECRET_ACCESS_KEY=$secret_h AWS_SESSION_TOKEN=$token_h"
pb h -s "dataset.path=$S3" -s "dataset.endpoint=$S3RVER_URL" --trace h.trace.json
check="h. no secret in any output"
if [ "$rc" != 0 ]; then
    fail "$check" "the run failed, so nothing was searched: $(said h)"
else
    "$pbench" report h.json --format html -o h.html >h.report.out 2>&1 ||
        fail "$check" "pbench report --format html: $(cat h.report.out)"
    "$pbench" report h.json --format markdown -o h.md >>h.report.out 2>&1
    "$pbench" report h.json --format csv -o h.csv >>h.report.out 2>&1
    searched=""
    for f in h.out h.err h.json h.trace.json h.html h.md h.csv h.report.out; do
        [ -s "$f" ] && searched="$searched $f"
    done
    # shellcheck disable=SC2086
    leaks=$(grep -l -e "$secret_h" -e "$token_h" $searched)
    if [ -n "$leaks" ]; then
        fail "$check" "a secret appears in: $leaks"
    elif [ ! -s h.trace.json ] || [ ! -s h.html ]; then
        fail "$check" "no trace or no HTML report to search (searched:$searched)"
    elif ! res h 'r["dataset"].get("credentials", "")' | grep -q environment; then
        fail "$check" "the result does not name the credential source (\"environment\"): $(res h 'r["dataset"].get("credentials")')"
    else
        pass "$check: the secret key and session token are in none of$searched"
    fi
fi

# --- i: a password in the dataset's URL -------------------------------------
pass_i="pbench-pass-i-$$-6b0f"
printf 'reader:%s\n' "$(openssl passwd -apr1 "$pass_i")" >"$work/htpasswd"
mkdir -p www/auth
cp data/*.jpg www/auth/
objstore_manifest www/auth
NGINX_AUTH="$work/htpasswd" objstore_start_nginx www || exit 1
AUTH_URL="https://reader:$pass_i@127.0.0.1:$NGINX_PORT/auth/"
# i1: a run of 3 s served live, its pages fetched while it runs.
serve_port=$(objstore_free_port)
served=""
if "$pbench" run --help 2>&1 | grep -q -- '--serve'; then
    served="--serve 127.0.0.1:$serve_port"
fi
# shellcheck disable=SC2086
timeout 120 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$work/home" \
    "$pbench" run "$src/configs/null.yaml" $RUN_SHORT -s dataset.epochs=0 -s run.min_time_s=3 \
    -s run.max_time_s=3 -s "dataset.path=$AUTH_URL" -s "dataset.ca_file=$NGINX_CA" \
    --trace i.trace.json $served -o i.json >i.out 2>i.err &
run_i=$!
pages=0
while kill -0 "$run_i" 2>/dev/null; do
    for page in / /live.json /result.json /metrics; do
        if [ -n "$served" ] && curl -sf -m 2 "http://127.0.0.1:$serve_port$page" >"i.page.$pages" 2>/dev/null; then
            pages=$((pages + 1))
        fi
    done
    sleep 0.3
done
wait "$run_i"
rc=$?
check="i1. a password in dataset.path's URL"
if [ "$rc" != 0 ]; then
    fail "$check" "the run failed: $(said i)"
else
    "$pbench" report i.json --format html -o i.html >i.report.out 2>&1
    "$pbench" report i.json --format markdown -o i.md >>i.report.out 2>&1
    "$pbench" report i.json -o i.table >>i.report.out 2>&1
    searched=""
    for f in i.out i.err i.json i.trace.json i.html i.md i.table i.report.out i.page.*; do
        [ -s "$f" ] && searched="$searched $f"
    done
    # shellcheck disable=SC2086
    leaks=$(grep -l -e "$pass_i" $searched)
    if [ -n "$leaks" ]; then
        fail "$check" "the password appears in: $leaks"
    elif [ "$(res i 'point.get("samples", 0) > 0 and errors.get("count", 0) == 0')" != True ]; then
        fail "$check" "the objects were not read with it: $(res i 'point.get("samples")') samples, $(res i 'errors.get("count", 0)') bad"
    elif ! res i 'r["dataset"].get("credentials", "")' | grep -q "dataset.path's URL"; then
        fail "$check" "the result does not name the credential's source: $(res i 'r["dataset"].get("credentials")')"
    elif [ -n "$served" ] && [ "$pages" = 0 ]; then
        fail "$check" "no served page could be fetched to search"
    else
        pass "$check: sent to nginx, in none of i.out i.err i.json i.trace.json, the reports or $pages served pages"
    fi
fi
# i2: a wrong password is a 401 naming the source.
wrong_i="pbench-wrong-i-$$-1a2b"
pb i2 -s "dataset.path=https://reader:$wrong_i@127.0.0.1:$NGINX_PORT/auth/" -s "dataset.ca_file=$NGINX_CA"
check="i2. a wrong password in dataset.path's URL"
if [ "$rc" != 2 ]; then
    fail "$check" "exit $rc, not 2 (a config error); $(said i2)"
elif grep -l -e "$wrong_i" i2.out i2.err i2.json 2>/dev/null | grep -q .; then
    fail "$check" "the password appears in $(grep -l -e "$wrong_i" i2.out i2.err i2.json 2>/dev/null | tr '\n' ' ')"
elif ! grep -q "401.*dataset.path's URL" i2.err; then
    fail "$check" "no 401 naming the credential's source: $(said i2)"
else
    pass "$check: exit 2, $(grep -m 1 401 i2.err | cut -c 1-160)"
fi
# i3: a password in dataset.endpoint (S3 requests are signed: it is not sent).
pb i3 -s "dataset.path=$S3" -s "dataset.endpoint=http://gate:$pass_i@${S3RVER_URL#http://}"
check="i3. a password in dataset.endpoint's URL"
if [ "$rc" != 0 ]; then
    fail "$check" "the run failed: $(said i3)"
elif grep -l -e "$pass_i" i3.out i3.err i3.json 2>/dev/null | grep -q .; then
    fail "$check" "the password appears in $(grep -l -e "$pass_i" i3.out i3.err i3.json 2>/dev/null | tr '\n' ' ')"
else
    pass "$check: in none of i3.out i3.err i3.json; credentials: $(res i3 'r["dataset"].get("credentials")' | cut -c 1-120)"
fi

echo
if [ "$failures" -gt 0 ]; then
    echo "objstore: $failures check(s) FAILED (OBJSTORE_KEEP=1 keeps $work)"
    exit 1
fi
echo "objstore: all checks passed"
