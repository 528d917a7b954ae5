#!/usr/bin/python3
"""A delaying, fault-injecting HTTP/1.1 reverse proxy for loopback tests.

pbench's object-storage tests and scripts/bench-s3.sh put it between the
client (pbench, awscli, curl) and a local S3-compatible server or nginx, to
give loopback the latency of a real store and the faults of a busy one:

  proxy.py --listen 0 --upstream http://127.0.0.1:4568 --delay-ms 20 \
           --fail-every 10 --log proxy.log

prints the port it listens on (127.0.0.1) as stdout's first line, then serves
until it is killed. Requests are forwarded unchanged: the request line, every
header in its order (Host, Authorization and x-amz-* included, so AWS
Signature V4 still matches) and the body. Connections are kept alive on both
sides: each client connection has its own upstream connection, reopened when
the upstream closed it while idle.

Faults are chosen by one counter over all requests (1, 2, 3, ... in the order
they arrive), so a run sees the same share of each however its requests
interleave. When several periods divide a request's number, the first of
close, fail, truncate, slow in that order applies:
  --close-every K      close the connection without answering
  --fail-every K       answer --fail-status (503: S3's <Code>SlowDown</Code>)
                       with an S3 error body, without asking the upstream
  --truncate-every K   send the upstream's headers (its Content-Length) with
                       half of its body, then close the connection
  --slow-ms N          wait N ms more before answering (every --slow-every K)
--delay-ms applies to every request, faulty or not.

Python 3 standard library only; Debian's /usr/bin/python3 runs it.
"""

import argparse
import http.client
import http.server
import socket
import threading
import time
import urllib.parse

# Headers that describe one connection, not the message; the proxy keeps its
# own connections to each side, so it neither forwards these nor needs to.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"}

# S3's error code for each status the proxy may answer with.
S3_ERROR_CODES = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    502: ("BadGateway", "The proxy could not reach the upstream."),
    503: ("SlowDown", "Please reduce your request rate."),
    504: ("GatewayTimeout", "The upstream did not answer in time."),
}

COPY_CHUNK_BYTES = 256 * 1024


class Faults:
    """The fault plan and the request counter it is applied by."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.requests = 0

    def next(self):
        """Numbers the next request and returns (number, fault or None)."""
        with self.lock:
            self.requests += 1
            n = self.requests
        a = self.args
        for name, every in (("close", a.close_every), ("fail", a.fail_every),
                            ("truncate", a.truncate_every)):
            if every and n % every == 0:
                return n, name
        if a.slow_ms and a.slow_every and n % a.slow_every == 0:
            return n, "slow"
        return n, None


class Log:
    """One line per request: number, method, path, status, fault."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.file = open(path, "a", buffering=1) if path else None

    def write(self, n, method, path, status, fault):
        if not self.file:
            return
        with self.lock:
            self.file.write("%d %s %s %s %s\n" % (n, method, path, status, fault or "-"))


