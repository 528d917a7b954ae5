"""What the torch engine and the wrap hook share with pbench's C side
(engines/shared.json): their limits, ranges and retry backoff are the
description's values, read from it, not numbers of their own. The C side is
checked against the same file by tests/test_shared_limits.c."""
import importlib.util
import json
import os
import tempfile
import unittest


from pbench_torch import protocol, remote
from pbench_torch.errors import ConfigError

TORCH_SKIP = None if importlib.util.find_spec("torch") else "torch is not installed"


class SharedTest(unittest.TestCase):
    def setUp(self):
        with open(protocol.SHARED_DESCRIPTION) as f:
            self.described = json.load(f)

    def test_read_from_the_description(self):
        self.assertEqual(protocol.SHARED, self.described)

    def test_a_changed_copy_is_what_is_read(self):
        changed = dict(self.described, engine_max_columns=7)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(changed, f)
        try:
            self.assertEqual(protocol.shared_limits(f.name)["engine_max_columns"], 7)
        finally:
            os.unlink(f.name)

    def test_backoff_follows_the_description(self):
        rule = self.described["retry_backoff"]
        for retry in range(12):
            base = min(rule["first_ms"] * 2 ** retry, rule["cap_ms"]) / 1000.0
            for _ in range(20):
                pause = remote.backoff_s(retry)
                self.assertGreaterEqual(pause, base * rule["jitter_low"] - 1e-9)
                self.assertLessEqual(pause, base * rule["jitter_high"] + 1e-9)

    def test_requests_in_flight_range(self):
        span = self.described["requests_in_flight"]
        for value, ok in ((span["min"], True), (span["max"], True), (span["min"] - 1, False),
                          (span["max"] + 1, False)):
            options = {"path": "", "endpoint": "", "region": "", "profile": "",
                       "addressing": "auto", "request_timeout_s": 5, "retries": 3, "ca_file": "",
                       "requests_in_flight": value, "manifest": "manifest.txt", "list": "once"}
            if ok:
                self.assertEqual(remote.Options(options).requests_in_flight, value)
                continue
            with self.assertRaises(ConfigError) as caught:
                remote.Options(options)
            self.assertIn("%d to %d" % (span["min"], span["max"]), str(caught.exception))

    @unittest.skipIf(TORCH_SKIP, TORCH_SKIP)
    def test_columns(self):
        from pbench_torch import dataset
        from pbench_wrap import hook
        self.assertEqual(dataset.MAX_COLUMNS, self.described["engine_max_columns"])
        self.assertEqual(hook.MAX_COLUMNS, self.described["engine_max_columns"] - 2)


if __name__ == "__main__":
    unittest.main()
