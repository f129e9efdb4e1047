"""Evaluation serves each row exactly once (pad=False, DESIGN section 15),
across DataLoader workers and ranks; workers ship lists, one buffer a
batch, expanded in the main process into every layout exactly as Loader +
to_torch builds it (DESIGN section 16); persistent workers; DataModule.graph."""

import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import pertload

SUBSET = list(range(7, 108))  # 101 rows: no world size of 2 to 6 divides it


def rows(x):
    return x.row.tolist() if isinstance(x, pertload.Batch) else x["row"].tolist()


@pytest.mark.parametrize("workers", [0, 1, 2, 3])
@pytest.mark.parametrize("ranks", [1, 2])
def test_evaluation_serves_each_row_once(small, workers, ranks):
    got, steps = [], []
    for rank in range(ranks):
        ds = pertload.Dataset(small.db, batch_size=8, shuffle=True, seed=2, rows=SUBSET,
                              rank=rank, world_size=ranks, pad=False)
        ds.set_epoch(1)
        batches = [rows(b) for b in DataLoader(ds, batch_size=None, num_workers=workers)]
        ds.num_workers = max(workers, 1)
        assert len(ds) == len(batches)
        steps.append(len(batches))
        got += [r for b in batches for r in b]
    assert sorted(got) == SUBSET


@pytest.mark.parametrize("world", [2, 3, 6, 7, 200])
def test_loader_pad_false_and_true(small, world):
    """pad=False: each row once, the last batch of a rank short; pad=True
    (training): the same step count on every rank, rows repeated."""
    got, padded, steps = [], [], set()
    for rank in range(world):
        lo = pertload.Loader(small.db, batch_size=8, shuffle=True, rows=SUBSET, rank=rank,
                             world_size=world, pad=False)
        bs = [b.row.tolist() for b in lo]
        assert len(bs) == len(lo)
        got += [r for b in bs for r in b]
        tr = pertload.Loader(small.db, batch_size=8, shuffle=True, rows=SUBSET, rank=rank,
                             world_size=world)
        pb = [b.row.tolist() for b in tr]
        steps.add(len(pb))
        padded += [r for b in pb for r in b]
    assert sorted(got) == SUBSET
    assert len(steps) == 1 and len(padded) > len(SUBSET) and set(padded) == set(SUBSET)
    with pytest.raises(ValueError, match="pad=False takes the row order"):
        pertload.Loader(small.db, pad=False, order="block")


def per_sample(b):
    """Every list of every sample of a batch, and its row arrays, as Python
    values (by slot name)."""
    out = []
    for i in range(len(b)):
        d = {"labels": b.labels[i].tobytes(), "row": int(b.row[i]),
             "capped": int(b.khop["capped"][i])}
        for name, (pos, ptr) in [("gene", (b.perturbation_indices, b.perturbation_ptr)),
                                 ("khop", b.khop["genes"])] + list(b.removed.items()):
            d[name] = pos[ptr[i]:ptr[i + 1]].tolist()
        out.append(d)
    return out


def test_unpadded_last_batch_is_the_padded_one_cut(small):
    """pad=False cuts the padding off a rank's last batch: every list and row
    array of its samples as in the padded batch."""
    kw = dict(batch_size=7, shuffle=True, rows=SUBSET, rank=5, world_size=6, khop=1)
    cut = [per_sample(b) for b in pertload.Loader(small.db, pad=False, **kw)]
    full = [per_sample(b) for b in pertload.Loader(small.db, **kw)]
    assert len(cut) == len(full) and len(cut[-1]) == len(full[-1]) - 1
    assert cut[:-1] == full[:-1] and cut[-1] == full[-1][:-1]


def test_pad_false_resumes(small):
    lo = pertload.Loader(small.db, batch_size=8, rows=SUBSET, rank=1, world_size=2, pad=False)
    want = [b.row.tolist() for b in lo]
    it = iter(lo)
    next(it), next(it)
    sd = lo.state_dict()
    assert sd["pad"] is False
    lo2 = pertload.Loader(small.db, batch_size=8, rows=SUBSET, rank=1, world_size=2,
                          pad=False)
    lo2.load_state_dict(sd)
    assert [b.row.tolist() for b in lo2] == want[2:]
    with pytest.raises(ValueError, match="pad"):
        pertload.Loader(small.db, batch_size=8, rows=SUBSET, rank=1, world_size=2
                        ).load_state_dict(sd)


