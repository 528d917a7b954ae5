"""examples/torch_dataset/my_data.py through the engine, as
configs/torch-dataset.yaml runs it (python_path relative to configs/)."""
import os
import shutil
import tempfile
import unittest

import driver

REPO = os.path.dirname(os.path.dirname(driver.ENGINE_ROOT))


@unittest.skipIf(not driver.torch_available(), driver.SKIP_REASON)
class ExampleTest(unittest.TestCase):
    def test_example_dataset_runs_with_a_row_per_transform(self):
        folder = tempfile.mkdtemp(prefix="pbench-torch-example-")
        try:
            driver.make_jpegs(os.path.join(folder, "img"), 8)
            config = driver.image_config(**{
                "dataset.epochs": 1, "dataset.python": "my_data:make_dataset",
                "dataset.args": {"root": "img", "size": 24},
                "loader.python_path": "../examples/torch_dataset", "loader.workers": 2})
            config["pipeline"] = []
            engine = driver.Engine(cwd=folder)  # args are relative to pbench's folder
            ready = engine.open(config, "", config_dir=os.path.join(REPO, "configs"))
            self.assertEqual(ready["type"], "ready", ready)
            self.assertEqual([s["name"] for s in ready["stages"]],
                             ["getitem", "RandomResizedCrop", "RandomHorizontalFlip", "ToTensor",
                              "Normalize", "collate"])
            frames = engine.repeat(0)
            self.assertEqual(engine.close(), 0)
            self.assertEqual(sum(f["samples"] for f in frames if f["type"] == "batch"), 8)
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    unittest.main()
