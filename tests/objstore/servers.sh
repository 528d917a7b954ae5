# Real object-storage servers on loopback for pbench's tests and benchmarks
# (tests/objstore.sh, scripts/bench-s3.sh). Sourced, POSIX sh:
#
#   OBJSTORE_DIR=$src/tests/objstore
#   . "$OBJSTORE_DIR/servers.sh"
#   objstore_require s3rver aws      # or exit 77 ("skip: ..."), ctest's skip code
#   objstore_init                    # $OBJSTORE_WORK, and everything stopped on exit
#   objstore_start_s3rver photos     # s3rver with bucket 'photos': $S3RVER_URL
#   objstore_upload data/ s3://photos/train/
#   objstore_start_proxy "$S3RVER_URL" --delay-ms 20 --fail-every 10   # $PROXY_URL
#   objstore_start_nginx data/       # https://127.0.0.1:$NGINX_PORT/, $NGINX_CA
#
# The functions work under 'set -e' as without it.
#
# The servers:
# - s3rver (npm, installed into tests/objstore/node_modules by
#   scripts/setup.sh), the S3 API over a folder; keys S3RVER / S3RVER.
# - tests/objstore/proxy.py, a delaying and fault-injecting reverse proxy.
# - Debian's nginx, serving a folder over TLS with a self-signed certificate
#   made by openssl for 127.0.0.1 and localhost.
# - Debian's awscli, always /usr/bin/aws: an 'aws' earlier on PATH (a pyenv
#   shim, a pip install) may be another version or not work.
# Every server listens on 127.0.0.1 only, on a port the kernel says is free;
# when another process takes it first, the server is started again on a new
# one.

: "${OBJSTORE_DIR:?set OBJSTORE_DIR to pbench's tests/objstore before sourcing servers.sh}"

OBJSTORE_AWS=/usr/bin/aws
OBJSTORE_NGINX=/usr/sbin/nginx
OBJSTORE_PYTHON=/usr/bin/python3
OBJSTORE_S3RVER="$OBJSTORE_DIR/node_modules/.bin/s3rver"
# s3rver's fixed credentials, and a region the clients need to sign.
OBJSTORE_KEY_ID=S3RVER
OBJSTORE_SECRET=S3RVER
OBJSTORE_REGION=us-east-1
OBJSTORE_PIDS=""
OBJSTORE_PROXIES=0
OBJSTORE_WORK=""

# Says why the test cannot run and exits 77, which ctest reports as skipped
# (SKIP_RETURN_CODE 77).
objstore_skip() {
    echo "skip: $*"
    exit 77
}

# Skips (exit 77) unless every named tool is here: s3rver, aws, nginx,
# openssl, curl (python3 and proxy.py are always needed).
objstore_require() {
    [ -x "$OBJSTORE_PYTHON" ] || objstore_skip "$OBJSTORE_PYTHON is missing (Debian's python3)"
    for tool in "$@"; do
        case "$tool" in
        s3rver)
            command -v node >/dev/null 2>&1 ||
                objstore_skip "node is missing (scripts/setup.sh installs nodejs)"
            [ -x "$OBJSTORE_S3RVER" ] ||
                objstore_skip "s3rver is not installed in $OBJSTORE_DIR/node_modules (scripts/setup.sh runs npm ci there; it needs the npm registry)"
            ;;
        aws)
            [ -x "$OBJSTORE_AWS" ] || objstore_skip "$OBJSTORE_AWS is missing (Debian's awscli; scripts/setup.sh installs it)"
            ;;
        nginx)
            [ -x "$OBJSTORE_NGINX" ] || objstore_skip "$OBJSTORE_NGINX is missing (Debian's nginx-light; scripts/setup.sh installs it)"
            ;;
        openssl | curl)
            command -v "$tool" >/dev/null 2>&1 || objstore_skip "$tool is missing (scripts/setup.sh installs it)"
            ;;
        *)
            echo "objstore_require: unknown tool '$tool'" >&2
            exit 1
            ;;
        esac
    done
}

# Makes the work folder $OBJSTORE_WORK and stops every server this file
# started, and removes the folder, when the shell exits (Ctrl-C included).
# A caller with its own exit work calls objstore_cleanup from its own trap.
# OBJSTORE_KEEP=1 keeps the folder (its logs) and says where it is.
objstore_init() {
    OBJSTORE_WORK=$(mktemp -d "${TMPDIR:-/tmp}/pbench-objstore-XXXXXX")
    trap objstore_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

objstore_cleanup() {
    for pid in $OBJSTORE_PIDS; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $OBJSTORE_PIDS; do
        wait "$pid" 2>/dev/null || true
    done
    OBJSTORE_PIDS=""
    if [ -n "$OBJSTORE_WORK" ]; then
        if [ "${OBJSTORE_KEEP:-0}" = 1 ]; then
            echo "kept $OBJSTORE_WORK" >&2
        else
            rm -rf "$OBJSTORE_WORK"
        fi
    fi
}

# Stops one server this file started (its pid: $S3RVER_PID, $PROXY_PID,
# $NGINX_PID), as a test does to restart a proxy with other faults.
objstore_stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    rest=""
    for pid in $OBJSTORE_PIDS; do
        [ "$pid" = "$1" ] || rest="$rest $pid"
    done
    OBJSTORE_PIDS=$rest
}

