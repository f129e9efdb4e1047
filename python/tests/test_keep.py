"""Kept data never changes (DESIGN section 15): arrays and tensors taken out
of a batch (views, slices, np.asarray, torch.from_numpy) and held past the
step keep the values they had during it, over whole shuffled epochs, with
one slot and many, with split batches, and after the loader was closed and
its ring removed; a released batch's own attributes still raise. The oracle
is the same loop taking copies during each step."""

import gc

import numpy as np
import pytest
import torch

import pertload
from test_lifetime import assert_released
from test_ontology_batches import random_onto  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def onto_db(random_onto):
    """The small database with a random ontology (for the ontology lists)."""
    return random_onto.db


def taken(b, copy):
    """What a training loop takes out of batch b: the labels' first column as
    a tensor, a slice of the deleted genes, a removed list through
    np.asarray, a k-hop list and an ontology list (kept as they come, or
    copied: the oracle)."""
    c = (lambda a: a.copy()) if copy else (lambda a: a)
    t = (lambda a: torch.from_numpy(a).clone()) if copy else torch.from_numpy
    etype = sorted(b.removed)[0]
    pert, pptr = b.perturbation_indices, b.perturbation_ptr
    return {
        "labels": t(c(b.labels[:, 0])),
        "pert": c(pert[pptr[0]:pptr[len(b) // 2]]),
        "pert_all": t(c(pert)),
        "removed": np.asarray(c(b.removed[etype][0])),
        "row": c(b.row[1:]),
        "khop": c(b.khop["genes"][0]),
        "term": c(b.ontology["term"][0]),
        "ann_ptr": t(c(b.ontology["annotation"][1])),
    }


def assert_same(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.keys() == w.keys()
        for k in g:
            ga = g[k].numpy() if isinstance(g[k], torch.Tensor) else g[k]
            wa = w[k].numpy() if isinstance(w[k], torch.Tensor) else w[k]
            np.testing.assert_array_equal(ga, wa, err_msg=f"batch {i}: {k}")


@pytest.mark.parametrize("ring", [{"slots": 1}, {"slots": 2}, {},
                                  {"max_ring_bytes": 1 << 19, "slots": 2}],
                         ids=["one-slot", "two-slots", "default-slots", "split"])
def test_kept_arrays_equal_a_copying_loop(onto_db, ring):
    kw = dict(batch_size=16, shuffle=True, seed=3, khop=1, **ring)
    want = [taken(b, True) for b in pertload.Loader(onto_db, **kw)]
    loader = pertload.Loader(onto_db, **kw)
    got, batches = [], []
    parts = 0
    for b in loader:
        got.append(taken(b, False))
        batches.append(b)
        parts += b.parts > 1
    assert len(got) > 10
    if "max_ring_bytes" in ring:
        assert parts > 0  # split batches were met
    assert_same(got, want)
    # The loader closed, its ring removed: what was taken still holds.
    loader.close()
    gc.collect()
    assert_same(got, want)
    for b in batches[:-1]:
        if b.parts == 1:
            assert_released(b)


def test_kept_across_epochs_and_loaders(small):
    """Arrays kept from several epochs (each its own serve and ring) and from
    a loader that was dropped keep their values."""
    kw = dict(batch_size=32, shuffle=True, slots=2)
    got, want = [], []
    for epoch in range(2):
        loader = pertload.Loader(small.db, **kw)
        loader.set_epoch(epoch)
        for b in loader:
            got.append(b.labels)
            want.append(b.labels.copy())
        del loader
    gc.collect()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_dropped_view_costs_no_copy(small):
    """The zero-copy path: batches whose arrays are all dropped before the next
    are handed back as they are; kept ones are copied (Loader.kept_bytes)."""
    loader = pertload.Loader(small.db, batch_size=32, slots=2)
    for b in loader:
        float(b.labels.sum())
    assert loader.kept_bytes == 0 and loader.kept_batches == 0
    keep = []
    for b in loader:
        keep.append(b.row)
    n = len(loader)
    # every batch but the last (never handed back) was copied
    assert loader.kept_batches == n - 1 and loader.kept_bytes > 0
    assert [r.tolist() for r in keep] == [list(range(i * 32, min(300, i * 32 + 32)))
                                         for i in range(n)]


def test_copies_reuse_the_pages_of_dropped_ones(onto_db, monkeypatch):
    """A view held for one step (a loop variable left bound): every slot is
    copied, and each copy reuses the pages of the one dropped before it
    (_slots._POOL) instead of fresh ones; every held view reads its batch's
    values while held, and a copy reused later does not change them."""
    from pertload import _slots

    fresh = []
    real = _slots._mmap

    def counting(addr, size, prot, flags, fd, off):
        if flags & _slots._MAP_ANONYMOUS:
            fresh.append(size)
        return real(addr, size, prot, flags, fd, off)

    monkeypatch.setattr(_slots, "_mmap", counting)
    _slots._POOL.clear()
    loader = pertload.Loader(onto_db, batch_size=16, shuffle=True, seed=3, slots=2, khop=1)
    held = want = None
    longer, steps = [], 0
    for b in loader:
        if held is not None:  # the last batch's slot was copied by now
            assert_same([held], [want])
        held, want = taken(b, False), taken(b, True)
        if steps % 5 == 0:  # some copies held for the whole epoch
            longer.append((held, want))
        steps += 1
    del b
    assert_same([h for h, _ in longer], [w for _, w in longer])
    assert loader.kept_batches == steps - 1
    # One fresh copy for each copy held the whole epoch, a few while the
    # pool fills: the others reused dropped copies' pages.
    assert len(fresh) <= len(longer) + 3 < steps - 1, (len(fresh), steps)
