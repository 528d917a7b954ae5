"""pbench wrap --join HOST:PORT -- COMMAND: one node of a job whose launcher
starts one pbench per node (torchrun per node, a Slurm script that runs
pbench wrap on each node; docs/wrap.md, "One pbench per node").

The node's side (main) connects to the head's relay over TCP with the run's
token (PBENCH_WRAP_TOKEN, the same on every node), says it joined, takes the
hook's settings from the head's welcome, and runs COMMAND with pbench's hook:
its ranks then send their records to the head over TCP as ranks started by
srun do, and the head holds the one result. The node's job ends when it ends
by itself, when the head says stop (its own stop, SIGINT or SIGTERM), when
the head's connection is gone, or on this pbench's SIGINT/SIGTERM; then the
node says how it ended (node_end) and exits with the job's status.

The head's side (Joined) keeps the nodes that joined, welcomes them, tells
them to stop, waits for them to end, and says in the result which joined,
which left before the window ended and how many never joined."""
import json
import os
import selectors
import shlex
import signal
import socket
import sys
import time

from . import hook, nodes
from .procs import become_subreaper, descendants, reap_orphans

STARTUP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")
JOIN_WAIT_S = 60.0     # how long a node tries to reach the head, then waits for its welcome
END_WAIT_S = 8.0       # how long the head waits for its joined nodes to say they ended
KILL_WAIT_S = 3.0
NO_SOCKET = "/dev/null/no-relay-on-a-joined-node"  # what the hook tries first, and cannot reach
MIN_TOKEN = 16         # a shorter PBENCH_WRAP_TOKEN would not keep strangers out


# ---- the head's side ----------------------------------------------------------

def expected_nodes(argv, environ):
    """How many nodes the job runs on and what says so, where its command
    or pbench's environment does (torchrun's --nnodes N, Slurm's node
    count); (None, None) where nothing does (or an elastic range)."""
    words = list(argv)
    for i, word in enumerate(words):
        if word.startswith("--nnodes"):
            value = word.split("=", 1)[1] if "=" in word else \
                (words[i + 1] if i + 1 < len(words) else "")
            low, _, high = value.partition(":")
            if low.isdigit() and (not high or high == low):
                return int(low), "the command's --nnodes %s" % low
            return None, None
    for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        if environ.get(name, "").isdigit():
            return int(environ[name]), "%s is %s" % (name, environ[name])
    return None, None