def s3_error_body(status, resource, request_id):
    code, message = S3_ERROR_CODES.get(status, ("ServiceUnavailable", "Injected by the test proxy."))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            "<Resource>%s</Resource><RequestId>%s</RequestId></Error>" %
            (code, message, resource.replace("&", "&amp;").replace("<", "&lt;"), request_id)).encode()


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pbench-test-proxy"
    # Set on the class by main().
    upstream = None          # (host, port)
    faults = None
    log = None
    delay_s = 0.0

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.upstream_conn = None

    def finish(self):
        try:
            super().finish()
        finally:
            if self.upstream_conn:
                self.upstream_conn.close()

    def log_message(self, format, *args):
        pass  # the --log file says what happened; stderr stays quiet

    def do_GET(self):
        self.proxy()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_GET

    def read_request_body(self):
        """The request's body, de-chunked when it came chunked."""
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return b""
        body = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            body += self.rfile.read(size)
            self.rfile.readline()

    def open_upstream(self):
        conn = http.client.HTTPConnection(*self.upstream, timeout=300)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def send_upstream(self, body):
        """Sends the request upstream and returns its response. A kept
        connection the upstream closed while idle is reopened once."""
        for attempt in (1, 2):
            reused = self.upstream_conn is not None
            if not reused:
                self.upstream_conn = self.open_upstream()
            conn = self.upstream_conn
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    lower = name.lower()
                    if lower in HOP_BY_HOP or lower == "transfer-encoding":
                        continue
                    if lower == "content-length":
                        continue  # set below from the body as read
                    conn.putheader(name, value)
                if body or self.command in ("PUT", "POST"):
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body if body else None)
                return conn.getresponse()
            except (ConnectionError, http.client.BadStatusLine, BrokenPipeError):
                conn.close()
                self.upstream_conn = None
                if not reused or attempt == 2:
                    raise

    def answer_error(self, n, status, fault):
        body = s3_error_body(status, urllib.parse.urlsplit(self.path).path, "pbench-proxy-%d" % n)
        self.send_response_only(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "1")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.log.write(n, self.command, self.path, status, fault)

    def proxy(self):
        n, fault = self.faults.next()
        body = self.read_request_body()
        if self.delay_s:
            time.sleep(self.delay_s)
        if fault == "close":
            self.log.write(n, self.command, self.path, "-", "close")
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "fail":
            self.answer_error(n, self.faults.args.fail_status, "fail")
            return
        if fault == "slow":
            time.sleep(self.faults.args.slow_ms / 1000.0)
        try:
            response = self.send_upstream(body)
        except (OSError, http.client.HTTPException) as e:
            self.answer_error(n, 502, "upstream: %s" % e.__class__.__name__)
            self.close_connection = True
            return
        try:
            self.relay(n, response, fault)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout): the upstream's answer is
            # half read, so that connection cannot be reused either.
            self.close_connection = True
            if self.upstream_conn:
                self.upstream_conn.close()
                self.upstream_conn = None
            self.log.write(n, self.command, self.path, response.status,
                           "%s,client-gone" % fault if fault else "client-gone")

    def relay(self, n, response, fault):
        """Sends the upstream's response to the client, streamed when its
        length is known, truncated when the fault says so."""
        length = response.getheader("Content-Length")
        has_body = self.command != "HEAD" and response.status not in (204, 304)
        whole = None
        if has_body and (length is None or fault == "truncate"):
            whole = response.read()  # small (a listing) or about to be cut
            if length is None:
                length = str(len(whole))
        if fault == "truncate" and not (whole and len(whole) >= 2):
            fault = None  # nothing to cut: passed through, and logged so
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            lower = name.lower()
            if lower in HOP_BY_HOP or lower in ("transfer-encoding", "content-length"):
                continue
            self.send_header(name, value)
        if length is not None:
            self.send_header("Content-Length", length)
        if response.will_close:
            self.upstream_conn.close()
            self.upstream_conn = None
        if fault == "truncate":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(whole[: len(whole) // 2])
            self.close_connection = True
            self.log.write(n, self.command, self.path, response.status, "truncate")
            return
        self.end_headers()
        if whole is not None:
            self.wfile.write(whole)
        elif not has_body:
            response.read()  # b"": marks the response done, the connection reusable
        else:
            while True:
                chunk = response.read(COPY_CHUNK_BYTES)
                if not chunk:
                    break
                self.wfile.write(chunk)
        self.log.write(n, self.command, self.path, response.status, fault)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", type=int, default=0,
                   help="port on 127.0.0.1 (0: a free one); printed on stdout's first line")
    p.add_argument("--upstream", required=True, help="http://HOST:PORT of the server behind")
    p.add_argument("--delay-ms", type=float, default=0, help="added to every request")
    p.add_argument("--fail-every", type=int, default=0, help="answer --fail-status to 1 request in K")
    p.add_argument("--fail-status", type=int, default=503)
    p.add_argument("--close-every", type=int, default=0, help="close without answering 1 in K")
    p.add_argument("--truncate-every", type=int, default=0, help="cut the body of 1 in K short")
    p.add_argument("--slow-ms", type=float, default=0, help="wait this much more before answering")
    p.add_argument("--slow-every", type=int, default=1, help="... 1 request in K (default: all)")
    p.add_argument("--log", help="append one line per request to this file")
    args = p.parse_args()

    up = urllib.parse.urlsplit(args.upstream)
    if up.scheme != "http" or not up.hostname:
        p.error("--upstream must be http://HOST:PORT")
    ProxyHandler.upstream = (up.hostname, up.port or 80)
    ProxyHandler.faults = Faults(args)
    ProxyHandler.log = Log(args.log)
    ProxyHandler.delay_s = args.delay_ms / 1000.0

    server = Server(("127.0.0.1", args.listen), ProxyHandler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
