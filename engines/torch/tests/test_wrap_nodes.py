"""pbench wrap's TCP side (pbench_wrap.nodes), without torch: the address
forms --listen takes, which launchers turn TCP on by default, a hook's
connection with the token and its clock measured against the relay's, a
connection without the token or with a malformed frame refused, another
node's times placed by its offset and its pids kept apart from this one's."""
import json
import os
import socket
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pbench_wrap import nodes  # noqa: E402  (after the path)


class FakeJob:
    def __init__(self, here):
        self.pids = nodes.Pids(here)

    def node_pid(self, host, pid):
        return self.pids.of(host, pid)


def frames(sock):
    """Yields (kind, payload) from sock until it closes."""
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 8:
            length, kind = nodes.HEAD.unpack_from(buf)
            if len(buf) < 4 + length:
                break
            yield kind, buf[8:4 + length]
            buf = buf[4 + length:]


class AddressTest(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(nodes.split_address("10.77.0.1"), ("10.77.0.1", 0))
        self.assertEqual(nodes.split_address("10.77.0.1:4500"), ("10.77.0.1", 4500))
        self.assertEqual(nodes.split_address("[fd00::1]:80"), ("fd00::1", 80))
        self.assertEqual(nodes.split_address("fd00::1"), ("fd00::1", 0))
        for bad in ("10.0.0.1:x", ":80", ""):
            with self.assertRaises(ValueError):
                nodes.split_address(bad)

    def test_launchers_that_turn_tcp_on(self):
        self.assertIn("srun", nodes.multi_node(["srun", "-N", "2", "python3", "t.py"], {}))
        self.assertIn("mpirun", nodes.multi_node(["/usr/bin/mpirun", "-np", "4", "x"], {}))
        self.assertIn("--nnodes 2", nodes.multi_node(["torchrun", "--nnodes", "2", "t.py"], {}))
        self.assertIn("SLURM_JOB_NUM_NODES",
                      nodes.multi_node(["python3", "t.py"], {"SLURM_JOB_NUM_NODES": "4"}))
        for argv in (["python3", "t.py"], ["torchrun", "--nnodes=1", "t.py"],
                     ["python3", "t.py", "--nnodes", "2"]):  # the script's own option
            self.assertIsNone(nodes.multi_node(argv, {"SLURM_JOB_NUM_NODES": "1"}), argv)

    def test_never_all_interfaces_unless_asked(self):
        listener = nodes.Listener("127.0.0.1", "t")
        try:
            self.assertTrue(listener.address.startswith("127.0.0.1:"))
            self.assertNotEqual(listener.address, "127.0.0.1:0")
        finally:
            listener.close()


class LinkTest(unittest.TestCase):
    def relay_side(self, hello_token, offset=None):
        """A hook's connection to a listener, read through a Peer: what the
        relay's job would be given, and what was refused."""
        listener = nodes.Listener("127.0.0.1:0", "secret")
        clocks = {} if offset is None else {"node2": [offset, 10, offset]}
        given, refused = [], []
        job = FakeJob("head")
        hello = {"type": "hello", "pid": 7, "host": "node2", "rank": {"rank": 1}}

        def hook_side():
            try:
                sock = nodes.connect(listener.address, hello_token, hello)
            except OSError as e:
                refused.append(str(e))
                return
            batch = nodes.BATCH.pack(7, 1, 0, 5000, 6000, 8)
            sock.sendall(nodes.HEAD.pack(len(batch) + 4, nodes.MSG_BATCH) + batch)
            sock.close()
        thread = threading.Thread(target=hook_side)
        thread.start()
        listener.sock.setblocking(True)
        conn, where = listener.sock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = nodes.Peer(conn, "%s:%d" % where, "secret", clocks, "head")
        try:
            for kind, payload in frames(conn):
                message = peer.admit(kind, payload, job)
                if message is not None:
                    given.append((kind, message))
        except nodes.Refused as e:
            refused.append(str(e))
        conn.close()
        thread.join()
        listener.close()
        return given, refused, clocks

    def test_with_the_token(self):
        given, refused, clocks = self.relay_side("secret")
        self.assertEqual(refused, [])
        hello = given[0][1]
        self.assertEqual((hello["type"], hello["host"], hello["pid"]), ("hello", "node2", 7))
        self.assertNotIn("token", hello)
        # One machine shares one clock: the offset is within the residual, not applied
        offset, residual, measured = clocks["node2"]
        self.assertEqual(offset, 0)
        self.assertLessEqual(abs(measured), residual)
        fields = nodes.BATCH.unpack(given[1][1])
        self.assertEqual(fields[3:5], (5000, 6000))

    def test_without_it(self):
        given, refused, _ = self.relay_side("wrong")
        self.assertEqual(given, [])
        self.assertIn("a wrong token", refused)

    def test_times_placed_by_the_offset(self):
        given, refused, _ = self.relay_side("secret", offset=1000)
        self.assertEqual(refused, [])
        self.assertEqual(nodes.BATCH.unpack(given[1][1])[3:5], (4000, 5000))

    def test_malformed_frames(self):
        peer = nodes.Peer(None, "x:1", "secret", {}, "head")
        job = FakeJob("head")
        with self.assertRaises(nodes.Refused):
            peer.admit(nodes.MSG_BATCH, b"\0" * 8, job)  # no hello first
        with self.assertRaises(nodes.Refused):
            peer.admit(nodes.MSG_JSON, b"not json", job)
        hello = json.dumps({"type": "hello", "token": "secret", "host": "n", "pid": 1})
        peer.admit(nodes.MSG_JSON, hello.encode(), job)
        with self.assertRaises(nodes.Refused):
            peer.admit(nodes.MSG_BATCH, b"\0" * 8, job)  # short
        with self.assertRaises(nodes.Refused):
            peer.admit(99, b"", job)


class PidsTest(unittest.TestCase):
    def test_another_nodes_pid_kept_apart(self):
        pids = nodes.Pids("head")
        self.assertEqual(pids.of("head", 100), 100)
        self.assertEqual(pids.of("node1", 200), 200)
        other = pids.of("node2", 200)
        self.assertGreaterEqual(other, nodes.SYNTHETIC_PID)
        self.assertEqual(pids.of("node2", 200), other)
        self.assertGreaterEqual(pids.of("node1", 100), nodes.SYNTHETIC_PID)


if __name__ == "__main__":
    unittest.main()
