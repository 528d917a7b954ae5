"""The engine end to end over the real protocol: a subprocess fed
commands on stdin, its frames read from fd 3, on tiny generated JPEGs."""
import os
import shutil
import tempfile
import unittest

import driver

torch = driver.torch_available() or None


def batches(frames):
    return [f for f in frames if f["type"] == "batch"]


@unittest.skipIf(torch is None, driver.SKIP_REASON)
class EngineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="pbench-torch-")
        cls.paths = driver.make_jpegs(os.path.join(cls.folder, "img"), 12)
        cls.index = driver.write_index(os.path.join(cls.folder, "index"),
                                       driver.file_records(cls.paths))
        bad = driver.make_corrupt_jpeg(os.path.join(cls.folder, "img", "img0005x.jpg"))
        cls.bad_index = driver.write_index(os.path.join(cls.folder, "bad-index"),
                                           driver.file_records(cls.paths + [bad]))
        cls.bad = bad

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def run_point(self, config, index=None, repeats=1, stop_after=None, stage_timing=True):
        """Opens, runs repeats, closes: (ready, [frames of each repeat])."""
        engine = driver.Engine()
        ready = engine.open(config, self.index if index is None else index,
                            stage_timing=stage_timing)
        self.assertEqual(ready["type"], "ready", ready)
        runs = [engine.repeat(r, stage_timing=stage_timing, stop_after=stop_after)
                for r in range(repeats)]
        self.assertEqual(engine.close(), 0, engine.stderr_tail())
        return ready, runs

    def test_ready_names_pbench_rows(self):
        ready, _ = self.run_point(driver.image_config(**{"dataset.epochs": 1}))
        self.assertEqual(ready["protocol"], 1)
        self.assertEqual(ready["engine"], "torch")
        self.assertEqual([s["name"] for s in ready["stages"]],
                         ["read", "decode", "random_resized_crop", "flip", "normalize",
                          "collate"])
        self.assertEqual(ready["samples"], 12)
        self.assertEqual([(c["stage"], c["name"]) for c in ready["counters"]],
                         [("decode", "scaled"), ("decode", "progressive"),
                          ("decode", "grayscale"), ("decode", "cmyk")])
        self.assertTrue(ready["versions"]["torch"])

    def test_one_epoch_ends_with_data_end_and_seq_counts_up(self):
        config = driver.image_config(**{"dataset.epochs": 1, "loader.workers": 2})
        ready, (frames,) = self.run_point(config)
        self.assertEqual(frames[0]["type"], "workers")
        self.assertEqual(len(frames[0]["pids"]), 2)
        got = batches(frames)
        self.assertEqual([b["seq"] for b in got], [0, 1, 2])
        self.assertEqual(sum(b["samples"] for b in got), 12)
        self.assertEqual(frames[-1], {"type": "repeat_end", "repeat": 0, "reason": "data_end"})
        for b in got:
            self.assertLessEqual(frames[0]["t_start_ns"], b["t_first_ns"])
            self.assertLessEqual(b["t_first_ns"], b["t_ready_ns"])
            self.assertLessEqual(b["t_wait_ns"], b["t_taken_ns"])
            self.assertLessEqual(b["t_taken_ns"], b["t_done_ns"])
            self.assertIn(b["worker"], (0, 1))
            self.assertEqual(b["records"], b["samples"])
            self.assertGreater(b["bytes"], 0)
        indices = sorted(row[0] for b in got for row in b["rows"])
        self.assertEqual(indices, list(range(12)))

    def test_records_fill_every_stage_and_collate_once(self):
        config = driver.image_config(**{"dataset.epochs": 1})
        ready, (frames,) = self.run_point(config)
        columns = len(ready["stages"])
        for b in batches(frames):
            for k, row in enumerate(b["rows"]):
                spans = [row[1 + 3 * c:4 + 3 * c] for c in range(columns)]
                for start, end, cpu in spans[:-1]:
                    self.assertGreater(start, 0)
                    self.assertGreaterEqual(end, start)
                    self.assertGreaterEqual(cpu, 0)
                self.assertEqual(spans[-1][0] > 0, k == 0)  # collate: the first record only
                starts = [s[0] for s in spans[:-1]]
                self.assertEqual(starts, sorted(starts))  # stages in order

    def test_stop_ends_the_repeat_with_stopped(self):
        config = driver.image_config(**{"dataset.epochs": 0, "run.step_ms": 1})
        _, (frames,) = self.run_point(config, stop_after=5)
        got = batches(frames)
        # the engine runs ahead of a slow reader: the batches it made before
        # the stop reached it are sent, then the repeat ends
        self.assertGreaterEqual(len(got), 5)
        self.assertGreater(got[0]["step_ns"], 500000)
        self.assertEqual(frames[-1]["reason"], "stopped")
        # epochs 0 goes on past one epoch of 3 batches, seq counting on
        self.assertEqual([b["seq"] for b in got], list(range(len(got))))

    def test_a_stop_that_has_arrived_costs_at_most_one_batch(self):
        # the stop is on the engine's stdin before its first batch is done:
        # the engine polls after each batch, so exactly one batch is sent
        config = driver.image_config(**{"dataset.epochs": 0, "run.step_ms": 1})
        _, (frames,) = self.run_point(config, stop_after=0)
        self.assertEqual(len(batches(frames)), 1)
        self.assertEqual(frames[-1]["reason"], "stopped")

    def test_repeats_and_warmup_batches_are_all_sent(self):
        config = driver.image_config(**{"dataset.epochs": 2, "dataset.shuffle": True,
                                        "run.warmup_batches": 2})
        _, runs = self.run_point(config, repeats=2)
        orders = []
        for r, frames in enumerate(runs):
            got = batches(frames)
            self.assertEqual(len(got), 6)  # warm-up included: pbench tells them apart
            self.assertEqual(frames[0]["repeat"], r)
            self.assertEqual(frames[-1], {"type": "repeat_end", "repeat": r,
                                          "reason": "data_end"})
            orders.append([row[0] for b in got for row in b["rows"]])
        self.assertNotEqual(orders[0], orders[1])  # seed + repeat

    def test_max_samples_caps_the_repeat(self):
        config = driver.image_config(**{"dataset.epochs": 0, "dataset.max_samples": 6})
        _, (frames,) = self.run_point(config)
        self.assertEqual(sum(b["samples"] for b in batches(frames)), 6)
        self.assertEqual(frames[-1]["reason"], "data_end")

    def test_shard_1_of_2_takes_odd_indices(self):
        config = driver.image_config(**{"dataset.epochs": 1, "dataset.shard": "1/2"})
        ready, (frames,) = self.run_point(config)
        self.assertEqual(ready["samples"], 6)
        indices = sorted(row[0] for b in batches(frames) for row in b["rows"])
        self.assertEqual(indices, [1, 3, 5, 7, 9, 11])

    def test_bad_sample_is_reported_and_dropped(self):
        config = driver.image_config(**{"dataset.epochs": 1, "loader.workers": 1})
        _, (frames,) = self.run_point(config, index=self.bad_index)
        errors = [f for f in frames if f["type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["file"], self.bad)
        self.assertEqual(errors[0]["index"], 6)  # sorted: after img0005.jpg
        self.assertTrue(errors[0]["message"])
        got = batches(frames)
        position = frames.index(errors[0])
        self.assertEqual(frames[position + 1]["type"], "batch")  # before its batch
        self.assertEqual(frames[position + 1]["errors"], 1)
        self.assertEqual(sum(b["samples"] for b in got), 12)
        self.assertNotIn(6, [row[0] for b in got for row in b["rows"]])

    def test_on_error_fail_is_fatal_data(self):
        config = driver.image_config(**{"dataset.epochs": 1, "run.on_error": "fail"})
        engine = driver.Engine()
        self.assertEqual(engine.open(config, self.bad_index)["type"], "ready")
        frames = engine.repeat(0)
        self.assertEqual(frames[-1]["type"], "fatal")
        self.assertEqual(frames[-1]["kind"], "data")
        self.assertIn(self.bad, frames[-1]["message"])
        self.assertEqual(engine.wait(), 1)

    def test_without_stage_timing_no_records(self):
        config = driver.image_config(**{"dataset.epochs": 1})
        _, (frames,) = self.run_point(config, stage_timing=False)
        for b in batches(frames):
            self.assertEqual((b["columns"], b["records"], b["counters"]), (0, 0, 0))
            self.assertEqual(b["rows"], [])
            self.assertGreater(b["samples"], 0)
            self.assertGreater(b["t_first_ns"], 0)

    def test_stage_timing_switches_per_repeat_with_persistent_workers(self):
        config = driver.image_config(**{"dataset.epochs": 1, "loader.workers": 1,
                                        "loader.persistent_workers": True})
        engine = driver.Engine()
        engine.open(config, self.index)
        timed = batches(engine.repeat(0, stage_timing=True))
        bare = batches(engine.repeat(1, stage_timing=False))
        self.assertEqual(engine.close(), 0)
        self.assertTrue(all(b["records"] > 0 for b in timed))
        self.assertTrue(all(b["records"] == 0 for b in bare))

    def test_tar_members_read_at_their_offset(self):
        records = driver.make_tar(os.path.join(self.folder, "shard.tar"), self.paths[:5])
        index = driver.write_index(os.path.join(self.folder, "tar-index"), records)
        config = driver.image_config(**{"dataset.epochs": 1, "dataset.format": "tar"})
        _, (frames,) = self.run_point(config, index=index)
        self.assertEqual([f for f in frames if f["type"] == "error"], [])
        self.assertEqual(sum(b["samples"] for b in batches(frames)), 5)
        self.assertEqual(sum(b["bytes"] for b in batches(frames)), sum(r[1] for r in records))

    def test_torchvision_decode_and_scale_auto(self):
        config = driver.image_config(**{"dataset.epochs": 1, "loader.torch_decode": "torchvision"})
        config["pipeline"][1]["decode"]["exif_orientation"] = False
        _, (frames,) = self.run_point(config)
        self.assertEqual(sum(b["samples"] for b in batches(frames)), 12)
        config = driver.image_config(**{"dataset.epochs": 1})
        config["pipeline"][1]["decode"]["scale"] = "auto"
        _, (frames,) = self.run_point(config)
        self.assertEqual(sum(b["samples"] for b in batches(frames)), 12)

    def test_stage_cpu_is_positive_and_below_the_workers_cpu(self):
        config = driver.image_config(**{"dataset.epochs": 3, "loader.workers": 1,
                                        "loader.persistent_workers": True})
        engine = driver.Engine()
        engine.open(config, self.index)
        frames = engine.repeat(0)
        pid = frames[0]["pids"][0]
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        worker_cpu_ns = (int(fields[11]) + int(fields[12])) * 10 ** 9 // os.sysconf("SC_CLK_TCK")
        self.assertEqual(engine.close(), 0)
        stage_cpu_ns = sum(row[3 + 3 * c] for b in batches(frames) for row in b["rows"]
                           for c in range(6))
        self.assertGreater(stage_cpu_ns, 0)
        # /proc counts in clock ticks: allow one tick of rounding
        self.assertLess(stage_cpu_ns, worker_cpu_ns + 10 ** 9 // os.sysconf("SC_CLK_TCK"))


@unittest.skipIf(torch is None, driver.SKIP_REASON)
class ConfigErrorTest(unittest.TestCase):
    def fatal(self, config):
        engine = driver.Engine()
        frame = engine.open(config, "")
        self.assertEqual(engine.wait(), 2)
        self.assertEqual(frame["type"], "fatal")
        self.assertEqual(frame["kind"], "config")
        return frame

    def decode_with(self, **options):
        config = driver.image_config()
        config["pipeline"][1]["decode"].update(options)
        return config

    def test_scale_window(self):
        frame = self.fatal(self.decode_with(scale="window"))
        self.assertEqual(frame["option"], "pipeline[1].scale")
        self.assertIn("window", frame["message"])

    def test_fixed_scale_dct_fast_and_fast_upsample(self):
        self.assertEqual(self.fatal(self.decode_with(scale="1/2"))["option"],
                         "pipeline[1].scale")
        self.assertEqual(self.fatal(self.decode_with(dct="fast"))["option"], "pipeline[1].dct")
        self.assertEqual(self.fatal(self.decode_with(fast_upsample=True))["option"],
                         "pipeline[1].fast_upsample")

    def test_null_decoder(self):
        self.assertEqual(self.fatal(self.decode_with(decoder="null"))["option"],
                         "pipeline[1].decoder")

    def test_in_order_false_and_affinity(self):
        self.assertEqual(self.fatal(driver.image_config(**{"loader.in_order": False}))["option"],
                         "loader.in_order")
        self.assertEqual(self.fatal(driver.image_config(**{"loader.affinity": "compact"}))
                         ["option"], "loader.affinity")

    def test_gpu_stages(self):
        config = driver.image_config()
        config["pipeline"][3]["flip"]["device"] = "gpu"
        self.assertEqual(self.fatal(config)["option"], "pipeline[3].device")
        config = driver.image_config()
        config["pipeline"].append({"to_device": {}})
        self.assertEqual(self.fatal(config)["option"], "pipeline[5]")

    def test_area_interpolation(self):
        config = driver.image_config()
        config["pipeline"][2]["random_resized_crop"]["interpolation"] = "area"
        self.assertEqual(self.fatal(config)["option"], "pipeline[2].interpolation")

    def test_unknown_python_module(self):
        config = driver.image_config(**{"dataset.python": "no_such_module:make"})
        self.assertEqual(self.fatal(config)["option"], "dataset.python")

    def test_a_value_pbench_did_not_send(self):
        """The engine keeps no defaults: a stage option missing from the
        config is named, not filled in."""
        config = driver.image_config()
        del config["pipeline"][4]["normalize"]["mean"]
        frame = self.fatal(config)
        self.assertEqual(frame["option"], "pipeline[4].mean")
        self.assertIn("pbench sent no value for mean", frame["message"])


@unittest.skipIf(torch is None, driver.SKIP_REASON)
class FatalTest(unittest.TestCase):
    def test_fatal_keeps_the_whole_traceback(self):
        config = driver.image_config()
        config["pipeline"][2]["random_resized_crop"]["scale"] = 5  # tuple(5) raises
        engine = driver.Engine()
        frame = engine.open(config, "")
        self.assertEqual(engine.wait(), 1)
        self.assertEqual((frame["type"], frame["kind"]), ("fatal", "engine"))
        self.assertTrue(frame["traceback"].startswith("Traceback (most recent call last):"))
        self.assertIn("transform_stage", frame["traceback"])
        self.assertEqual(frame["traceback"].strip().splitlines()[-1], frame["message"])


if __name__ == "__main__":
    unittest.main()
