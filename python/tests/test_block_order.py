"""The block-shuffled order (Loader(order="block"), serve --order block):
batches as loader/plan.h documents them, exactly once across ranks with equal
step counts, resume, payload rows, and the randomness the documentation
states (how many blocks a batch draws from)."""

import json
import subprocess

import numpy as np
import pytest

import pertload
from conftest import Inputs, block_plan_batches, pertload_bin


def rows_of(loader):
    return [batch.row.tolist() for batch in loader]


@pytest.mark.parametrize("world,B,K,w", [(1, 64, None, None), (2, 48, 8, None),
                                         (3, 32, 4, 16)])
def test_batches_are_the_documented_plan_exactly_once(medium, world, B, K, w):
    union, steps = [], set()
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=B, seed=4, rank=rank, world_size=world,
                                 order="block", block_rows=K, block_window=w)
        loader.set_epoch(3)
        got = rows_of(loader)
        assert got == block_plan_batches(medium.n, 4, 3, rank, world, B, False, K, w)
        assert all(len(b) == B for b in got)
        assert len(got) == len(loader)
        steps.add(len(got))
        union += [r for b in got for r in b]
    assert len(steps) == 1
    assert set(union) == set(range(medium.n))
    assert len(union) == steps.pop() * B * world  # padded to whole steps


def test_drop_last_is_disjoint(medium):
    shares = [r for rank in range(3)
              for b in rows_of(pertload.Loader(medium.db, batch_size=64, seed=1, rank=rank,
                                               world_size=3, drop_last=True, order="block"))
              for r in b]
    assert len(shares) == (medium.n // 192) * 192
    assert len(shares) == len(set(shares))


def test_resume_yields_the_remaining_batches(medium):
    loader = pertload.Loader(medium.db, batch_size=50, seed=2, order="block", block_rows=10)
    it = iter(loader)
    first = [next(it).row.tolist() for _ in range(7)]
    sd = loader.state_dict()
    loader.close()
    again = pertload.Loader(medium.db, batch_size=50, seed=0, order="block", block_rows=10)
    again.load_state_dict(sd)
    rest = rows_of(again)
    assert first + rest == block_plan_batches(medium.n, 2, 0, 0, 1, 50, False, 10)
    with pytest.raises(ValueError, match="order"):
        pertload.Loader(medium.db, batch_size=50, seed=2).load_state_dict(sd)


def test_whole_blocks_and_payload_rows(tmp_path):
    # 4 KiB payload rows, 16-row blocks, 64-sample batches: every batch is
    # 4 whole blocks (K divides n), read as 4 runs; the payload is the rows'.
    inputs = Inputs(tmp_path, 1024, 1024)
    blocks_seen = set()
    for batch in pertload.Loader(inputs.db, batch_size=64, seed=9, order="block"):
        rows = batch.row.tolist()
        blocks = sorted({r // 16 for r in rows})
        assert len(blocks) == 4
        assert rows == [b * 16 + i for b in blocks for i in range(16)]
        blocks_seen.update(blocks)
        np.testing.assert_array_equal(batch.payload, inputs.payload[batch.row])
    assert blocks_seen == set(range(64))


def test_options_are_checked(small):
    with pytest.raises(ValueError, match="order is 'rows' or 'block'"):
        pertload.Loader(small.db, order="random")
    with pytest.raises(ValueError, match="need order='block'"):
        pertload.Loader(small.db, block_rows=4)
    with pytest.raises(ValueError, match="block_window 0"):
        pertload.Loader(small.db, order="block", block_window=0)


def test_bench_payload_runs_in_every_order(tmp_path):
    # Four workers on small batches finish out of order: a slot must not be
    # reused before its batch is complete (it once was, and masks read back
    # from a slot another worker was writing crashed or failed the run).
    inputs = Inputs(tmp_path, 20000, 1024)
    out = tmp_path / "p.json"
    for order, plan in (([], "in-order"), ([], "in-order"), (["--shuffle"], "shuffled"),
                        (["--order", "block"], "block")):
        run = subprocess.run([pertload_bin(), "bench", "payload", inputs.db, "--threads", "4",
                              "--batch-size", "8", "--rounds", "3", "--json", out, *order],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (order, run.returncode, run.stderr[-2000:])
        r = json.loads(out.read_text())
        assert r["plan"] == plan
        assert r["rows"] == 20000 and r["row_bytes"] == 4096
        assert r["producer_bytes_per_s"] > 0 and r["sequential_bytes_per_s"] > 0
