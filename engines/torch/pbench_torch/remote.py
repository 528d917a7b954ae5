"""Samples in object storage, read as the `read` stage reads them:
s3://BUCKET/KEY with boto3 (Debian's python3-boto3), http(s)://HOST/PATH
with http.client (the standard library's HTTP client, under urllib), its
connections kept alive per host.

A Remote holds the dataset's options (docs/engines.md, "Object storage").
Each process that reads (a DataLoader worker, or the main process with 0
workers) makes its own boto3 client, connections and prefetch threads on
its first read after the fork; nothing of them crosses a fork.

fetch() makes one object's request, retried with exponential backoff
(100 ms doubling, with jitter) on 5xx, SlowDown, a connection reset or a
truncated body, and a timeout, at most dataset.retries times. It returns
the bytes and a RequestLog: the connect, ttfb and transfer spans (the
read stage's sub-rows) and the counters of COUNTERS. What no retry mends
raises ObjectError, a bad sample: a missing object, a refused credential
(naming where the credentials came from, never them), a missing bucket
(naming it), a TLS failure. No credential is ever written anywhere."""
import http.client
import os
import random
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlsplit

from .errors import ConfigError, SampleError, sent
from .protocol import SHARED

monotonic_ns = time.monotonic_ns
thread_time_ns = time.thread_time_ns

SCHEMES = ("s3://", "http://", "https://")
SPANS = ("connect", "ttfb", "transfer")
COUNTERS = ("requests", "retries", "retry_503", "retry_5xx", "retry_reset", "retry_timeout",
            "failed", "reused_connections")
CHUNK_BYTES = 1 << 20
ADDRESSING = ("auto", "path", "virtual")


def is_url(path):
    """True when a sample's path (bytes or str) is an object's URL."""
    text = os.fsdecode(path)
    return text.startswith(SCHEMES)


class ObjectError(SampleError):
    """A request no retry mends: a bad sample. log is its RequestLog."""

    def __init__(self, message, log=None):
        super().__init__(message)
        self.log = log


class Transient(Exception):
    """A failed attempt worth retrying; cause is 503, 5xx, reset or timeout."""

    def __init__(self, cause, detail):
        super().__init__(detail)
        self.cause = cause
        self.detail = detail


class RequestLog:
    """One object's requests: for each span of SPANS its first start, its
    summed wall time and thread CPU over the attempts; COUNTERS' counts."""

    def __init__(self):
        self.start_ns = [0] * len(SPANS)
        self.wall_ns = [0] * len(SPANS)
        self.cpu_ns = [0] * len(SPANS)
        self.counts = dict.fromkeys(COUNTERS, 0)

    def add(self, span, start_ns, end_ns, cpu_ns):
        """Charges [start_ns, end_ns) and cpu_ns to the span named span."""
        k = SPANS.index(span)
        if self.start_ns[k] == 0:
            self.start_ns[k] = start_ns
        self.wall_ns[k] += end_ns - start_ns
        self.cpu_ns[k] += cpu_ns

    def count(self, name, value=1):
        self.counts[name] += value


