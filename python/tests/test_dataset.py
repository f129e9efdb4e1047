"""pertload.Dataset inside torch.utils.data.DataLoader (worker processes
taking disjoint shares, exactly once across ranks x workers, pin_memory) and
the DataModule-shaped helper over splits."""

import glob
import os
import sys
import tempfile

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import pertload
from conftest import plan_batches


def rows_of(dl):
    out = []
    for t in dl:  # Batch objects (the lists layout) or to_torch dictionaries
        out.append(t.row.tolist() if isinstance(t, pertload.Batch) else t["row"].tolist())
    return out


def rows_dirs():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "pertload-rows-*")))


@pytest.mark.parametrize("world, workers", [(1, 0), (1, 3), (2, 2)])
def test_workers_take_disjoint_shares_exactly_once(small, world, workers):
    assert small.n % (world * max(workers, 1)) == 0  # no padding: exactly once
    union = []
    for rank in range(world):
        ds = pertload.Dataset(small.db, batch_size=16, shuffle=True, seed=4, rank=rank,
                              world_size=world)
        ds.set_epoch(2)
        got = rows_of(DataLoader(ds, batch_size=None, num_workers=workers))
        # Each batch is one of the worker shares' plan batches.
        n = max(workers, 1)
        want = [b for w in range(n)
                for b in plan_batches(small.n, 4, 2, True, rank * n + w, world * n, 16, False)]
        assert sorted(got) == sorted(want)
        union += [r for b in got for r in b]
    assert sorted(union) == list(range(small.n))


def test_dataset_batches_equal_the_loaders(small):
    ds = pertload.Dataset(small.db, batch_size=50, layout="pyg", rows=range(20, 260))
    by_row = {}
    for t in DataLoader(ds, batch_size=None, num_workers=2):
        by_row[tuple(t["row"].tolist())] = t
    n = 0
    for w in range(2):  # the workers' shares
        for b in pertload.Loader(small.db, batch_size=50, rows=range(20, 260), rank=w,
                                 world_size=2):
            t = by_row.pop(tuple(b.row.tolist()))
            want = b.to_torch("cpu", layout="pyg")
            for key, v in want.items():
                for k, x in (v.items() if isinstance(v, dict) else [(None, v)]):
                    got = t[key][k] if k is not None else t[key]
                    if isinstance(x, torch.Tensor):  # NaN labels are equal
                        torch.testing.assert_close(got, x, rtol=0, atol=0, equal_nan=True)
                    else:
                        assert got == x, (key, k)
            n += len(b)
    assert n == 240 and not by_row
    assert len(ds) == 5  # one worker: 240 rows in batches of 50
    ds.num_workers = 2
    assert len(ds) == 6  # two shares of 120: 3 batches each


def test_pin_memory(small):
    ds = pertload.Dataset(small.db, batch_size=64, rows=range(0, 128), layout="masks")
    got = []
    for t in DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True):
        assert t["labels"].is_pinned() == torch.cuda.is_available()
        assert t[("gene", small.types[0], "gene")]["mask"].shape[0] == len(t["row"])
        got += t["row"].tolist()
    assert sorted(got) == list(range(128))


def test_transform_and_bad_options(small):
    ds = pertload.Dataset(small.db, batch_size=100, transform=lambda b: len(b.row))
    assert list(DataLoader(ds, batch_size=None)) == [100, 100, 100]
    with pytest.raises(ValueError, match="layout"):
        pertload.Dataset(small.db, layout="dense")
    with pytest.raises(ValueError, match="given twice"):
        pertload.Dataset(small.db, rows=[1, 1])


def test_datamodule_splits_and_epochs(medium, monkeypatch, tmp_path):
    # A temporary directory of this test's own: other processes of the
    # machine make and remove rows directories in the shared one meanwhile.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = rows_dirs()
    perm = np.random.default_rng(1).permutation(medium.n)
    splits = {"train": perm[:1400], "val": perm[1400:1700], "test": perm[1700:]}
    dm = pertload.DataModule(medium.db, splits, batch_size=64, num_workers=2, seed=3)
    seen = {}
    for name in ("train", "val", "test"):
        dl = getattr(dm, f"{name}_dataloader")()
        epochs = [sorted(r for b in rows_of(dl) for r in b) for _ in range(2)]
        assert epochs[0] == epochs[1] == sorted(splits[name].tolist())
        seen[name] = set(epochs[0])
    assert sum(len(s) for s in seen.values()) == len(set().union(*seen.values())) == medium.n
    # Training batches are shuffled, differently each epoch; evaluation ones are not.
    dl = dm.train_dataloader()
    e0, e1 = rows_of(dl), rows_of(dl)
    assert sorted(map(tuple, e0)) != sorted(map(tuple, e1))
    dm.set_epoch(0)
    assert sorted(map(tuple, rows_of(dm.train_dataloader()))) == sorted(map(tuple, e0))
    val = rows_of(pertload.DataModule(medium.db, {"val": splits["val"]}, batch_size=64)
                  .val_dataloader())
    assert val == [splits["val"][i:i + 64].tolist() for i in range(0, 300, 64)]
    with pytest.raises(ValueError, match="no 'test' split"):
        pertload.DataModule(medium.db, {"val": splits["val"]}).test_dataloader()
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        pertload.DataModule(medium.db, {"dev": splits["val"]})
    assert "lightning" not in sys.modules and "pytorch_lightning" not in sys.modules
    assert rows_dirs() - before == set()  # workers removed their subsets' files
