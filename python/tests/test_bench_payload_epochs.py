"""`pertload bench payload DB --epochs`: the disk's own rates (sequential,
random rows at pertload's queue depth) beside pertload's in-order, block and
shuffled epochs, on the same file, in one run. The figures on a payload
larger than memory are in docs/benchmarks.md; here the same code runs on a
small file and every figure must be there and come from whole epochs."""

import json
import subprocess

from conftest import Inputs, pertload_bin

SIDES = ("disk_sequential", "disk_random", "in_order", "block", "shuffled")


def test_epochs_beside_the_disk(tmp_path):
    # 2,000 rows of 16 KiB (4096 float32): page-aligned rows, read O_DIRECT
    # where the file system allows it.
    inputs = Inputs(tmp_path, 2000, 4096)
    out = tmp_path / "e.json"
    run = subprocess.run([pertload_bin(), "bench", "payload", inputs.db, "--epochs",
                          "--batch-size", "16", "--threads", "2", "--rounds", "2",
                          "--json", out], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["rows"] == 2000 and r["row_bytes"] == 16384
    assert r["batch_size"] == 16 and r["threads"] == 2 and r["rounds"] == 2
    assert r["queue_depth"] == 32  # threads x batch size: the producer's reads at most
    assert r["direct"] in (0, 1)
    for side in SIDES:
        assert r[side + "_bytes_per_s"] > 0, side
    for share in ("in_order_share_of_sequential", "block_share_of_sequential",
                  "shuffled_share_of_random", "shuffled_share_of_sequential"):
        assert r[share] > 0, share
    text = run.stdout
    assert "2000 rows of 16384 bytes" in text
    for line in ("disk sequential", "disk random", "pertload in-order epoch",
                 "pertload block-order epoch", "pertload shuffled epoch"):
        assert line in text, line


def test_epochs_refuses_a_database_without_payload(tmp_path):
    inputs = Inputs(tmp_path, 300, 0)
    run = subprocess.run([pertload_bin(), "bench", "payload", inputs.db, "--epochs",
                          "--rounds", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "has no payload" in run.stderr