# Prints a TCP port on 127.0.0.1 that is free now. Another process may take
# it before the server binds it; the start functions retry on a new one.
objstore_free_port() {
    "$OBJSTORE_PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Waits up to 10 s until URL answers anything over HTTP, or the process PID
# is gone. Returns 0 when it answered. Extra curl options come after the URL.
objstore_wait_http() {
    url=$1 pid=$2
    shift 2
    tries=0
    while [ "$tries" -lt 100 ]; do
        code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$@" "$url" 2>/dev/null)
        [ -n "$code" ] && [ "$code" != 000 ] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
        tries=$((tries + 1))
    done
    return 1
}

# Starts s3rver on a free port with these buckets (at least one), its data in
# $OBJSTORE_WORK/s3rver.N; arguments starting with -- are s3rver's options
# (--allow-mismatched-signatures: any secret key signs well). Sets
# S3RVER_PORT, S3RVER_URL, S3RVER_PID.
objstore_start_s3rver() {
    buckets=""
    for b in "$@"; do
        case "$b" in
        --*) buckets="$buckets $b" ;;
        *) buckets="$buckets --configure-bucket $b" ;;
        esac
    done
    case "$buckets" in
    *--configure-bucket*) ;;
    *) echo "objstore_start_s3rver: name a bucket" >&2; return 1 ;;
    esac
    # s3rver 3.7 makes ListObjectsV2's continuation token with DES, which
    # OpenSSL 3 (node 17 and later) keeps in its legacy provider: without it
    # every listing that needs a second page is a 500 InternalError.
    OBJSTORE_NODE_FLAGS=""
    if node --openssl-legacy-provider -e 0 >/dev/null 2>&1; then
        OBJSTORE_NODE_FLAGS=--openssl-legacy-provider
    fi
    for attempt in 1 2 3 4 5; do
        S3RVER_PORT=$(objstore_free_port)
        data="$OBJSTORE_WORK/s3rver.$S3RVER_PORT"
        mkdir -p "$data"
        # shellcheck disable=SC2086
        node $OBJSTORE_NODE_FLAGS "$OBJSTORE_S3RVER" -a 127.0.0.1 -p "$S3RVER_PORT" -d "$data" $buckets --silent \
            >"$data.log" 2>&1 &
        S3RVER_PID=$!
        S3RVER_URL="http://127.0.0.1:$S3RVER_PORT"
        if objstore_wait_http "$S3RVER_URL/" "$S3RVER_PID"; then
            OBJSTORE_PIDS="$OBJSTORE_PIDS $S3RVER_PID"
            return 0
        fi
        kill "$S3RVER_PID" 2>/dev/null || true
        wait "$S3RVER_PID" 2>/dev/null || true
    done
    echo "s3rver did not start: $(tail -5 "$data.log")" >&2
    return 1
}

# Runs Debian's aws against ENDPOINT with s3rver's credentials, and no
# config file but $OBJSTORE_AWS_CONFIG when set:
# objstore_aws ENDPOINT s3 ls s3://bucket/
objstore_aws() {
    endpoint=$1
    shift
    AWS_ACCESS_KEY_ID=$OBJSTORE_KEY_ID AWS_SECRET_ACCESS_KEY=$OBJSTORE_SECRET \
        AWS_DEFAULT_REGION=$OBJSTORE_REGION AWS_CONFIG_FILE=${OBJSTORE_AWS_CONFIG:-/dev/null} \
        AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER="" \
        "$OBJSTORE_AWS" --endpoint-url "$endpoint" "$@"
}

# Creates a bucket on the s3rver started last.
objstore_make_bucket() {
    objstore_aws "$S3RVER_URL" s3 mb "s3://$1" >/dev/null
}

# Uploads the files under DIR to s3://BUCKET/PREFIX/ on the s3rver started
# last, straight (not through a proxy). Hidden files (pbench gen's stamp)
# stay behind.
objstore_upload() {
    objstore_aws "$S3RVER_URL" s3 cp --recursive --only-show-errors --exclude '.*' \
        --exclude '*/.*' "$1" "$2"
}

