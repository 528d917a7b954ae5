"""Reading from object storage (pbench_torch.remote), against real servers
on loopback: s3rver, and the tests' own HTTP(S) server with faults (503
SlowDown, resets, slow and truncated answers) and a self-signed
certificate; then the engine end to end on a bucket."""
import importlib.util
import os
import shutil
import tempfile
import unittest

import driver
import objstore

S3RVER, S3RVER_SKIP = objstore.find_s3rver()
BUCKET = "pbench"
SECRET = "pbench-test-secret-never-shown"

BOTO3_SKIP = (None if importlib.util.find_spec("boto3") else
              "boto3 is not installed: apt-get install python3-boto3")

from pbench_torch import remote  # noqa: E402
from pbench_torch.errors import ConfigError, SampleError  # noqa: E402
from pbench_torch.index import Entry  # noqa: E402

OBJECTS = {"img%04d.jpg" % i: bytes([i]) * (1000 + 37 * i) for i in range(8)}


def dataset_options(**changes):
    """The dataset section's object-storage options, as pbench sends them."""
    options = {"path": "", "endpoint": "", "region": "", "profile": "", "addressing": "auto",
               "request_timeout_s": 5, "retries": 3, "ca_file": "", "requests_in_flight": 1,
               "manifest": "manifest.txt", "list": "once"}
    options.update(changes)
    return options


MADE = []


def make_remote(**changes):
    """A Remote with the options changed, closed by close_remotes."""
    made = remote.Remote(remote.Options(dataset_options(**changes)))
    MADE.append(made)
    return made


def close_remotes():
    while MADE:
        MADE.pop().close()


def entry(url, offset=-1, size=0):
    return Entry(offset, size, "", url.encode())


class Environment:
    """os.environ with the given keys set (None: removed), undone on exit."""

    def __init__(self, **values):
        self.values = values
        self.saved = {}

    def __enter__(self):
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        return self

    def __exit__(self, *exc):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


S3_ENV = {"AWS_ACCESS_KEY_ID": objstore.S3RVER_KEY, "AWS_SECRET_ACCESS_KEY": objstore.S3RVER_KEY,
          "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None, "AWS_REGION": None,
          "AWS_DEFAULT_REGION": None}


