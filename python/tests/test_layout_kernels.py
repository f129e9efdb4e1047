"""The layout kernels' host twin (libpertload's pl_layout_* with device -1,
the same element functions the CUDA kernels run) against brute-force
oracles written here and against pl_pyg_edges, on random graphs and lists
with the awkward cases: samples that remove nothing or every edge, one
sample, no sample, edges that are self-loops or repeated."""

import re

import numpy as np
import pytest
import torch

import pertload
from pertload import kernels, pyg


def random_lists(rng, B, E, shape):
    """Sorted unique removed positions per sample, as int64 (pos, ptr)."""
    lists = []
    for b in range(B):
        if shape == "mixed":
            k = rng.choice([0, 1, E, rng.integers(0, E + 1)])
        elif shape == "all":
            k = E
        else:
            k = 0
        lists.append(np.sort(rng.choice(E, size=min(k, E), replace=False)))
    ptr = np.zeros(B + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    pos = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, np.int64)
    return torch.from_numpy(pos), torch.from_numpy(ptr), lists


def oracle_union(ei, attr, lists, ss, sd):
    src, dst, at, first = [], [], [], [0]
    for b, removed in enumerate(lists):
        keep = np.ones(ei.shape[1], dtype=bool)
        keep[removed] = False
        src.append(ei[0][keep] + b * ss)
        dst.append(ei[1][keep] + b * sd)
        at.append(attr[keep])
        first.append(first[-1] + int(keep.sum()))
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    return (np.stack([cat(src, np.int64), cat(dst, np.int64)]), cat(at, np.float32),
            np.array(first, dtype=np.int64))


CASES = [(B, E, shape, seed) for seed in range(3) for B, E, shape in
         [(1, 1, "mixed"), (5, 17, "mixed"), (64, 300, "mixed"), (8, 40, "all"),
          (8, 40, "none"), (0, 10, "none"), (3, 0, "none"), (33, 1000, "mixed")]]


@pytest.mark.parametrize("B,E,shape,seed", CASES)
def test_union_and_tile_equal_the_oracles(B, E, shape, seed):
    rng = np.random.default_rng(seed)
    n_src, n_dst = 50, 70
    ei_np = np.stack([rng.integers(0, n_src, E), rng.integers(0, n_dst, E)]).astype(np.int64)
    if E > 3:
        ei_np[:, 1] = ei_np[:, 0]  # a repeated edge
        ei_np[1, 2] = ei_np[0, 2] if ei_np[0, 2] < n_dst else 0  # a self-loop
    attr_np = rng.standard_normal(E).astype(np.float32)
    pos, ptr, lists = random_lists(rng, B, E, shape)
    ei = torch.from_numpy(ei_np)
    want_ei, want_attr, want_ptr = oracle_union(ei_np, attr_np, lists, n_src, n_dst)

    got, eptr, got_attr = kernels.union(torch, ei, pos, ptr, B, n_src, n_dst,
                                        attr=torch.from_numpy(attr_np))
    assert np.array_equal(got.numpy(), want_ei)
    assert np.array_equal(eptr.numpy(), want_ptr)
    assert np.array_equal(got_attr.numpy(), want_attr)
    lib_ei, lib_ptr = pyg._union_cpu(torch, ei, pos, ptr, B, n_src, n_dst)  # pl_pyg_edges
    assert torch.equal(lib_ei, got) and torch.equal(lib_ptr, eptr)

    tiled, kept, tattr = kernels.tile(torch, ei, pos, ptr, B, n_src, n_dst,
                                      attr=torch.from_numpy(attr_np))
    want_kept = np.ones((B, E), dtype=bool)
    for b, removed in enumerate(lists):
        want_kept[b, removed] = False
    shifts = np.arange(B, dtype=np.int64)[:, None]
    assert np.array_equal(tiled[0].numpy(), (ei_np[0][None, :] + shifts * n_src).reshape(-1))
    assert np.array_equal(tiled[1].numpy(), (ei_np[1][None, :] + shifts * n_dst).reshape(-1))
    assert np.array_equal(kept.numpy(), want_kept.reshape(-1))
    assert np.array_equal(tattr.numpy(), np.tile(attr_np, B))


@pytest.mark.parametrize("B,n,shape,seed", [(B, n, shape, seed) for seed in range(3)
                                            for B, n, shape in [(1, 1, "mixed"),
                                                                (9, 31, "mixed"),
                                                                (64, 500, "mixed"),
                                                                (4, 8, "all"), (0, 5, "none")]])