class Joined:
    """The nodes that joined the head's run (pbench wrap --join), for one
    run of the job."""

    def __init__(self, here, expected, because):
        self.here = here
        self.expected = expected   # nodes the job runs on, the head's included; or None
        self.because = because     # what says so
        self.nodes = {}            # conn -> its row
        self.welcome = None        # what a node's job needs: the hook's settings

    def hello(self, state, message):
        """A node's pbench said who it is (its clock is measured next)."""
        row = {"host": str(message.get("host") or "?"), "pid": message.get("real_pid"),
               "command": str(message.get("command") or ""), "joined_t": message.get("t"),
               "ended_t": None, "ended": None, "status": None}
        self.nodes[state[2].conn] = row

    def join(self, state):
        """The node's clock is measured: welcomed with the hook's settings."""
        if state[2].conn in self.nodes:
            self.send(state[2].conn, dict(self.welcome, type="welcome", host=self.here))

    def ended(self, state, message):
        row = self.nodes.get(state[2].conn)
        if row is not None:
            row.update(ended_t=message.get("t"), ended=str(message.get("ended") or "?"),
                       status=message.get("status"))

    def gone(self, conn):
        """A node's connection closed: ended without saying so, where it had not."""
        row = self.nodes.get(conn)
        if row is not None and row["ended"] is None:
            row.update(ended_t=time.monotonic_ns(), ended="its pbench went away without "
                       "saying how its job ended")

    @staticmethod
    def send(conn, message):
        payload = json.dumps(message).encode("utf-8")
        try:
            conn.setblocking(True)
            conn.sendall(hook.HEAD.pack(len(payload) + 4, hook.MSG_JSON) + payload)
        except OSError:
            pass
        finally:
            try:
                conn.setblocking(False)
            except OSError:
                pass

    def running(self):
        return [c for c, row in self.nodes.items() if row["ended"] is None]

    def stop(self):
        """Tells the joined nodes that still run to end their jobs."""
        for conn in self.running():
            self.send(conn, {"type": "stop"})

    def wait(self, pump, wait_s):
        """Waits up to wait_s (pump: the relay's reading, meanwhile) for the
        joined nodes to say they ended."""
        deadline = time.monotonic() + wait_s
        while self.running() and time.monotonic() < deadline:
            pump(0.05)

    def end(self, pump, grace_s):
        """The head's job ended by itself: the joined nodes' jobs, ranks of
        the same job, are given END_WAIT_S to end too, then told to stop
        and given what a node takes to end its job (grace_s, then SIGTERM
        and SIGKILL)."""
        self.wait(pump, END_WAIT_S)
        self.stop()
        self.wait(pump, grace_s + 2 * KILL_WAIT_S + 1)

    def rows(self, window):
        """Each joined node: its host, how its job ended, and whether it left
        early: its job failed by itself (a crash, a kill) before pbench
        ended the job, at left_at_s into the measured window (window: its
        bounds), which then ends the other ranks' too."""
        out = []
        for row in self.nodes.values():
            left = row["ended_t"] is not None and (
                row["ended"].startswith("its pbench went away") or
                (row["status"] not in (0, None) and row["ended"].endswith("by itself")))
            out.append({"host": row["host"], "pid": row["pid"], "command": row["command"],
                        "ended": row["ended"] or "still running when the head ended",
                        "status": row["status"], "left_early": bool(left),
                        "left_at_s": round((row["ended_t"] - window[0]) / 1e9, 2)
                        if left and window[0] else None, "ended_t": row["ended_t"]})
        return sorted(out, key=lambda r: r["host"])

    def account(self, window):
        """The joined nodes as the result keeps them."""
        return [{k: v for k, v in r.items() if k != "ended_t"} for r in self.rows(window)]

    def warnings(self, window, reported):
        """What the table says of the nodes: those that left before the
        window ended, and how many never reported (reported: the hosts
        whose processes or pbench reached the head)."""
        said = []
        left = sorted((r for r in self.rows(window) if r["left_early"]),
                      key=lambda r: r["ended_t"])
        if left:
            first = left[0]
            how = lambda r: r["ended"][len("the job "):-len(" by itself")] \
                if r["ended"].endswith("by itself") else r["ended"]
            said.append("node %s left first: its job %s%s; its ranks' rows end there, and a "
                        "synchronous job's other ranks fail or wait from then on%s"
                        % (first["host"], how(first), "" if first["left_at_s"] is None else
                           " %.1f s into the measured window" % first["left_at_s"],
                           "".join("; node %s followed %.1f s later (%s)"
                                   % (r["host"], (r["ended_t"] - first["ended_t"]) / 1e9, how(r))
                                   for r in left[1:])))
        hosts = sorted(set(reported) | {r["host"] for r in self.nodes.values()})
        if self.expected and len(hosts) < self.expected:
            missing = self.expected - len(hosts)
            said.append("%d of the job's %d nodes (%s) never reached pbench: only %s did; "
                        "where a node runs its own pbench, it joins with pbench wrap --join "
                        "HEAD:PORT -- ... and this run's %s"
                        % (missing, self.expected, self.because, ", ".join(hosts) or "none",
                           nodes.TOKEN_ENV))
        return said


# ---- the node's side ----------------------------------------------------------

def say(text):
    sys.stderr.write("pbench wrap --join: %s\n" % text)
    sys.stderr.flush()


def reach(address, token, hello):
    """The connection to the head, tried until JOIN_WAIT_S (the head may
    start after this node); OSError with the last reason."""
    deadline = time.monotonic() + JOIN_WAIT_S
    while True:
        try:
            return nodes.connect(address, token, hello)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def read_frame(sock, timeout):
    """The head's next JSON frame; None at the end of the connection or the
    timeout."""
    sock.settimeout(timeout)
    try:
        length, kind = hook.HEAD.unpack(nodes.recv_exact(sock, hook.HEAD.size))
        payload = nodes.recv_exact(sock, length - 4)
    except (OSError, ValueError):
        return None
    finally:
        sock.settimeout(None)
    if kind != hook.MSG_JSON:
        return {}
    try:
        return json.loads(payload)
    except ValueError:
        return {}


def environment(address, token, welcome):
    """The job's environment on this node: the hook first on PYTHONPATH, and
    where the head is, over TCP."""
    env = dict(os.environ)
    caller = env.get("PBENCH_CALLER_PYTHONPATH")
    for name in ("PBENCH_CALLER_PYTHONPATH", "PBENCH_ENGINE_PROTOCOL"):
        env.pop(name, None)
    env["PYTHONPATH"] = STARTUP + (":" + caller if caller else "")
    env[nodes.ADDR_ENV] = address
    env[nodes.TOKEN_ENV] = token
    env[nodes.HOST_ENV] = str(welcome.get("host") or "")
    env[hook.SOCKET_ENV] = NO_SOCKET   # no relay on this node: TCP
    env[hook.RELAY_ENV] = str(os.getpid())
    env[hook.CONFIG_ENV] = json.dumps(welcome.get("config") or {})
    return env


