"""What the torch engine and the wrap hook share with pbench's C side
(engines/shared.json, engines/engine_rules.json): their limits, ranges,
retry backoff and the option values the engine cannot run are the
descriptions' values, read from them, not copies of their own. The C side is
checked against the same files by tests/test_shared_limits.c and
tests/test_engine_rules.c."""
import importlib.util
import json
import os
import tempfile
import unittest


from pbench_torch import protocol, remote
from pbench_torch.errors import ConfigError

TORCH_SKIP = None if importlib.util.find_spec("torch") else "torch is not installed"
NUMPY_SKIP = None if importlib.util.find_spec("numpy") else "numpy is not installed"


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



@unittest.skipIf(NUMPY_SKIP, NUMPY_SKIP)  # pbench_torch.stages imports video, which needs it
class RulesTest(unittest.TestCase):
    """engines/engine_rules.json: the torch engine refuses what it says,
    read from it."""

    def setUp(self):
        with open(protocol.RULES_DESCRIPTION) as f:
            self.described = json.load(f)["torch"]

    def test_read_from_the_description(self):
        self.assertEqual(protocol.ENGINE_RULES, self.described)

    def refusal(self, rule, value, rules=None):
        """The ConfigError refuse_unrunnable raises for rule's option at value
        (its condition met), or None."""
        from pbench_torch import stages
        config = {}
        if rule["when"]:
            key, _, held = rule["when"].partition(": ")
            section, _, name = key.partition(".")
            config = {section: {name: held}}
        try:
            stages.refuse_unrunnable(rule["owner"], {rule["option"]: value}, "pipeline[1]",
                                     config, rules)
        except ConfigError as refused:
            return refused
        return None

    def test_each_rule_refuses_what_it_does_not_allow(self):
        for rule in self.described:  # each alone: two may hold for one option
            for value in rule["allowed"]:
                self.assertIsNone(self.refusal(rule, value, [rule]), rule)
            refused = self.refusal(rule, "not-" + rule["allowed"][0], [rule])
            self.assertIsNotNone(refused, rule)
            self.assertEqual(refused.option, "pipeline[1].%s" % rule["option"])
            self.assertIn(rule["why"], refused.message)

    def test_booleans_and_numbers_as_pbench_formats_them(self):
        by_option = {(r["owner"], r["option"]): r for r in self.described}
        self.assertIsNone(self.refusal(by_option[("jpeg", "fast_upsample")], False))
        self.assertIsNotNone(self.refusal(by_option[("jpeg", "fast_upsample")], True))
        self.assertIsNone(self.refusal(by_option[("video", "clips_per_visit")], 1))
        self.assertIsNotNone(self.refusal(by_option[("video", "clips_per_visit")], 4))

    def test_a_changed_copy_is_what_is_applied(self):
        """A rule changed in the description (a scratch copy) changes what
        the engine refuses: it has no rules of its own."""
        with open(protocol.RULES_DESCRIPTION) as f:
            changed = json.load(f)
        dct = next(r for r in changed["torch"] if r["option"] == "dct")
        self.assertIsNone(self.refusal(dct, "accurate"))
        dct["allowed"] = ["fast"]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(changed, f)
        try:
            rules = protocol.engine_rules(f.name)
        finally:
            os.unlink(f.name)
        self.assertNotEqual(rules, self.described)
        refused = self.refusal(dct, "accurate", rules)
        self.assertIsNotNone(refused)
        self.assertEqual(refused.option, "pipeline[1].dct")


if __name__ == "__main__":
    unittest.main()
