"""Video clips through PyAV (pbench_torch.video), end to end: sub-stage
columns, counters as pbench's decoder counts them, clip shapes."""
import importlib.util
import os
import shutil
import tempfile
import unittest

import driver

AVAILABLE = driver.torch_available() and importlib.util.find_spec("av") is not None


def video_config(**decode):
    options = {"decoder": "video", "clip_frames": 4, "frame_stride": 2, "sampling": "random",
               "seek": "keyframe", "shorter_side": 32, "threads": 1, "reopen": "reuse",
               "discard": "none", "clips_per_visit": 1, "size": [], "clips_per_video": 1,
               "thread_type": "frame", "short_video": "pad", "rotation": "apply",
               "corrupt_frames": "error"}
    options.update(decode)
    config = driver.image_config(**{"dataset.epochs": 1, "loader.batch_size": 2})
    config["pipeline"] = [
        {"decode": options},
        {"random_crop": {"size": [24], "device": "cpu"}},
        {"flip": {"p": 0.5, "device": "cpu"}},
        {"normalize": {"mean": [0.45] * 3, "std": [0.225] * 3, "pixel_scale": 255.0,
                       "dtype": "float32", "layout": "cthw", "device": "cpu"}},
    ]
    return config


@unittest.skipIf(not AVAILABLE, driver.SKIP_REASON)
class VideoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="pbench-torch-video-")
        cls.videos = [driver.make_video(os.path.join(cls.folder, "v%d.mp4" % i))
                      for i in range(3)]
        cls.index = driver.write_index(os.path.join(cls.folder, "index"),
                                       driver.file_records(cls.videos))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def run_point(self, config):
        engine = driver.Engine()
        ready = engine.open(config, self.index)
        self.assertEqual(ready["type"], "ready", ready)
        frames = engine.repeat(0)
        self.assertEqual(engine.close(), 0, engine.stderr_tail())
        return ready, frames

    def test_substages_and_counters(self):
        ready, frames = self.run_point(video_config())
        names = [(s["name"], s["parent"]) for s in ready["stages"]]
        self.assertEqual(names[:6], [("decode", ""), ("decode.open", "decode"),
                                     ("decode.seek", "decode"), ("decode.demux", "decode"),
                                     ("decode.decode", "decode"), ("decode.convert", "decode")])
        self.assertEqual(names[-1], ("collate", ""))
        self.assertEqual([c["name"] for c in ready["counters"]],
                         ["frames_decoded", "frames_delivered", "seeks", "opens"])
        self.assertEqual([f for f in frames if f["type"] == "error"], [])
        rows = [row for f in frames if f["type"] == "batch" for row in f["rows"]]
        self.assertEqual(len(rows), 3)
        columns = len(ready["stages"])
        for row in rows:
            decoded, delivered, seeks, opens = row[1 + 3 * columns:]
            self.assertEqual(delivered, 4)
            self.assertGreaterEqual(decoded, 4)
            self.assertEqual(opens, 1)
            self.assertGreaterEqual(seeks, 1)
            decode_start, decode_end = row[1], row[2]
            sub_wall = sum(row[2 + 3 * c] - row[1 + 3 * c] for c in range(1, 6))
            self.assertGreater(sub_wall, 0)
            self.assertLessEqual(sub_wall, decode_end - decode_start)

    def test_short_video_skip_is_a_bad_sample(self):
        _, frames = self.run_point(video_config(clip_frames=20, short_video="skip"))
        errors = [f for f in frames if f["type"] == "error"]
        self.assertEqual(len(errors), 3)
        self.assertIn("shorter than a clip", errors[0]["message"])

    def test_uniform_and_sequential_per_clip(self):
        for sampling in ("uniform", "sequential"):
            _, frames = self.run_point(video_config(sampling=sampling, reopen="per_clip",
                                                    clips_per_video=3))
            self.assertEqual(sum(f["samples"] for f in frames if f["type"] == "batch"), 3)

    def test_discard_nonref_is_a_config_error(self):
        engine = driver.Engine()
        frame = engine.open(video_config(discard="nonref"), self.index)
        self.assertEqual(engine.wait(), 2)
        self.assertEqual(frame["option"], "pipeline[0].discard")


if __name__ == "__main__":
    unittest.main()