def end_job(proc, grace_s):
    """As the head ends its own: SIGINT to the job, SIGTERM to all its
    processes (this pbench's descendants) grace_s later, SIGKILL
    KILL_WAIT_S after that; waits for them."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, KILL_WAIT_S),
                        (signal.SIGKILL, KILL_WAIT_S)):
        if proc.poll() is not None and not descendants(os.getpid(), live=True):
            return
        targets = [proc.pid] if sig == signal.SIGINT else \
            [proc.pid] + descendants(os.getpid(), live=True)
        for pid in targets:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            reap_orphans(proc.pid)
            if proc.poll() is not None and not descendants(os.getpid(), live=True):
                return
            time.sleep(0.05)


def status_text(code):
    if code is None:
        return "did not end"
    if code < 0:
        try:
            return "was killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with status %d" % code


def run(address, command):
    token = os.environ.get(nodes.TOKEN_ENV, "")
    if len(token) < MIN_TOKEN:
        say("%s holds %s: give every node the head's token (export %s=$(openssl rand -hex 16) "
            "before starting the head and the nodes; the head takes it from its environment)"
            % (nodes.TOKEN_ENV, "nothing" if not token else "a token shorter than %d characters"
               % MIN_TOKEN, nodes.TOKEN_ENV))
        return 2
    host = socket.gethostname()
    hello = {"type": "hello", "role": "node", "pid": os.getpid(), "host": host,
             "command": shlex.join(command)}
    try:
        sock = reach(address, token, hello)
        join = json.dumps({"type": "join"}).encode("utf-8")
        sock.sendall(hook.HEAD.pack(len(join) + 4, hook.MSG_JSON) + join)
    except OSError as e:
        say("cannot reach the head at %s within %.0f s: %s" % (address, JOIN_WAIT_S, e))
        return 2
    welcome = read_frame(sock, JOIN_WAIT_S)
    if not welcome or welcome.get("type") != "welcome":
        say("the head at %s %s" % (address, "refused this node (a wrong %s?)" % nodes.TOKEN_ENV
                                   if welcome is None else "sent no welcome"))
        return 2
    say("joined the head at %s (%s); running: %s" % (address, welcome.get("host"),
                                                    shlex.join(command)))
    become_subreaper()
    stopped = []
    signal.signal(signal.SIGTERM, lambda s, f: stopped.append(signal.Signals(s).name))
    signal.signal(signal.SIGINT, lambda s, f: stopped.append(signal.Signals(s).name))
    import subprocess
    try:
        proc = subprocess.Popen(command, env=environment(address, token, welcome))
    except OSError as e:
        say("%s cannot be started: %s" % (command[0], e))
        return 2
    ended = watch(sock, proc, stopped, float(welcome.get("grace_s", 10)))
    code = proc.returncode
    message = {"type": "node_end", "t": time.monotonic_ns(), "status": code,
               "ended": ended or ("the job %s by itself" % status_text(code))}
    payload = json.dumps(message).encode("utf-8")
    try:
        sock.sendall(hook.HEAD.pack(len(payload) + 4, hook.MSG_JSON) + payload)
    except OSError:
        pass
    sock.close()
    return code if code is not None and code >= 0 else 128 + (-code if code else 0)


def watch(sock, proc, stopped, grace_s):
    """Waits for the job's end; ends it on the head's stop, the head's
    connection gone, or this pbench's signal. How pbench ended it, or None."""
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    ended = None
    while proc.poll() is None:
        reap_orphans(proc.pid)
        if stopped:
            ended = "ended by this node's pbench on %s" % stopped[0]
        elif selector.select(0.2):
            frame = read_frame(sock, 5.0)
            if frame is None:
                ended = "ended: the head's connection closed"
            elif frame.get("type") == "stop":
                ended = "stopped by the head"
        if ended:
            end_job(proc, grace_s)
            break
    proc.wait()
    selector.close()
    return ended


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[1] != "--":
        say("usage: python3 -m pbench_wrap.join HOST:PORT -- COMMAND [ARGS...]")
        return 2
    return run(argv[0], argv[2:])


if __name__ == "__main__":
    sys.exit(main())