# Starts tests/objstore/proxy.py in front of UPSTREAM with the faults given
# (proxy.py --help). Sets PROXY_PORT, PROXY_URL, PROXY_PID, PROXY_LOG (one
# line per request). Each call starts another proxy; the variables name the
# last.
objstore_start_proxy() {
    upstream=$1
    shift
    OBJSTORE_PROXIES=$((OBJSTORE_PROXIES + 1))
    n=$OBJSTORE_PROXIES
    PROXY_LOG="$OBJSTORE_WORK/proxy.$n.log"
    out="$OBJSTORE_WORK/proxy.$n.out"
    : >"$out"
    "$OBJSTORE_PYTHON" "$OBJSTORE_DIR/proxy.py" --listen 0 --upstream "$upstream" \
        --log "$PROXY_LOG" "$@" >"$out" 2>"$OBJSTORE_WORK/proxy.$n.err" &
    PROXY_PID=$!
    tries=0
    while [ "$tries" -lt 100 ] && ! grep -q '^[0-9][0-9]*$' "$out"; do
        kill -0 "$PROXY_PID" 2>/dev/null || break
        sleep 0.05
        tries=$((tries + 1))
    done
    PROXY_PORT=$(head -n 1 "$out")
    case "$PROXY_PORT" in
    '' | *[!0-9]*)
        echo "proxy.py did not start: $(cat "$OBJSTORE_WORK/proxy.$n.err")" >&2
        kill "$PROXY_PID" 2>/dev/null || true
        return 1
        ;;
    esac
    PROXY_URL="http://127.0.0.1:$PROXY_PORT"
    OBJSTORE_PIDS="$OBJSTORE_PIDS $PROXY_PID"
}

# Writes DIR/manifest.txt: "NAME SIZE" for each file under DIR (hidden
# files and the manifest itself left out), as pbench's http(s) datasets read
# it. Add lines after it to name objects that are not there.
objstore_manifest() {
    (cd "$1" && find . -type f ! -name '.*' ! -name manifest.txt | sed 's|^\./||' | sort |
        while read -r name; do
            echo "$name $(stat -c %s "$name")"
        done) >"$OBJSTORE_WORK/manifest.tmp" && mv "$OBJSTORE_WORK/manifest.tmp" "$1/manifest.txt"
}

# Makes a self-signed certificate for 127.0.0.1 and localhost (subjectAltName
# both): $NGINX_CA (the certificate, which clients trust as their CA file) and
# its key.
objstore_make_cert() {
    NGINX_CA="$OBJSTORE_WORK/tls/cert.pem"
    NGINX_KEY="$OBJSTORE_WORK/tls/key.pem"
    [ -s "$NGINX_CA" ] && return 0
    mkdir -p "$OBJSTORE_WORK/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -keyout "$NGINX_KEY" -out "$NGINX_CA" >"$OBJSTORE_WORK/tls/openssl.log" 2>&1 ||
        { echo "openssl could not make a certificate: $(cat "$OBJSTORE_WORK/tls/openssl.log")" >&2; return 1; }
}

# Serves DIR over https://127.0.0.1:$NGINX_PORT/ with Debian's nginx in the
# foreground (not a daemon), its prefix, config, pid, logs and temporary
# folders in $OBJSTORE_WORK/nginx.N. Sets NGINX_PORT, NGINX_URL, NGINX_PID,
# NGINX_CA. Write DIR/manifest.txt first (objstore_manifest). With
# NGINX_AUTH set to an htpasswd file, every request needs Basic auth.
objstore_start_nginx() {
    root=$(cd "$1" && pwd)
    auth=""
    if [ -n "${NGINX_AUTH:-}" ]; then
        auth="auth_basic pbench; auth_basic_user_file $NGINX_AUTH;"
    fi
    objstore_make_cert || return 1
    # nginx's workers run as nobody when it starts as root: the folders it
    # reads must be open to them.
    chmod o+rx "$OBJSTORE_WORK"
    for attempt in 1 2 3 4 5; do
        NGINX_PORT=$(objstore_free_port)
        prefix="$OBJSTORE_WORK/nginx.$NGINX_PORT"
        mkdir -p "$prefix/logs" "$prefix/temp"
        cat >"$prefix/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log warn;
events { worker_connections 256; }
http {
    types { image/jpeg jpg jpeg; text/plain txt; application/json json; application/x-tar tar; }
    default_type application/octet-stream;
    access_log $prefix/logs/access.log;
    client_body_temp_path $prefix/temp/body;
    proxy_temp_path $prefix/temp/proxy;
    fastcgi_temp_path $prefix/temp/fastcgi;
    uwsgi_temp_path $prefix/temp/uwsgi;
    scgi_temp_path $prefix/temp/scgi;
    keepalive_requests 10000;
    sendfile on;
    server {
        listen 127.0.0.1:$NGINX_PORT ssl;
        server_name localhost 127.0.0.1;
        ssl_certificate $NGINX_CA;
        ssl_certificate_key $NGINX_KEY;
        root $root;
        $auth
    }
}
EOF
        "$OBJSTORE_NGINX" -p "$prefix" -e "$prefix/logs/error.log" -c "$prefix/nginx.conf" \
            >"$prefix/logs/stdout.log" 2>&1 &
        NGINX_PID=$!
        NGINX_URL="https://127.0.0.1:$NGINX_PORT"
        if objstore_wait_http "$NGINX_URL/" "$NGINX_PID" --cacert "$NGINX_CA"; then
            OBJSTORE_PIDS="$OBJSTORE_PIDS $NGINX_PID"
            return 0
        fi
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    done
    echo "nginx did not start: $(tail -5 "$prefix/logs/error.log")" >&2
    return 1
}
