"""DataLoader workers hand their batches over in regions of a shared-memory
arena, one a worker, reused once the main process holds no view of a
region (pertload.arena; DESIGN section 16): the batches equal the ring's,
an array a loop keeps never changes, nothing is left in /dev/shm, and the
main process lets the arenas of finished workers go."""

import gc
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import pertload
from pertload import arena

from conftest import assert_lists_equal, sample_lists


def mine():
    """This process's arena files in /dev/shm."""
    return sorted(Path("/dev/shm").glob(f"pertload-arena-{os.getpid()}-*"))


def dataset(db, seed=3):
    ds = pertload.Dataset(db, batch_size=8, shuffle=True, seed=seed)
    ds.set_epoch(1)
    return ds


def lists(b, i):
    return {k: v.copy() for k, v in sample_lists(b, i).items()}


def rows_of(db, seed=3):
    """The expected content per row: (labels, removed lists) read through a
    Loader without workers, copied."""
    want = {}
    lo = pertload.Loader(db, batch_size=8, shuffle=True, seed=seed)
    lo.set_epoch(1)
    for b in lo:
        for i, r in enumerate(b.row.tolist()):
            want[r] = (b.labels[i].copy(), lists(b, i))
    lo.close()
    return want


def test_worker_batches_come_through_reused_regions(medium):
    want = rows_of(medium.db)
    got, through, numbers = {}, 0, set()
    for b in DataLoader(dataset(medium.db), batch_size=None, num_workers=2):
        if b._arena is not None:
            through += 1
            numbers.add(b._arena[:3])  # (name, region size, region)
        for i, r in enumerate(b.row.tolist()):
            got[r] = (b.labels[i].copy(), lists(b, i))
    assert sorted(got) == sorted(want)
    for r in want:
        np.testing.assert_array_equal(got[r][0], want[r][0])
        assert_lists_equal(got[r][1], want[r][1], f"row {r}")
    n = -(-len(want) // 8)
    # Every batch but a few at the start of a worker (its arena made; the
    # main process gives regions back one batch late) through a region...
    assert through >= n - 2 * arena.REGIONS
    # ... and the regions reused: 2 workers, REGIONS regions each.
    assert len(numbers) <= 2 * arena.REGIONS < through
    assert mine() == []  # each name removed once mapped


def test_kept_arrays_from_workers_never_change(medium):
    """Keep every batch's labels (torch.from_numpy), a removed list and every
    third batch whole: each equals what was read when it came."""
    kept, copies, whole = [], [], []
    for k, b in enumerate(DataLoader(dataset(medium.db, seed=5), batch_size=None,
                                     num_workers=2)):
        name = sorted(b.removed)[0]
        if k % 3 == 0:
            whole.append((b, {n: a.copy() for n, a in b.arrays.items()}))
        kept.append((torch.from_numpy(b.labels[:, 0]), b.removed[name][0][1:]))
        copies.append((b.labels[:, 0].copy(), b.removed[name][0][1:].copy()))
        del b
    gc.collect()
    for (t, pos), (t0, pos0) in zip(kept, copies):
        np.testing.assert_array_equal(t.numpy(), t0)
        np.testing.assert_array_equal(pos, pos0)
    for b, arrays in whole:
        for n, a in arrays.items():
            np.testing.assert_array_equal(b.arrays[n], a, err_msg=n)


def test_a_held_batch_keeps_its_region_others_are_reused(medium):
    """The first batch held for the whole epoch: its region is never given
    back while the rest go round."""
    first, seen = None, []
    for b in DataLoader(dataset(medium.db), batch_size=None, num_workers=1):
        if first is None:
            first, copy = b, {n: a.copy() for n, a in b.arrays.items()}
        elif b._arena is not None:
            seen.append(b._arena[2])
    assert first._arena is not None
    assert first._arena[2] not in seen and len(seen) > arena.REGIONS
    for n, a in copy.items():
        np.testing.assert_array_equal(first.arrays[n], a)


def test_received_batch_pickles_and_expands(medium):
    b = next(iter(DataLoader(dataset(medium.db), batch_size=None, num_workers=1)))
    assert b._arena is not None
    again = pickle.loads(pickle.dumps(b))  # packed anew: the region is this process's
    assert again._arena is None
    for n, a in b.arrays.items():
        np.testing.assert_array_equal(again.arrays[n], a)
    assert again.db_fingerprint == b.db_fingerprint is not None
    graph = pertload.Dataset(medium.db).graph
    m1 = b.to_torch("cpu", layout="masks", graph=graph)
    m2 = again.to_torch("cpu", layout="masks", graph=graph)
    assert m1.keys() == m2.keys()
    for k in m1:
        if isinstance(m1[k], torch.Tensor):
            assert torch.equal(m1[k], m2[k]), k


def test_an_epoch_left_early_leaves_no_arena(medium):
    it = iter(DataLoader(dataset(medium.db), batch_size=None, num_workers=2,
                         prefetch_factor=4))
    next(it)
    del it  # the workers are stopped; batches never received were in arenas never mapped
    gc.collect()
    assert mine() == []


def test_arenas_of_finished_workers_are_let_go(medium):
    ds = dataset(medium.db)
    for _ in range(4):
        for b in DataLoader(ds, batch_size=None, num_workers=2):
            pass
        del b
    gc.collect()
    # Each epoch's workers make their own; the main process keeps at most
    # those of the last two epochs (let go when the next one is mapped).
    assert 0 < len(arena._MAPPED) <= 4
    assert mine() == []


def test_unparsed_slots_ship_as_the_ring_holds_them(medium):
    """In a worker the Loader yields a slot that holds a whole batch
    unparsed (SlotBatch) and a trimmed or split batch parsed; shipped, each
    equals the Loader's batch; a released one is refused."""
    from pertload.batch import Batch, SlotBatch

    # Rank 1 of 2 over 301 rows: 64, 64 and a last batch trimmed to 22.
    kw = dict(batch_size=64, rows=range(301), pad=False, shuffle=True, seed=2, rank=1,
              world_size=2)
    for ring in ({}, {"max_ring_bytes": 1 << 16, "slots": 2}):
        want = [b.copy() for b in pertload.Loader(medium.db, **kw, **ring)]
        lo = pertload.Loader(medium.db, **kw, **ring)
        lo._unparsed = True
        kinds = []
        for b, w in zip(lo, want):
            kinds.append((type(b), b.parts > 1))
            got = arena.ship(b, None)
            assert len(got) == len(w) and got.index == w.index
            for name, a in w.arrays.items():
                np.testing.assert_array_equal(got.arrays[name], a, err_msg=name)
            if isinstance(b, SlotBatch):
                np.testing.assert_array_equal(b.parsed().labels, w.labels)
        lo.close()
        assert len(kinds) == len(want) == 3 and len(want[-1]) == 22
        if ring:  # batches split over slots are parsed and merged
            assert (Batch, True) in kinds
            assert all(k is Batch for k, split in kinds if split)
        else:
            assert kinds == [(SlotBatch, False)] * 2 + [(Batch, False)]
    lo = pertload.Loader(medium.db, **kw)
    lo._unparsed = True
    it = iter(lo)
    first = next(it)
    next(it)
    with pytest.raises(pertload.LoaderError, match="released"):
        arena.ship(first, None)
    lo.close()


def test_a_retired_arena_is_let_go_once_every_batch_was_received():
    """A worker retires its arena for a larger one; a batch it put in the
    old one may reach the main process after the new arena's first."""
    a = arena._Arena(1 << 16, main=os.getpid())  # this process plays the worker (alive)
    m = arena._Mapped(a.path, a.region)  # maps it and removes its name
    assert not Path(a.path).exists()
    assert not m.finished()
    a.count = a.issued[3] = 1  # a batch put in region 3, not yet received
    a.retired[0] = 1
    assert m.retired[0] == 1 and not m.finished()
    m.last = 1
    assert m.finished()
