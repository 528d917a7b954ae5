"""Records from other machines: the TCP side of pbench wrap (docs/wrap.md,
"Across machines").

A rank that cannot reach the relay's Unix socket (it runs on another node,
or sees a private /tmp) connects to the address the relay listens on
(PBENCH_WRAP_ADDR), sends a hello with the run's token (PBENCH_WRAP_TOKEN)
first, then pings the relay a few times to measure its clock against the
relay's (NTP's way: the relay's time against the middle of the node's
round trip), and then sends its records as over the Unix socket.

The relay's side (Peer) refuses a connection without the right token or
with a malformed frame, counting it; it gives each node's processes ids
that cannot collide with another node's, and places each node's times on
the relay's clock by the offset its first connection measured. The hook
imports this module only when it connects over TCP."""
import json
import os
import socket
import struct
import time

ADDR_ENV = "PBENCH_WRAP_ADDR"    # HOST:PORT the relay listens on
TOKEN_ENV = "PBENCH_WRAP_TOKEN"  # what every TCP connection sends first
HOST_ENV = "PBENCH_WRAP_HOST"    # the relay's hostname: a rank elsewhere skips the socket

MSG_JSON = 1
MSG_BATCH = 2
MSG_FETCH = 3
MSG_PING = 4    # node -> relay: empty; relay -> node: the relay's monotonic time (u64)
HEAD = struct.Struct("<II")
PING_REPLY = struct.Struct("<IIQ")
BATCH = struct.Struct("<IIiQQI")
FETCH = struct.Struct("<IIiIIIQQ")
PINGS = 5
CONNECT_S = 10.0
MAX_FRAME = 64 << 20   # a larger length is no frame of the hook's
HELLO_S = 10.0         # a connection that says nothing for this long is refused
LAUNCHERS = ("srun", "mpirun", "mpiexec", "orterun", "prterun", "salloc", "sbatch")
TIME_KEYS = ("t", "t_wait", "ready_ns", "start_ns")
SYNTHETIC_PID = 1 << 30  # ids given to another node's pid that one here already has


class Refused(Exception):
    """Why the relay dropped a connection."""


# ---- the relay's side -------------------------------------------------------

def split_address(text):
    """"ADDR[:PORT]" (IPv6 as [ADDR]:PORT) as (addr, port); port 0 when absent."""
    text = text.strip()
    if text.startswith("["):
        addr, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        addr, port = text.split(":")
    else:
        addr, port = text, ""
    if port and not port.isdigit():
        raise ValueError("the port in %r is not a number" % text)
    if not addr:
        raise ValueError("%r names no address" % text)
    return addr, int(port or 0)


def route_address():
    """The address of the interface the default route leaves by, where other
    machines reach this one (no packet is sent: a UDP socket's connect only
    picks the route); None without one."""
    gateway = "192.0.2.1"
    try:
        with open("/proc/net/route") as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 2 and fields[1] == "00000000" and fields[2] != "00000000":
                    gateway = socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
                    break
    except (OSError, ValueError):
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((gateway, 9))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("0.") else address


def multi_node(argv, environ):
    """What in the command or pbench's environment shows a launcher that
    starts ranks on other machines; None when nothing does."""
    for word in argv:
        name = os.path.basename(word)
        if name in LAUNCHERS:
            return "the command runs %s" % name
    words = list(argv)
    first = next((i for i, w in enumerate(words) if os.path.basename(w) == "torchrun" or
                  w in ("torch.distributed.run", "torch.distributed.launch")), len(words))
    for i in range(first, len(words)):  # torchrun's own --nnodes, not the script's
        word = words[i]
        if word.startswith("--nnodes"):
            value = word.split("=", 1)[1] if "=" in word else \
                (words[i + 1] if i + 1 < len(words) else "1")
            if value not in ("1", "1:1"):
                return "the command asks for --nnodes %s" % value
    for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        if environ.get(name, "").isdigit() and int(environ[name]) > 1:
            return "%s is %s" % (name, environ[name])
    return None