class HttpTest(unittest.TestCase):
    """http(s):// objects from the tests' own server."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="pbench-remote-")
        cls.objects = {"/data/" + name: body for name, body in OBJECTS.items()}
        cls.server = objstore.FaultServer(cls.objects)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.folder)

    def setUp(self):
        self.server.faults = []

    def tearDown(self):
        close_remotes()

    def url(self, name, server=None):
        return "%s/data/%s" % ((server or self.server).url, name)

    def test_reads_objects_and_keeps_the_connection(self):
        reader = make_remote()
        first, log = reader.fetch(self.url("img0001.jpg"))
        self.assertEqual(first, OBJECTS["img0001.jpg"])
        self.assertEqual(log.counts["requests"], 1)
        self.assertEqual(log.counts["reused_connections"], 0)
        self.assertGreater(log.wall_ns[remote.SPANS.index("connect")], 0)
        self.assertGreater(log.wall_ns[remote.SPANS.index("ttfb")], 0)
        self.assertGreater(log.wall_ns[remote.SPANS.index("transfer")], 0)
        second, log = reader.fetch(self.url("img0002.jpg"))
        self.assertEqual(second, OBJECTS["img0002.jpg"])
        self.assertEqual(log.counts["reused_connections"], 1)
        self.assertEqual(log.wall_ns[remote.SPANS.index("connect")], 0)

    def test_a_range_reads_a_tar_member(self):
        data, _ = make_remote().fetch(self.url("img0007.jpg"), 100, 50)
        self.assertEqual(data, OBJECTS["img0007.jpg"][100:150])

    def test_a_missing_object_is_a_bad_sample(self):
        with self.assertRaises(SampleError) as caught:
            make_remote().fetch(self.url("nothing.jpg"))
        self.assertIn("no such object (404", str(caught.exception))
        self.assertEqual(caught.exception.log.counts["failed"], 1)
        self.assertEqual(caught.exception.log.counts["retries"], 0)

    def test_503_and_500_are_retried_and_counted(self):
        self.server.faults = ["503", "500"]
        data, log = make_remote().fetch(self.url("img0003.jpg"))
        self.assertEqual(data, OBJECTS["img0003.jpg"])
        self.assertEqual((log.counts["requests"], log.counts["retries"],
                          log.counts["retry_503"], log.counts["retry_5xx"]), (3, 2, 1, 1))

    def test_resets_and_truncated_bodies_are_retried(self):
        self.server.faults = ["reset", "truncate"]
        data, log = make_remote().fetch(self.url("img0004.jpg"))
        self.assertEqual(data, OBJECTS["img0004.jpg"])
        self.assertEqual(log.counts["retry_reset"], 2)

    def test_a_slow_answer_times_out_and_is_retried(self):
        self.server.faults = ["slow"]
        self.server.slow_s = 1.0
        data, log = make_remote(request_timeout_s=0.3).fetch(self.url("img0005.jpg"))
        self.assertEqual(data, OBJECTS["img0005.jpg"])
        self.assertEqual(log.counts["retry_timeout"], 1)

    def test_retries_run_out(self):
        self.server.faults = ["503"] * 3
        with self.assertRaises(SampleError) as caught:
            make_remote(retries=2).fetch(self.url("img0001.jpg"))
        self.assertIn("gave up after 3 attempts (503", str(caught.exception))
        log = caught.exception.log
        self.assertEqual((log.counts["requests"], log.counts["retries"], log.counts["failed"]),
                         (3, 2, 1))

    def test_requests_in_flight_prefetch_a_batch(self):
        reader = make_remote(requests_in_flight=4)
        entries = [entry(self.url(name)) for name in sorted(OBJECTS)]
        reader.prefetch(entries)
        for item, name in zip(entries, sorted(OBJECTS)):
            data, log = reader.take(item)
            self.assertEqual(data, OBJECTS[name])
        self.assertEqual(reader._ahead, {})

    def test_https_with_a_self_signed_certificate(self):
        cert, key = objstore.self_signed(self.folder)
        server = objstore.FaultServer(self.objects, certificate=(cert, key))
        try:
            url = self.url("img0006.jpg", server)
            with self.assertRaises(SampleError) as caught:
                make_remote().fetch(url)
            self.assertIn("TLS", str(caught.exception))
            self.assertIn("dataset.ca_file", str(caught.exception))
            with self.assertRaises(ConfigError) as refused:
                make_remote().check(url)
            self.assertEqual(refused.exception.option, "dataset.ca_file")
            data, _ = make_remote(ca_file=cert).fetch(url)
            self.assertEqual(data, OBJECTS["img0006.jpg"])
            make_remote(ca_file=cert).check(url)
        finally:
            server.stop()

    def test_a_closed_port_is_a_config_error_at_open(self):
        server = objstore.FaultServer({})
        url = self.url("img0000.jpg", server)
        server.stop()
        with self.assertRaises(ConfigError) as caught:
            make_remote().check(url)
        self.assertIn("cannot connect", caught.exception.message)


@unittest.skipIf(S3RVER is None, S3RVER_SKIP)
@unittest.skipIf(BOTO3_SKIP is not None, BOTO3_SKIP)
@unittest.skipIf(BOTO3_SKIP, BOTO3_SKIP)
class S3KeyTest(unittest.TestCase):
    """s3:// keys against the tests' own server as the endpoint: sent as
    they are, dot segments and all."""

    def test_dot_segments_fetch_their_own_object(self):
        server = objstore.FaultServer({"/dotdot/a/%2E%2E/%2E%2E/ok/img/000.jpg": b"right",
                                       "/ok/img/000.jpg": b"wrong"})
        try:
            with Environment(**dict(S3_ENV, AWS_ACCESS_KEY_ID="AKID",
                                    AWS_SECRET_ACCESS_KEY=SECRET)):
                reader = make_remote(endpoint=server.url)
                data, _ = reader.fetch("s3://dotdot/a/../../ok/img/000.jpg")
            self.assertEqual(data, b"right")
        finally:
            close_remotes()
            server.stop()


class S3Test(unittest.TestCase):
    """s3:// objects in s3rver, with its credentials in the environment."""

    @classmethod
    def setUpClass(cls):
        cls.s3rver = objstore.S3rver(S3RVER, BUCKET)
        cls.environment = Environment(**S3_ENV)
        cls.environment.__enter__()
        client = cls.s3rver.client()
        for name, body in OBJECTS.items():
            client.put_object(Bucket=BUCKET, Key="img/" + name, Body=body)
        client.close()
        cls.folder = tempfile.mkdtemp(prefix="pbench-remote-")

    @classmethod
    def tearDownClass(cls):
        cls.environment.__exit__()
        cls.s3rver.stop()
        shutil.rmtree(cls.folder)

    def tearDown(self):
        close_remotes()

    def s3(self, **changes):
        return make_remote(**dict({"endpoint": self.s3rver.endpoint}, **changes))

    def test_reads_objects(self):
        reader = self.s3()
        connect = []
        for name in ("img0000.jpg", "img0005.jpg"):
            data, log = reader.fetch("s3://%s/img/%s" % (BUCKET, name))
            self.assertEqual(data, OBJECTS[name])
            self.assertEqual(log.counts["requests"], 1)
            self.assertGreater(log.wall_ns[remote.SPANS.index("ttfb")], 0)
            connect.append(log.wall_ns[remote.SPANS.index("connect")])
        self.assertGreater(connect[0], 0)
        self.assertEqual(connect[1], 0)
        self.assertEqual(log.counts["reused_connections"], 1)
        self.assertEqual(reader.source, "environment")
        reader.check("s3://%s/img/img0000.jpg" % BUCKET)

    def test_a_range_reads_a_tar_member(self):
        data, _ = self.s3().fetch("s3://%s/img/img0006.jpg" % BUCKET, 10, 20)
        self.assertEqual(data, OBJECTS["img0006.jpg"][10:30])

    def test_a_missing_object_is_a_bad_sample(self):
        with self.assertRaises(SampleError) as caught:
            self.s3().fetch("s3://%s/img/none.jpg" % BUCKET)
        self.assertIn("no such object (404 NoSuchKey)", str(caught.exception))
        self.assertEqual(caught.exception.log.counts["retries"], 0)

    def test_a_missing_bucket_is_named(self):
        url = "s3://no-such-bucket/img/img0000.jpg"
        with self.assertRaises(SampleError) as caught:
            self.s3().fetch(url)
        self.assertIn("the bucket 'no-such-bucket' does not exist at %s" % self.s3rver.endpoint,
                      str(caught.exception))
        with self.assertRaises(ConfigError) as refused:
            self.s3().check(url)
        self.assertEqual(refused.exception.option, "dataset.path")
        self.assertIn("no-such-bucket", refused.exception.message)

    def test_a_wrong_key_names_its_source_not_the_secret(self):
        url = "s3://%s/img/img0000.jpg" % BUCKET
        with Environment(AWS_ACCESS_KEY_ID="PBENCHWRONGKEY", AWS_SECRET_ACCESS_KEY=SECRET):
            with self.assertRaises(SampleError) as caught:
                self.s3().fetch(url)
            with self.assertRaises(ConfigError) as refused:
                self.s3().check(url)
        said = str(caught.exception)
        self.assertIn("access denied (403 InvalidAccessKeyId) with the credentials from "
                      "environment", said)
        self.assertEqual(refused.exception.option, "dataset.profile")
        for text in (said, refused.exception.message):
            self.assertNotIn(SECRET, text)
            self.assertNotIn("PBENCHWRONGKEY", text)

    def test_a_profile_in_a_credentials_file(self):
        path = os.path.join(self.folder, "credentials")
        with open(path, "w") as f:
            f.write("[store]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n")
        with Environment(AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None,
                         AWS_SHARED_CREDENTIALS_FILE=path, AWS_CONFIG_FILE=path + ".none"):
            reader = self.s3(profile="store")
            data, _ = reader.fetch("s3://%s/img/img0001.jpg" % BUCKET)
            self.assertEqual(reader.source, "%s [store]" % path)
            with self.assertRaises(ConfigError) as caught:
                self.s3(profile="absent").fetch("s3://%s/img/img0001.jpg" % BUCKET)
        self.assertEqual(data, OBJECTS["img0001.jpg"])
        self.assertEqual(caught.exception.option, "dataset.profile")

    def test_slow_down_is_retried_and_counted(self):
        proxy = objstore.FaultServer(upstream=("127.0.0.1", self.s3rver.port))
        proxy.faults = ["503", "reset"]
        try:
            data, log = self.s3(endpoint=proxy.url).fetch("s3://%s/img/img0002.jpg" % BUCKET)
        finally:
            proxy.stop()
        self.assertEqual(data, OBJECTS["img0002.jpg"])
        self.assertEqual((log.counts["requests"], log.counts["retries"],
                          log.counts["retry_503"], log.counts["retry_reset"]), (3, 2, 1, 1))

    def test_requests_in_flight_prefetch_a_batch(self):
        reader = self.s3(requests_in_flight=8)
        entries = [entry("s3://%s/img/%s" % (BUCKET, name)) for name in sorted(OBJECTS)]
        reader.prefetch(entries)
        got = [reader.take(item)[0] for item in entries]
        self.assertEqual(got, [OBJECTS[name] for name in sorted(OBJECTS)])


