"""What pbench wrap's rank rows say beyond samples/s and stall
(pbench_wrap.ranks), without torch: a rank's loader from the records of the
batches it built (what its workers could deliver, each column's CPU and
wall time per sample, its top stage), its stall per window, and the
windows each rank was the slowest in."""
import array
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pbench_wrap import ranks  # noqa: E402  (after the path)


class FakeLoader:
    columns = ["getitem", "Normalize", "collate", "worker_start"]


def record(samples, getitem_ns, getitem_cpu, normalize_cpu):
    """The bytes of a batch's records: per sample its index, then start,
    end and CPU per column (collate's and worker_start's empty)."""
    rows = array.array("Q")
    for i in range(samples):
        rows.extend([i, 1000, 1000 + getitem_ns, getitem_cpu, 5000, 5100, normalize_cpu,
                     0, 0, 0, 0, 0, 0])
    return rows.tobytes()


class RankLoadingTest(unittest.TestCase):
    def test_loader_rate_columns_and_top_stage(self):
        # 2 workers, each 8 samples in 40 ms of building: 200 samples/s each
        built = [(w, 8, 40000000, 4, 8, record(8, 3000000, 2000000, 500000)) for w in (0, 1)]
        row = ranks.rank_loading(FakeLoader(), built)
        self.assertEqual(row["loader_samples_per_s"], 400.0)
        self.assertEqual(row["workers_seen"], 2)
        self.assertEqual(row["timed_samples"], 16)
        self.assertEqual(row["top_stage"], "getitem")
        self.assertEqual(row["cpu_ns_per_sample"], 2500000)
        stages = {s["name"]: s for s in row["stages"]}
        self.assertNotIn("worker_start", stages)
        self.assertEqual(stages["getitem"]["wall_ns_per_sample"], 3000000)
        self.assertEqual(stages["Normalize"]["cpu_ns_per_sample"], 500000)

    def test_untimed_batches_give_the_rate_alone(self):
        row = ranks.rank_loading(FakeLoader(), [(-1, 8, 20000000, 0, 0, b"")])
        self.assertEqual(row["loader_samples_per_s"], 400.0)
        self.assertNotIn("stages", row)
        self.assertIsNone(ranks.rank_loading(FakeLoader(), [])["loader_samples_per_s"])


class WindowsTest(unittest.TestCase):
    def test_stall_cut_at_the_windows_bounds(self):
        # a wait from 50 to 150 over windows [0, 100) and [100, 200)
        self.assertEqual(ranks.window_stalls([(50, 150, 8)], [0, 100, 200]), [50.0, 50.0])

    def test_the_slowest_in_each_window(self):
        rows = [{"window_stall_pct": [5.0, 40.0, 3.0], "window_samples": [8, 8, 8]},
                {"window_stall_pct": [30.0, 2.0, 3.0], "window_samples": [8, 8, 4]}]
        ranks.slowest_windows(rows, 3)
        self.assertEqual([r["slowest_windows"] for r in rows], [1, 2])
        self.assertEqual([r["windows"] for r in rows], [3, 3])


if __name__ == "__main__":
    unittest.main()
