"""Frames and commands (pbench_torch.protocol), the index and sharding
(pbench_torch.index), without starting an engine."""
import json
import os
import tempfile
import unittest

import driver

from pbench_torch import protocol
from pbench_torch.index import parse_shard, read_index, shard_indices


class FrameTest(unittest.TestCase):
    def setUp(self):
        self.read_fd, write_fd = os.pipe()
        self.writer = protocol.FrameWriter(write_fd)
        self.write_fd = write_fd

    def tearDown(self):
        os.close(self.read_fd)
        os.close(self.write_fd)

    def read_frame(self):
        length, frame_type = driver.FRAME_HEAD.unpack(os.read(self.read_fd, 8))
        return frame_type, os.read(self.read_fd, length - 4)

    def test_json_frame(self):
        self.writer.json({"type": "ready", "protocol": 1})
        frame_type, payload = self.read_frame()
        self.assertEqual(frame_type, 1)
        self.assertEqual(json.loads(payload), {"type": "ready", "protocol": 1})

    def test_names_travel_as_bytes(self):
        # A name that is not UTF-8: readable text and its exact bytes; no
        # lone surrogate in the frame (pbench's JSON reader refuses them).
        name = os.fsdecode(b"/d/corrupt\xff.jpg")
        self.writer.json(dict({"type": "error", "message": "%s: bad" % name},
                              **protocol.name_fields("file", name)))
        _, payload = self.read_frame()
        self.assertNotIn(b"\\udc", payload)
        frame = json.loads(payload)
        self.assertEqual(frame["file"], "/d/corrupt\u00ff.jpg")
        self.assertEqual(bytes.fromhex(frame["file_bytes"]), b"/d/corrupt\xff.jpg")
        self.assertEqual(frame["message"], "/d/corrupt\u00ff.jpg: bad")
        self.assertEqual(protocol.name_fields("file", "/d/caf\u00e9.jpg"),
                         {"file": "/d/caf\u00e9.jpg"})
        self.assertEqual(protocol.name_field(frame, "file"), name)
        self.assertEqual(protocol.name_field({"index": "/tmp/i"}, "index"), "/tmp/i")

    def test_batch_frame_is_88_bytes_of_header_then_records(self):
        header = (3, 10, 20, 30, 5, 1, 2, 100, 2, 1, -1, 1, 2, 0)
        records = b"".join(v.to_bytes(8, "little") for v in (7, 1, 2, 3, 9, 4, 5, 6))
        self.writer.batch(header, records)
        frame_type, payload = self.read_frame()
        self.assertEqual(frame_type, 2)
        self.assertEqual(protocol.BATCH_HEADER.size, 88)
        self.assertEqual(protocol.BATCH_HEADER.unpack_from(payload), header)
        self.assertEqual(payload[88:], records)

    def test_writer_and_reader_share_one_description(self):
        self.assertEqual(protocol.BATCH_FIELDS, driver.BATCH_FIELDS)
        self.assertEqual(protocol.BATCH_HEADER.format, driver.BATCH_HEADER.format)
        self.assertEqual(protocol.BATCH_FIELDS[:2], ("seq", "t_wait_ns"))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"size": 88, "fields": [["seq", "u64"], ["samples", "u32"]]}, f)
        try:
            with self.assertRaises(ValueError):  # 12 bytes of fields, not 88
                protocol.batch_header_layout(f.name)
            fields, layout = driver.read_header_description(f.name)
            self.assertEqual((fields, layout.size), (("seq", "samples"), 12))
        finally:
            os.unlink(f.name)


class CommandTest(unittest.TestCase):
    def test_poll_never_blocks_and_reads_whole_lines(self):
        read_fd, write_fd = os.pipe()
        reader = protocol.CommandReader(read_fd)
        self.assertIsNone(reader.poll())
        os.write(write_fd, b'{"type": "st')
        self.assertIsNone(reader.poll())
        os.write(write_fd, b'op"}\n{"type": "close"}\n')
        self.assertEqual(reader.poll(), {"type": "stop"})
        self.assertEqual(reader.next_command(), {"type": "close"})
        os.close(write_fd)
        self.assertEqual(reader.next_command(), {"type": "close"})  # end of input
        os.close(read_fd)


class IndexTest(unittest.TestCase):
    def test_index_fields_and_raw_paths(self):
        with tempfile.TemporaryDirectory() as folder:
            records = [(-1, 10, "", os.path.join(folder, "a.jpg")),
                       (512, 99, "0001", os.path.join(folder, "s.tar"))]
            path = driver.write_index(os.path.join(folder, "index"), records)
            entries = read_index(path)
        self.assertEqual(entries[0].offset, -1)
        self.assertEqual(entries[1].offset, 512)
        self.assertEqual(entries[1].size, 99)
        self.assertEqual(entries[1].member, "0001")
        self.assertEqual(entries[0].path, os.fsencode(records[0][3]))

    def test_sharding_is_strided(self):
        self.assertEqual(parse_shard("1/2"), (1, 2))
        self.assertEqual(shard_indices(7, 1, 2), [1, 3, 5])
        self.assertEqual(shard_indices(7, 0, 3), [0, 3, 6])
        with self.assertRaises(ValueError):
            parse_shard("2/2")


if __name__ == "__main__":
    unittest.main()