class Listener:
    """The relay's TCP socket: where it listens, what it tells the ranks."""

    def __init__(self, text, token):
        addr, port = split_address(text) if text else (route_address(), 0)
        if addr is None:
            raise OSError("no default route: name the address the nodes reach with "
                          "pbench wrap --listen ADDR[:PORT]")
        family, kind, proto, _, where = socket.getaddrinfo(addr, port, 0,
                                                           socket.SOCK_STREAM)[0]
        self.sock = socket.socket(family, kind, proto)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(where)
        self.sock.listen(1024)
        self.sock.setblocking(False)
        bound = self.sock.getsockname()
        told = bound[0]
        if told in ("0.0.0.0", "::"):  # asked for all: the ranks connect to the route's
            told = route_address() or "127.0.0.1"
        self.address = ("[%s]:%d" if ":" in told else "%s:%d") % (told, bound[1])
        self.token = token

    def accept(self):
        conn, peer = self.sock.accept()
        conn.setblocking(False)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, "%s:%d" % (peer[0], peer[1])

    def close(self):
        self.sock.close()


def open_listener(text, argv, environ):
    """(Listener, the line that says where) for --listen's address, or the
    default route's where a launcher that starts ranks on other machines is
    seen; (None, "") otherwise. Refused, saying why, when it cannot be."""
    why = "--listen %s" % text if text else multi_node(argv, environ)
    if why is None:
        return None, ""
    import secrets
    # One pbench per node (--join): every node has the token the head was
    # given; else the head draws one for this run.
    given = environ.get(TOKEN_ENV, "")
    try:
        listener = Listener(text, given if len(given) >= 16 else secrets.token_hex(16))
    except (OSError, ValueError) as e:
        raise Refused("pbench cannot listen at %s for the ranks on other machines (%s): %s"
                      % (text or "the default route's address", why, e))
    return listener, ("pbench wrap: ranks on other machines send their records to %s over "
                      "TCP (%s), with this run's token; a node that runs its own pbench "
                      "joins with: pbench wrap --join %s -- COMMAND%s\n"
                      % (listener.address, why, listener.address, "" if len(given) >= 16 else
                         " (after %s is exported to this pbench and every node: this run drew "
                         "its own)" % TOKEN_ENV))


def refused_text(refused):
    """The warning for the connections the relay dropped: how many, why."""
    n = sum(refused.values())
    return ("%d connection%s to pbench's TCP address refused and dropped (%s); the "
            "records of the job's own processes were kept" % (
                n, "" if n == 1 else "s", ", ".join(
                    "%d: %s" % (c, w) for w, c in sorted(refused.items()))))


def nodes_rows(pythons, here, clocks):
    """Each machine the job's processes ran on: its processes, how they
    reached pbench, and its clock against pbench's (offset applied,
    residual: half the best ping's round trip, offset as measured)."""
    rows = {}
    for hello in pythons.values():
        host = hello.get("host") or here
        row = rows.setdefault(host, {"host": host, "pythons": 0, "via": "unix"})
        row["pythons"] += 1
        if str(hello.get("via", "")).startswith("tcp"):
            row["via"] = "tcp"
    for host, row in rows.items():
        clock = clocks.get(host)
        if clock is not None:
            row.update({"clock_offset_ns": clock[0], "clock_residual_ns": clock[1],
                        "clock_measured_ns": clock[2]})
    return [rows[h] for h in sorted(rows)]