@unittest.skipIf(S3RVER is None, S3RVER_SKIP)
@unittest.skipIf(BOTO3_SKIP is not None, BOTO3_SKIP)
@unittest.skipIf(not driver.torch_available(), driver.SKIP_REASON)
class EngineOnS3Test(unittest.TestCase):
    """The engine over the protocol, its index of s3:// URLs."""

    @classmethod
    def setUpClass(cls):
        cls.s3rver = objstore.S3rver(S3RVER, BUCKET)
        cls.environment = Environment(**S3_ENV)
        cls.environment.__enter__()
        cls.folder = tempfile.mkdtemp(prefix="pbench-torch-s3-")
        paths = driver.make_jpegs(os.path.join(cls.folder, "img"), 12)
        client = cls.s3rver.client()
        records = []
        for path in sorted(paths):
            key = "img/" + os.path.basename(path)
            with open(path, "rb") as f:
                client.put_object(Bucket=BUCKET, Key=key, Body=f.read())
            records.append((-1, os.path.getsize(path), "", "s3://%s/%s" % (BUCKET, key)))
        client.close()
        cls.records = records
        cls.index = driver.write_index(os.path.join(cls.folder, "index"), records)

    @classmethod
    def tearDownClass(cls):
        cls.environment.__exit__()
        cls.s3rver.stop()
        shutil.rmtree(cls.folder)

    def config(self, **changes):
        config = driver.image_config(**{"dataset.epochs": 1, "loader.workers": 2})
        config["dataset"].update(dataset_options(path="s3://%s/img/" % BUCKET,
                                                 endpoint=self.s3rver.endpoint))
        for key, value in changes.items():
            config["dataset"][key] = value
        return config

    def run_epoch(self, config, index=None):
        engine = driver.Engine()
        ready = engine.open(config, index or self.index)
        if ready["type"] != "ready":
            engine.close()
            return ready, []
        frames = engine.repeat(0)
        self.assertEqual(engine.close(), 0, engine.stderr_tail())
        return ready, frames

    def test_reads_the_bucket_with_sub_rows_and_counters(self):
        ready, frames = self.run_epoch(self.config(requests_in_flight=4))
        names = [s["name"] for s in ready["stages"]]
        self.assertEqual(names[:4], ["read", "read.connect", "read.ttfb", "read.transfer"])
        self.assertEqual([s["parent"] for s in ready["stages"][1:4]], ["read"] * 3)
        counters = [(c["stage"], c["name"]) for c in ready["counters"]]
        self.assertEqual(counters[:len(remote.COUNTERS)],
                         [("read", name) for name in remote.COUNTERS])
        batches = [f for f in frames if f["type"] == "batch"]
        self.assertEqual(sum(b["samples"] for b in batches), 12)
        self.assertEqual(frames[-1]["reason"], "data_end")
        columns = len(ready["stages"])
        requests = sum(row[1 + 3 * columns] for b in batches for row in b["rows"])
        self.assertEqual(requests, 12)
        ttfb = [row[1 + 3 * 2 + 1] - row[1 + 3 * 2] for b in batches for row in b["rows"]]
        self.assertTrue(all(t > 0 for t in ttfb), ttfb)

    def test_a_missing_object_is_a_counted_bad_sample(self):
        records = self.records + [(-1, 100, "", "s3://%s/img/gone.jpg" % BUCKET)]
        index = driver.write_index(os.path.join(self.folder, "index-gone"), records)
        _, frames = self.run_epoch(self.config(), index)
        errors = [f for f in frames if f["type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["file"], "s3://%s/img/gone.jpg" % BUCKET)
        self.assertIn("no such object (404 NoSuchKey)", errors[0]["message"])

    def test_a_missing_bucket_is_a_config_error_at_open(self):
        records = [(-1, 100, "", "s3://absent-bucket/img/a.jpg")]
        index = driver.write_index(os.path.join(self.folder, "index-absent"), records)
        ready, _ = self.run_epoch(self.config(path="s3://absent-bucket/img/"), index)
        self.assertEqual((ready["type"], ready["kind"], ready["option"]),
                         ("fatal", "config", "dataset.path"))
        self.assertIn("the bucket 'absent-bucket' does not exist", ready["message"])


if __name__ == "__main__":
    unittest.main()
