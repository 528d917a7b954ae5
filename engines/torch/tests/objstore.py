"""Object stores on loopback for the tests: s3rver (an S3-compatible server
from npm, started from tests/objstore/node_modules, else $PBENCH_S3RVER),
and a small HTTP(S) server of the test's own that serves objects from a
dict or forwards to s3rver, and answers with the faults it is given first
(503 SlowDown, 500, a reset connection, a slow answer, a truncated body)."""
import http.client
import http.server
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
S3RVER_KEY = "S3RVER"


def find_s3rver():
    """(path of s3rver, None) or (None, why the tests skip)."""
    for path in (os.path.join(REPO, "tests", "objstore", "node_modules", ".bin", "s3rver"),
                 os.environ.get("PBENCH_S3RVER", "")):
        if path and os.access(path, os.X_OK):
            if shutil.which("node") is None:
                return None, "node is not installed (apt-get install nodejs)"
            return path, None
    return None, ("s3rver is not installed: scripts/setup.sh installs it into "
                  "tests/objstore/node_modules (or set PBENCH_S3RVER)")


class S3rver:
    """s3rver on 127.0.0.1, a free port, a temporary folder, bucket made."""

    def __init__(self, program, bucket, timeout_s=30.0):
        self.folder = tempfile.mkdtemp(prefix="pbench-s3rver-")
        # s3rver 3.7 makes its listings' continuation tokens with DES, which
        # OpenSSL 3 (node 17 and later) keeps in its legacy provider: without
        # it a listing of more than one page fails with 500.
        env = dict(os.environ)
        legacy = subprocess.run(["node", "--openssl-legacy-provider", "-e", "0"],
                                capture_output=True).returncode == 0
        if legacy:
            env["NODE_OPTIONS"] = (env.get("NODE_OPTIONS", "") + " --openssl-legacy-provider").strip()
        self.process = subprocess.Popen(
            [program, "-d", self.folder, "-a", "127.0.0.1", "-p", "0",
             "--configure-bucket", bucket], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env)
        deadline = time.monotonic() + timeout_s
        said = b""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            said += line
            found = re.search(rb"listening on [0-9.]+:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                self.endpoint = "http://127.0.0.1:%d" % self.port
                threading.Thread(target=self._drain, daemon=True).start()
                return
            if not line and self.process.poll() is not None:
                break
        self.stop()
        raise RuntimeError("s3rver did not start: %s" % said.decode(errors="replace"))

    def _drain(self):
        for _ in self.process.stdout:
            pass

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=S3RVER_KEY, aws_secret_access_key=S3RVER_KEY,
                            config=Config(s3={"addressing_style": "path"}))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b'<Message>Please reduce your request rate.</Message></Error>')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as object stores answer
    disable_nagle_algorithm = True  # headers and body apart, without a delayed ACK's 40 ms

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        with server.lock:
            server.requests += 1
            fault = server.faults.pop(0) if server.faults else None
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "slow":
            time.sleep(server.slow_s)
        if fault in ("503", "500"):
            self.answer(int(fault), SLOW_DOWN if fault == "503" else b"", {})
            return
        if server.upstream:
            status, headers, body = self.forward()
        else:
            status, headers, body = self.serve()
        if fault == "truncate":
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.close_connection = True
            return
        self.answer(status, body, headers)

    def serve(self):
        body = self.server.objects.get(self.path.split("?")[0])
        if body is None:
            return 404, {}, b"no such object\n"
        wanted = re.match(r"bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
        if wanted:
            first, last = int(wanted.group(1)), int(wanted.group(2))
            return 206, {"Content-Range": "bytes %d-%d/%d" % (first, last, len(body))}, \
                body[first:last + 1]
        return 200, {}, body

    def forward(self):
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=30)
        try:
            connection.request("GET", self.path, headers=dict(self.headers.items()))
            response = connection.getresponse()
            body = response.read()
            kept = ("Content-Type", "Content-Range", "ETag", "Last-Modified", "x-amz-request-id")
            return response.status, {k: response.headers[k] for k in kept
                                     if response.headers.get(k)}, body
        finally:
            connection.close()

    def answer(self, status, body, headers):
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FaultServer(http.server.ThreadingHTTPServer):
    """Serves objects (a dict: path -> bytes), or forwards to upstream
    (host, port); faults is a list of what the next requests get instead:
    "503", "500", "reset", "slow" (slow_s late), "truncate"."""
    daemon_threads = True

    def __init__(self, objects=None, upstream=None, certificate=None):
        super().__init__(("127.0.0.1", 0), Handler)
        self.objects = objects or {}
        self.upstream = upstream
        self.faults = []
        self.slow_s = 1.0
        self.requests = 0
        self.lock = threading.Lock()
        scheme = "http"
        if certificate:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self.socket = context.wrap_socket(self.socket, server_side=True)
            scheme = "https"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.server_address[1])
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def handle_error(self, request, client_address):
        pass  # a client that went away (a TLS refusal, a timeout) is the test's doing

    def stop(self):
        self.shutdown()
        self.server_close()


def self_signed(folder):
    """(certificate, key) PEM files for 127.0.0.1, made with openssl."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key