def unreached_text(unreached, relay):
    """Which processes loaded the hook but could not reach pbench, where
    they looked, and what that means."""
    from .hook import SOCKET_ENV
    path, host, why = next(iter(unreached.values()))
    pids = sorted(unreached)
    here = socket.gethostname()
    listen = ("pbench listened at %s over TCP too, and it could not be reached: let "
              "the nodes reach that address, or name one they can with --listen "
              "ADDR[:PORT]" % relay.tcp.address if relay.tcp is not None else
              "run pbench wrap --listen ADDR[:PORT] (an address of this machine that "
              "the nodes reach) to take their records over TCP")
    if host != here:
        where = ("on %s, another machine than pbench's (%s): %s" % (host, here, listen))
    elif path != relay.socket_path:
        where = ("not where pbench's relay is (%s): something in the job changed %s"
                 % (relay.socket_path, SOCKET_ENV))
    else:
        where = ("where pbench's relay is, on this machine: the job's processes see "
                 "another /tmp (a launcher or container that gives them a private /tmp "
                 "or mount namespace); run pbench inside it, let the job see pbench's "
                 "/tmp, or %s" % listen)
    return ("%d Python process%s of the job (pid %s) loaded pbench's hook but could not "
            "reach pbench: %s looked for its relay at %s (%s), %s; %s not measured"
            % (len(pids), "" if len(pids) == 1 else "es", ", ".join(map(str, pids[:8])),
               "it" if len(pids) == 1 else "they", path, why, where,
               "it is" if len(pids) == 1 else "they are"))