class Options:
    """The dataset options a Remote reads with (the contract's names)."""

    def __init__(self, dataset):
        def option(key):
            return sent(dataset, key, "dataset")
        self.endpoint = str(option("endpoint") or "").rstrip("/")
        self.region = (str(option("region") or "") or os.environ.get("AWS_REGION") or
                       os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
        self.profile_set = str(option("profile") or "") or os.environ.get("AWS_PROFILE") or ""
        self.profile = self.profile_set or "default"
        self.addressing = str(option("addressing") or "auto")
        if self.addressing not in ADDRESSING:
            raise ConfigError("dataset.addressing", "addressing is auto, path or virtual, not %r"
                              % self.addressing)
        if self.addressing == "auto":
            self.addressing = "path" if self.endpoint else "virtual"
        self.request_timeout_s = float(option("request_timeout_s"))
        if self.request_timeout_s <= 0:
            raise ConfigError("dataset.request_timeout_s", "a request's timeout is above 0 s")
        self.retries = int(option("retries"))
        if self.retries < 0:
            raise ConfigError("dataset.retries", "retries is 0 or more")
        self.ca_file = str(option("ca_file") or "")
        if self.ca_file and not os.path.isfile(self.ca_file):
            raise ConfigError("dataset.ca_file", "%s is not a file" % self.ca_file)
        self.requests_in_flight = int(option("requests_in_flight"))
        low, high = SHARED["requests_in_flight"]["min"], SHARED["requests_in_flight"]["max"]
        if not low <= self.requests_in_flight <= high:
            raise ConfigError("dataset.requests_in_flight",
                              "requests_in_flight is %d to %d" % (low, high))


def backoff_s(retry):
    """The pause before retry number retry (0 first), as pbench's C side
    pauses (engines/shared.json): first_ms doubling, at most cap_ms, times a
    jitter of jitter_low to jitter_high."""
    rule = SHARED["retry_backoff"]
    base_s = min(rule["first_ms"] * 2 ** min(retry, 16), rule["cap_ms"]) / 1000.0
    return base_s * random.uniform(rule["jitter_low"], rule["jitter_high"])


def range_of(offset, size):
    """The Range header's value for a tar member, or None (whole object)."""
    if offset < 0 or size <= 0:
        return None
    return "bytes=%d-%d" % (offset, offset + size - 1)


def split_s3(url):
    """s3://BUCKET/KEY -> (BUCKET, KEY)."""
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


# --- S3 through boto3 -------------------------------------------------------

_connects = threading.local()  # the connect spans of this thread's request


def time_botocore_connects():
    """Wraps the connect of botocore's HTTP(S) connection classes, in this
    process, to note each new connection's span for the thread that made
    it: S3's read.connect and, by their absence, its reused connections."""
    from botocore import awsrequest
    for cls in (awsrequest.AWSHTTPConnection, awsrequest.AWSHTTPSConnection):
        if cls.__dict__.get("pbench_timed"):
            continue
        connect = cls.connect

        def timed_connect(self, connect=connect):
            cpu = thread_time_ns()
            start = monotonic_ns()
            try:
                return connect(self)
            finally:
                spans = getattr(_connects, "spans", None)
                if spans is not None:
                    spans.append((start, monotonic_ns(), thread_time_ns() - cpu))
        cls.connect = timed_connect
        cls.pbench_timed = True


def credential_source(method, profile):
    """Where boto3 found the credentials, in the result's words."""
    if method is None:
        return "none: unsigned"
    if method == "env":
        return "environment"
    if method == "shared-credentials-file":
        return "%s [%s]" % (os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or
                            "~/.aws/credentials", profile)
    if method == "config-file":
        return "%s [%s]" % (os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config", profile)
    return method


def s3_client(options):
    """(boto3 S3 client, credential source) for options: credentials from
    the environment, else the profile's, else unsigned requests."""
    import boto3
    import botocore
    from botocore.config import Config
    from botocore.exceptions import ProfileNotFound
    env_keys = bool(os.environ.get("AWS_ACCESS_KEY_ID") and
                    os.environ.get("AWS_SECRET_ACCESS_KEY"))
    try:
        session = boto3.Session(region_name=options.region,
                                profile_name=None if env_keys else options.profile)
    except ProfileNotFound:
        if options.profile_set:
            raise ConfigError("dataset.profile", "the profile %r is not in %s"
                              % (options.profile, os.environ.get("AWS_SHARED_CREDENTIALS_FILE")
                                 or "~/.aws/credentials"))
        session = boto3.Session(region_name=options.region)
    credentials = session.get_credentials()
    source = credential_source(getattr(credentials, "method", None), options.profile)
    config = Config(s3={"addressing_style": options.addressing},
                    retries={"total_max_attempts": 1, "mode": "standard"},
                    connect_timeout=options.request_timeout_s,
                    read_timeout=options.request_timeout_s,
                    max_pool_connections=max(10, options.requests_in_flight),
                    signature_version=botocore.UNSIGNED if credentials is None else None)
    client = session.client("s3", endpoint_url=options.endpoint or None, config=config,
                            verify=options.ca_file or None)
    time_botocore_connects()
    return client, source


def charge_s3_call(log, start_ns, cpu_ns):
    """Charges a get_object call that started at start_ns (thread CPU
    cpu_ns) and has just returned or raised: the connections it set up
    (time_botocore_connects noted them) to connect, the rest to ttfb. A
    call that set none up counts a reused connection. Returns now."""
    first = monotonic_ns()
    connects, _connects.spans = _connects.spans or [], None
    ttfb_cpu = thread_time_ns() - cpu_ns
    for span in connects:
        log.add("connect", *span)
        start_ns = span[1]
        ttfb_cpu -= span[2]
    if not connects:
        log.count("reused_connections")
    log.add("ttfb", start_ns, first, max(ttfb_cpu, 0))
    return first


def s3_failure(error, bucket, endpoint, source):
    """The Transient or ObjectError for a botocore ClientError."""
    response = getattr(error, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    said = ("%d %s" % (status, code)).strip()
    if code == "SlowDown" or status in (503, 429):
        return Transient("503", said)
    if status >= 500:
        return Transient("5xx", said)
    if code == "NoSuchBucket":
        return ObjectError("the bucket %r does not exist at %s (%s)"
                           % (bucket, endpoint or "AWS", said))
    if status == 404 or code == "NoSuchKey":
        return ObjectError("no such object (%s)" % said)
    if status in (401, 403):
        return ObjectError("access denied (%s) with the credentials from %s" % (said, source))
    return ObjectError("the request failed (%s)" % said)


# --- the per-process state --------------------------------------------------

class ConnectionPool:
    """Idle HTTP(S) connections per (scheme, host, port), for one process."""

    def __init__(self):
        self.idle = {}
        self.lock = threading.Lock()

    def take(self, key):
        with self.lock:
            kept = self.idle.get(key)
            return kept.pop() if kept else None

    def give(self, key, connection):
        with self.lock:
            self.idle.setdefault(key, []).append(connection)


class Remote:
    """Reads objects with the dataset's options; safe to fork and to
    pickle (a process's clients and threads are made where they are used)."""

    def __init__(self, options):
        self.options = options
        self._pid = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"options": self.options}

    def __setstate__(self, state):
        self.__init__(state["options"])

    def _process(self):
        """Starts this process's state on its first use after a fork."""
        if self._pid != os.getpid():
            self._lock = threading.Lock()
            self._s3 = None
            self.source = None
            self._ssl = None
            self._pool = ConnectionPool()
            self._executor = None
            self._ahead = {}
            self._pid = os.getpid()

    def _s3_client(self):
        with self._lock:
            if self._s3 is None:
                self._s3, self.source = s3_client(self.options)
            return self._s3

    def close(self):
        """Closes this process's kept connections and prefetch threads."""
        if self._pid != os.getpid():
            return
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None
        with self._pool.lock:
            for connections in self._pool.idle.values():
                for connection in connections:
                    connection.close()
            self._pool.idle = {}
        if self._s3 is not None:
            self._s3.close()
            self._s3 = None

    # --- the retry loop --------------------------------------------------

    def fetch(self, url, offset=-1, size=0):
        """The object's bytes (the tar member's, for offset >= 0) and its
        RequestLog. Raises ObjectError, its log attached, when the object
        cannot be read."""
        self._process()
        log = RequestLog()
        get = self._s3_get if url.startswith("s3://") else self._http_get
        for attempt in range(self.options.retries + 1):
            log.count("requests")
            try:
                return get(url, offset, size, log), log
            except Transient as e:
                if attempt == self.options.retries:
                    log.count("failed")
                    raise ObjectError("gave up after %d attempts (%s)"
                                      % (attempt + 1, e.detail), log)
                log.count("retries")
                log.count("retry_" + e.cause)
                time.sleep(backoff_s(attempt))
            except ObjectError as e:
                log.count("failed")
                e.log = log
                raise

    def read_body(self, body, deadline_ns, log, first_ns):
        """The body's bytes in chunks, the request's deadline checked
        between them; charges the transfer span."""
        cpu = thread_time_ns()
        chunks = []
        while True:
            chunk = body.read(CHUNK_BYTES)
            if not chunk:
                break
            chunks.append(chunk)
            if monotonic_ns() > deadline_ns:
                raise Transient("timeout", "no whole body in dataset.request_timeout_s")
        log.add("transfer", first_ns, monotonic_ns(), thread_time_ns() - cpu)
        return b"".join(chunks)

    # --- S3 --------------------------------------------------------------

    def _s3_get(self, url, offset, size, log):
        from botocore.exceptions import (ClientError, ConnectionClosedError, ConnectTimeoutError,
                                         EndpointConnectionError, IncompleteReadError,
                                         ReadTimeoutError, ResponseStreamingError, SSLError)
        bucket, key = split_s3(url)
        client = self._s3_client()
        request = {"Bucket": bucket, "Key": key}
        wanted = range_of(offset, size)
        if wanted:
            request["Range"] = wanted
        deadline_ns = monotonic_ns() + int(self.options.request_timeout_s * 1e9)
        _connects.spans = []
        cpu = thread_time_ns()
        start = monotonic_ns()
        try:
            try:
                response = client.get_object(**request)
            finally:
                first = charge_s3_call(log, start, cpu)
            data = self.read_body(response["Body"], deadline_ns, log, first)
        except ClientError as e:
            raise s3_failure(e, bucket, self.options.endpoint, self.source)
        except (ReadTimeoutError, ConnectTimeoutError, socket.timeout) as e:
            raise Transient("timeout", type(e).__name__)
        except (ConnectionClosedError, IncompleteReadError, ResponseStreamingError,
                ConnectionResetError, BrokenPipeError) as e:
            raise Transient("reset", type(e).__name__)
        except SSLError as e:
            raise ObjectError("TLS: %s (dataset.ca_file names a CA to trust)" % e)
        except EndpointConnectionError as e:
            raise ObjectError("cannot connect to %s: %s" % (self.options.endpoint or "AWS", e))
        if wanted and len(data) != size:
            raise Transient("reset", "%d of the range's %d bytes" % (len(data), size))
        return data

    # --- HTTP(S) ---------------------------------------------------------

    def _ssl_context(self):
        with self._lock:
            if self._ssl is None:
                self._ssl = ssl.create_default_context(cafile=self.options.ca_file or None)
            return self._ssl

    def _connection(self, scheme, host, port):
        timeout = self.options.request_timeout_s
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=timeout,
                                               context=self._ssl_context())
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def _http_get(self, url, offset, size, log):
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        pool_key = (parts.scheme, parts.hostname, port)
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        if parts.query:
            target += "?" + parts.query
        wanted = range_of(offset, size)
        headers = {"Range": wanted} if wanted else {}
        deadline_ns = monotonic_ns() + int(self.options.request_timeout_s * 1e9)
        kept = self._pool.take(pool_key)
        try:
            try:
                connection, response, first = self._send(kept, pool_key, target, headers, log)
            except STALE:
                if kept is None:
                    raise
                # A kept connection the server had closed: once more, on a new one.
                log.count("reused_connections", -1)
                connection, response, first = self._send(None, pool_key, target, headers, log)
            try:
                if response.status in (200, 206):
                    data = self.read_body(response, deadline_ns, log, first)
                    length = response.getheader("Content-Length")
                    if length is not None and len(data) != int(length):
                        raise http.client.IncompleteRead(data, int(length) - len(data))
                else:
                    response.read()
                    data = None
            except BaseException:
                connection.close()
                raise
            if response.will_close:
                connection.close()
            else:
                self._pool.give(pool_key, connection)
        except socket.timeout as e:
            raise Transient("timeout", str(e) or "timed out")
        except STALE + (ConnectionAbortedError, http.client.IncompleteRead) as e:
            raise Transient("reset", type(e).__name__)
        except ssl.SSLError as e:
            raise ObjectError("TLS: %s (dataset.ca_file names a CA to trust)"
                              % (getattr(e, "verify_message", None) or e.reason or e))
        except ConnectionRefusedError:
            raise ObjectError("cannot connect to %s:%d (connection refused)"
                              % (parts.hostname, port))
        except (OSError, http.client.HTTPException) as e:
            raise ObjectError("cannot read from %s:%d: %s" % (parts.hostname, port, e))
        return http_body(response.status, response.reason, data, offset, size)

    def _send(self, connection, pool_key, target, headers, log):
        """Sends the GET on connection, or on a new one (its connect timed)
        when None. Returns (connection, response, first byte's time); closes
        the connection when anything raises."""
        if connection is None:
            connection = self._connection(*pool_key)
            cpu = thread_time_ns()
            start = monotonic_ns()
            try:
                connection.connect()
            except BaseException:
                connection.close()
                raise
            log.add("connect", start, monotonic_ns(), thread_time_ns() - cpu)
        else:
            log.count("reused_connections")
        cpu = thread_time_ns()
        start = monotonic_ns()
        try:
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
        except BaseException:
            connection.close()
            raise
        first = monotonic_ns()
        log.add("ttfb", start, first, thread_time_ns() - cpu)
        return connection, response, first

    # --- the check at open -----------------------------------------------

    def check(self, url):
        """Raises ConfigError when no sample can be read from url's store:
        an S3 bucket that does not exist, credentials it refuses (403
        InvalidAccessKeyId, SignatureDoesNotMatch), an endpoint that cannot
        be reached, a TLS failure. Anything else is left to the reads."""
        self._process()
        try:
            if url.startswith("s3://"):
                self._check_s3(url)
            else:
                self._check_http(url)
        except ObjectError as e:
            option = ("dataset.ca_file" if str(e).startswith("TLS") else
                      "dataset.profile" if "credentials" in str(e) else
                      "dataset.endpoint" if "connect" in str(e) else "dataset.path")
            raise ConfigError(option, "%s: %s" % (url, e))

    def _check_s3(self, url):
        from botocore.exceptions import ClientError, EndpointConnectionError, SSLError
        bucket, _ = split_s3(url)
        try:
            self._s3_client().list_objects_v2(Bucket=bucket, MaxKeys=1)
        except ClientError as e:
            failure = s3_failure(e, bucket, self.options.endpoint, self.source)
            code = e.response.get("Error", {}).get("Code")
            if code in ("NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
                raise failure
        except SSLError as e:
            raise ObjectError("TLS: %s (dataset.ca_file names a CA to trust)" % e)
        except EndpointConnectionError as e:
            raise ObjectError("cannot connect to %s: %s" % (self.options.endpoint or "AWS", e))

    def _check_http(self, url):
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        connection = self._connection(parts.scheme, parts.hostname, port)
        try:
            connection.connect()
        except ssl.SSLError as e:
            raise ObjectError("TLS: %s (dataset.ca_file names a CA to trust)"
                              % (getattr(e, "verify_message", None) or e.reason or e))
        except OSError as e:
            raise ObjectError("cannot connect to %s:%d: %s" % (parts.hostname, port,
                                                                e.strerror or e))
        finally:
            connection.close()

    # --- requests in flight ----------------------------------------------

    def prefetch(self, entries):
        """Requests entries' objects ahead, requests_in_flight at a time, on
        this process's threads; take() hands each one over. Objects asked
        for before and not taken are dropped."""
        self._process()
        if self.options.requests_in_flight < 2:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.options.requests_in_flight,
                                                thread_name_prefix="pbench-read")
        for futures in self._ahead.values():
            for future in futures:
                future.cancel()
        self._ahead = {}
        for entry in entries:
            if is_url(entry.path):
                future = self._executor.submit(self.fetch_entry, entry)
                self._ahead.setdefault(entry, []).append(future)

    def take(self, entry):
        """entry's (bytes, RequestLog): prefetched, else fetched now."""
        self._process()
        futures = self._ahead.get(entry)
        if futures:
            future = futures.pop(0)
            if not futures:
                del self._ahead[entry]
            return future.result()
        return self.fetch_entry(entry)

    def fetch_entry(self, entry):
        """fetch() for an index entry (a loose object or a tar member)."""
        return self.fetch(os.fsdecode(entry.path), entry.offset, entry.size)


STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def http_body(status, reason, data, offset, size):
    """The object's bytes from an HTTP answer, or the error it is."""
    said = "%d %s" % (status, reason)
    if status == 206 or (status == 200 and not range_of(offset, size)):
        if range_of(offset, size) and len(data) != size:
            raise Transient("reset", "%d of the range's %d bytes" % (len(data), size))
        return data
    if status == 200:  # a server that ignores Range sends the whole object
        return data[offset:offset + size]
    if status == 503 or status == 429:
        raise Transient("503", said)
    if status >= 500:
        raise Transient("5xx", said)
    if status in (404, 410):
        raise ObjectError("no such object (%s)" % said)
    if status in (401, 403):
        raise ObjectError("access denied (%s)" % said)
    raise ObjectError("the request failed (%s)" % said)