def assert_tree_equal(got, want, where=""):
    if hasattr(want, "to_dict") and not isinstance(want, dict):  # a HeteroData
        got, want = got.to_dict(), want.to_dict()
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            assert_tree_equal(got[k], want[k], f"{where}/{k}")
    elif isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=where)
    else:
        assert got == want, where


@pytest.mark.parametrize("layout", ["masks", "lists", "pyg"])
def test_worker_lists_expand_in_main_as_the_loader(small, layout):
    """A 2-worker epoch in the lists layout, expanded in this process, equals
    Loader + to_torch of the workers' shares, for every layout."""
    ds = pertload.Dataset(small.db, batch_size=32, shuffle=True, seed=9, khop=1)
    ds.set_epoch(3)
    graph = ds.graph
    by_rows = {}
    for b in DataLoader(ds, batch_size=None, num_workers=2):
        assert isinstance(b, pertload.Batch) and not b.released
        # one buffer a batch, a region of a worker's arena (or a tensor of
        # its own): every array is a view of it
        assert all(a.base is not None for a in b.arrays.values())
        lo = min(a.ctypes.data for a in b.arrays.values())
        hi = max(a.ctypes.data + a.nbytes for a in b.arrays.values())
        size = b._arena[1] if b._arena is not None else b._packed[0].numel()
        assert hi - lo <= size
        by_rows[tuple(b.row.tolist())] = b.to_torch("cpu", layout=layout, graph=graph)
    n = 0
    for w in range(2):
        lo = pertload.Loader(small.db, batch_size=32, shuffle=True, seed=9, khop=1, rank=w,
                             world_size=2)
        lo.set_epoch(3)
        for b in lo:
            assert_tree_equal(by_rows.pop(tuple(b.row.tolist())),
                              b.to_torch("cpu", layout=layout), f"batch {b.index}")
            n += len(b)
    assert not by_rows and n == small.n


def test_packed_batch_is_one_buffer_and_pickles(small):
    for b in pertload.Loader(small.db, batch_size=16, khop=1):
        p = b.pack()
        want = {k: a.copy() for k, a in b.arrays.items()}
        break
    buf, table = p._packed
    assert buf.is_shared() and len(table) == len(want)
    q = pickle.loads(pickle.dumps(p))
    for k, a in want.items():
        np.testing.assert_array_equal(q.arrays[k], a)
        np.testing.assert_array_equal(p.arrays[k], a)
    assert q.gene_fingerprint == b.gene_fingerprint and len(q) == 16


def test_persistent_workers_take_the_next_epoch(small):
    """With persistent workers the same processes serve every epoch, each
    iteration the next one."""
    ds = pertload.Dataset(small.db, batch_size=25, shuffle=True, seed=1)
    dl = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        got = sorted(tuple(rows(b)) for b in dl)
        want = []
        for w in range(2):
            lo = pertload.Loader(small.db, batch_size=25, shuffle=True, seed=1, rank=w,
                                 world_size=2)
            lo.set_epoch(epoch)
            want += [tuple(b.row.tolist()) for b in lo]
        assert got == sorted(want), f"epoch {epoch}"
    del dl


def test_datamodule_graph_and_evaluation_once(split_db):
    dm = pertload.DataModule(split_db.db, batch_size=64, num_workers=2)
    assert dm.graph is dm.datasets["train"].graph
    assert dm.graph.n_genes == 60
    for name, level in (("val", "val"), ("test", "test")):
        got = [r for b in getattr(dm, f"{name}_dataloader")() for r in rows(b)]
        assert sorted(got) == split_db.rows[("split", level)], name
    assert dm.datasets["train"].pad and not dm.datasets["val"].pad