class Peer:
    """A TCP connection's state at the relay: refused until its hello holds
    the token; then its node, and what its records need to stand beside
    the other nodes' (their ids, their clock)."""

    def __init__(self, conn, where, token, clocks, here):
        self.conn = conn
        self.where = where
        self.token = token
        self.clocks = clocks   # host -> [offset_ns, residual_ns], the relay's, kept
        self.here = here
        self.host = None
        self.space = None      # whose pids they are: its host, None where they are the relay's
        self.since = time.monotonic()
        self.offset = 0

    def admit(self, kind, payload, job):
        """The frame as the relay reads it (pids and times made the relay's),
        or None when it was the link's own (a ping, the clock); Refused
        when it breaks the rules."""
        if self.host is None:
            return self.hello(kind, payload, job)
        if kind == MSG_PING:
            try:
                self.conn.send(PING_REPLY.pack(12, MSG_PING, time.monotonic_ns()))
            except OSError as e:
                raise Refused("its ping could not be answered (%s)" % e)
            return None
        if kind == MSG_BATCH:
            if len(payload) < BATCH.size:
                raise Refused("a short batch frame")
            f = list(BATCH.unpack_from(payload))
            f[0] = job.node_pid(self.space, f[0])
            f[3], f[4] = self.shift(f[3]), self.shift(f[4])
            return BATCH.pack(*f)
        if kind == MSG_FETCH:
            return self.fetch(payload, job)
        if kind != MSG_JSON:
            raise Refused("a frame of unknown type %d" % kind)
        message = json.loads(payload)
        if not isinstance(message, dict):
            raise Refused("a JSON frame that is no object")
        if message.get("type") == "clock":
            self.clock(message)
            return None
        return self.mapped(message, job)

    def hello(self, kind, payload, job):
        if kind != MSG_JSON:
            raise Refused("no hello first")
        try:
            message = json.loads(payload)
        except ValueError:
            raise Refused("a hello that is not JSON")
        import hmac
        if not isinstance(message, dict) or message.get("type") != "hello" or \
                not hmac.compare_digest(str(message.get("token", "")), self.token):
            raise Refused("no token" if not isinstance(message, dict) or
                          "token" not in message else "a wrong token")
        self.host = str(message.get("host") or self.where)
        # The same kernel and pid namespace (a network namespace, a
        # container sharing the head's pids): its pids are the relay's, and
        # pbench reads their /proc; else they are another machine's.
        self.space = None if message.get("kernel") == kernel_id() else self.host
        message.pop("token", None)
        message["real_pid"] = message.get("pid")
        message["via"] = "tcp %s" % self.where
        return self.mapped(message, job)

    def clock(self, message):
        """The node's offset from the relay's clock and its uncertainty (half
        the best round trip); the first per node is kept for all of its
        connections. An offset within the residual (one machine's shared
        clock) is not applied: it is no offset that could be measured."""
        offset = int(message.get("offset_ns") or 0)
        residual = int(message.get("residual_ns") or 0)
        if self.host not in self.clocks:
            self.clocks[self.host] = [offset if abs(offset) > residual else 0, residual,
                                      offset]
        self.offset = self.clocks[self.host][0]

    def shift(self, t):
        return max(0, t - self.offset) if t and self.offset else t

    def mapped(self, message, job):
        for key in ("pid", "ppid"):
            if isinstance(message.get(key), int):
                message[key] = job.node_pid(self.space, message[key])
        loader = message.get("loader")
        if isinstance(loader, list) and loader and isinstance(loader[0], int):
            loader[0] = job.node_pid(self.space, loader[0])
        if self.offset:
            for key in TIME_KEYS:
                if isinstance(message.get(key), int):
                    message[key] = self.shift(message[key])
        return message

    def fetch(self, payload, job):
        if len(payload) < FETCH.size:
            raise Refused("a short fetch frame")
        f = list(FETCH.unpack_from(payload))
        f[0] = job.node_pid(self.space, f[0])
        rows = payload[FETCH.size:]
        if self.offset:
            f[6], f[7] = self.shift(f[6]), self.shift(f[7])
            import array
            values = array.array("Q")
            values.frombytes(rows[:len(rows) // 8 * 8])
            stride = 1 + 3 * f[4]
            for r in range(f[5] if f[4] else 0):
                for c in range(f[4]):
                    i = r * stride + 1 + 3 * c
                    if i + 1 < len(values):
                        values[i], values[i + 1] = self.shift(values[i]), self.shift(values[i + 1])
            rows = values.tobytes()
        return FETCH.pack(*f) + rows

    def late(self):
        """A connection that has said nothing of itself for HELLO_S."""
        return self.host is None and time.monotonic() - self.since > HELLO_S


class Pids:
    """Each node's process ids as the relay's: a pid another node already
    has gets an id of its own (SYNTHETIC_PID and up); the real one stays in
    the process's hello."""

    def __init__(self, here):
        self.here = here
        self.owner = {}   # the relay's id -> host
        self.ids = {}     # (host, pid) -> the relay's id
        self.next = SYNTHETIC_PID

    def of(self, host, pid):
        if host is None or host == self.here:
            self.owner.setdefault(pid, self.here)
            return pid
        known = self.ids.get((host, pid))
        if known is not None:
            return known
        if self.owner.get(pid, host) == host:
            mine = pid
        else:
            mine, self.next = self.next, self.next + 1
        self.owner[mine] = host
        self.ids[(host, pid)] = mine
        return mine


def kernel_id():
    """This kernel's boot and this process's pid namespace: processes with
    the same one see the same pids in /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return "%s %s" % (f.read().strip(), os.readlink("/proc/self/ns/pid"))
    except OSError:
        return None


# ---- the hook's side ---------------------------------------------------------

def recv_exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("pbench's relay closed the connection (a wrong %s?)" % TOKEN_ENV)
        data += chunk
    return data


def connect(address, token, hello):
    """A connection to the relay over TCP, its hello (with the token and
    this node's clock) sent and its clock measured; OSError when it fails."""
    addr, port = split_address(address)
    sock = socket.create_connection((addr, port), timeout=CONNECT_S)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        hello = dict(hello, token=token or "", t=time.monotonic_ns(), kernel=kernel_id())
        payload = json.dumps(hello).encode("utf-8")
        sock.sendall(HEAD.pack(len(payload) + 4, MSG_JSON) + payload)
        best = None
        for _ in range(PINGS):
            t0 = time.monotonic_ns()
            sock.sendall(HEAD.pack(4, MSG_PING))
            _, kind, relay_t = PING_REPLY.unpack(recv_exact(sock, PING_REPLY.size))
            t1 = time.monotonic_ns()
            if kind != MSG_PING:
                raise OSError("pbench's relay answered a ping with a frame of type %d" % kind)
            if best is None or t1 - t0 < best[0]:
                best = (t1 - t0, (t0 + t1) // 2 - relay_t)
        clock = json.dumps({"type": "clock", "offset_ns": best[1], "residual_ns": best[0] // 2,
                            "pings": PINGS}).encode("utf-8")
        sock.sendall(HEAD.pack(len(clock) + 4, MSG_JSON) + clock)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return sock