def test_nodes_and_rows_equal_the_oracles(B, n, shape, seed):
    rng = np.random.default_rng(100 + seed)
    pos, ptr, lists = random_lists(rng, B, n, shape)
    store = kernels.nodes(torch, n, B, torch.device("cpu"), pos, ptr)
    want_kept = np.ones((B, n), dtype=bool)
    for b, removed in enumerate(lists):
        want_kept[b, removed] = False
    assert store["num_nodes"] == B * n
    assert np.array_equal(store["batch"].numpy(), np.repeat(np.arange(B), n))
    assert np.array_equal(store["n_id"].numpy(), np.tile(np.arange(n), B))
    assert np.array_equal(store["ptr"].numpy(), np.arange(B + 1) * n)
    assert np.array_equal(store["mask"].numpy(), want_kept.reshape(-1))
    assert np.array_equal(store["pert_mask"].numpy(), ~want_kept.reshape(-1))
    only = kernels.nodes(torch, n, B, torch.device("cpu"), pos, ptr, store=False, kept=False,
                         removed=True)
    assert list(only) == ["pert_mask"] and torch.equal(only["pert_mask"], store["pert_mask"])
    empty = kernels.nodes(torch, n, B, torch.device("cpu"))  # a type without lists
    assert bool(empty["mask"].all()) and not bool(empty["pert_mask"].any())

    rows, shifted = kernels.rows(torch, pos, ptr, B, n, shifted=True)
    want_rows = np.repeat(np.arange(B), [len(x) for x in lists]).astype(np.int64)
    assert np.array_equal(rows.numpy(), want_rows)
    assert np.array_equal(shifted.numpy(), pos.numpy() + want_rows * n)
    # the deleted nodes' batch indices: the nonzero of pert_mask, in order
    assert np.array_equal(shifted.numpy(), np.flatnonzero(~want_kept.reshape(-1)))


def test_lists_that_break_the_rules_stay_inside_the_arrays():
    """Unsorted, repeated, out-of-range positions and a ptr past the list
    give a wrong layout (the caller checks first), never an access outside
    the arrays: every output index is a graph edge."""
    ei = torch.arange(20, dtype=torch.int64).view(2, 10)
    pos = torch.tensor([9, 3, 3, 50, -4], dtype=torch.int64)
    ptr = torch.tensor([0, 3, 5], dtype=torch.int64)
    out, eptr, _ = kernels.union(torch, ei, pos, ptr, 2, 0, 0)
    assert out.shape == (2, 15)
    assert bool((out[0] >= 0).all()) and bool((out[0] < 10).all())
    ptr = torch.tensor([0, 4, 99], dtype=torch.int64)  # past the list: clamped
    kept = kernels.nodes(torch, 10, 2, torch.device("cpu"), pos, ptr)["mask"]
    assert kept.shape == (20,)


@pytest.mark.parametrize("pos, ptr, n, sets, why", [
    ([1, 2, 3], [0, 3, 1, 3], 10, False, "ptr decreases"),
    ([1, 12], [0, 2], 10, False, "holds a position outside 0..9"),
    ([1, -1], [0, 2], 10, False, "holds a position outside 0..9"),
    ([3, 1], [0, 2], 10, True, "positions of a sample are not increasing"),
    ([3, 3], [0, 2], 10, True, "positions of a sample are not increasing"),
    ([1, 2], [1, 2], 10, False, "ptr does not index its 2 positions"),
    ([1, 2], [0, 1], 10, False, "ptr does not index its 2 positions"),
    ([1, 2], [0, 3], 10, False, "ptr does not index its 2 positions"),
])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_check_names_the_rule_a_list_breaks(pos, ptr, n, sets, why, dtype):
    """kernels.check (pl_layout_check): ptr from 0 to the list's length and
    never decreasing, every position in 0..n-1, with sets each sample's
    strictly increasing; positions of 4 or 8 bytes."""
    with pytest.raises(pertload.LoaderError, match=f"^slot: edges/x {re.escape(why)}$"):
        kernels.check("edges/x", np.array(pos, dtype), np.array(ptr, np.int64), n, sets)
    # the same list within the rules it keeps passes
    if why == "positions of a sample are not increasing":
        kernels.check("edges/x", np.array(pos, dtype), np.array(ptr, np.int64), n, False)


def test_check_refuses_what_it_cannot_read():
    """pl_layout_check itself: positions of another width, no ptr."""
    import ctypes

    from pertload import _lib

    pos, ptr = np.array([1, 2], np.int64), np.array([0, 2], np.int64)
    for width, p, why in ((2, ptr.ctypes.data, "positions of 2 bytes (4 or 8)"),
                          (8, None, "ptr does not index its 2 positions")):
        err = _lib.PlErr()
        rc = _lib.lib().pl_layout_check(pos.ctypes.data, width, p, 1, 2, 10, 1,
                                        ctypes.byref(err))
        assert rc < 0 and err.text(rc) == why, err.text(rc)
    assert kernels.check("edges/x", pos, ptr, 10, True) is None


def test_a_device_call_without_a_device_is_an_error():
    """device 0 where no CUDA device is visible (or the library has no
    CUDA): an error naming the cause, nothing written."""
    import ctypes

    from pertload import _lib

    if torch.cuda.is_available():
        pytest.fail("this test runs where no CUDA device is visible (the CPU suite)")
    pos = torch.tensor([1, 2], dtype=torch.int64)
    ptr = torch.tensor([0, 2], dtype=torch.int64)
    rows = torch.full((2,), -7, dtype=torch.int64)
    err = _lib.PlErr()
    rc = _lib.lib().pl_layout_rows(0, None, pos.data_ptr(), ptr.data_ptr(), 1, 2, 0,
                                   rows.data_ptr(), None, ctypes.byref(err))
    assert rc < 0
    text = err.text(rc)
    assert ("without the CUDA toolkit" in text) if not kernels.built() else ("CUDA" in text)
    assert rows.tolist() == [-7, -7]
    assert kernels.enabled(torch.device("cpu")) is False
