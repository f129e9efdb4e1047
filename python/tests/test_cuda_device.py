"""The CUDA paths on a real device: every layout of to_torch("cuda") against
the CPU path, the checks of the CUDA branch, the chunked union on the device
and the copy event. They need a CUDA device: skipped without one, except
under PERTLOAD_REQUIRE_CUDA=1 (scripts/gpu-check.sh run), where a missing
device fails them. test_cuda_paths.py runs the same branches on the CPU."""

import itertools
import os
import sys

import numpy as np
import pytest
import torch

import pertload
from pertload import pyg
from test_cuda_paths import assert_same

HAVE = torch.cuda.is_available()
REQUIRED = os.environ.get("PERTLOAD_REQUIRE_CUDA") == "1"
needs_cuda = pytest.mark.skipif(not HAVE and not REQUIRED,
                                reason="no CUDA device on this machine")


@needs_cuda
@pytest.mark.parametrize("opts", [{}, {"dense": "bits"}, {"dense": "bool"}, {"khop": 1}])
def test_every_layout_on_the_device_equals_the_cpu(medium, opts):
    assert torch.cuda.is_available(), "no CUDA device visible"
    layouts = ("masks", "lists", "pyg") if "khop" not in opts else ("masks", "lists")
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, **opts)
    n = 0
    for batch in itertools.islice(loader, 12):
        for lay in layouts:
            cpu = batch.to_torch("cpu", layout=lay)
            dev = batch.to_torch("cuda", layout=lay)
            torch.cuda.synchronize()
            assert_same(dev, cpu, "cuda")
            n += 1
    loader.close()
    assert n == 12 * len(layouts)


@needs_cuda
def test_device_refuses_positions_out_of_range(medium):
    assert torch.cuda.is_available(), "no CUDA device visible"
    loader = pertload.Loader(medium.db, batch_size=40)
    batch = next(iter(loader)).copy()
    pos, _ = next(iter(batch.removed.values()))
    assert len(pos)
    pos[0] = 1 << 30
    with pytest.raises(pertload.LoaderError, match="outside"):
        batch.to_torch("cuda", graph=loader.graph)
    loader.close()


@needs_cuda
@pytest.mark.parametrize("chunk", [1, 3, None])
def test_chunked_union_on_the_device(medium, chunk):
    assert torch.cuda.is_available(), "no CUDA device visible"
    loader = pertload.Loader(medium.db, batch_size=48, shuffle=True)
    g = loader.graph.to_torch("cpu")
    gd = loader.graph.to_torch("cuda")
    n = 0
    for batch in loader:
        for t, (pos, ptr) in batch.removed.items():
            ei = g[("gene", t, "gene")]["edge_index"]
            p, q = torch.from_numpy(pos).long(), torch.from_numpy(ptr).clone()
            a = pyg._union_cpu(torch, ei, p, q, len(batch), 300, 7)
            budget = None if chunk is None else chunk * pyg._UNION_BYTES * ei.shape[1]
            b = pyg._union_torch(torch, gd[("gene", t, "gene")]["edge_index"], p.cuda(),
                                 q.cuda(), len(batch), 300, 7, budget=budget)
            assert torch.equal(a[0], b[0].cpu()) and torch.equal(a[1], b[1].cpu()), t
            n += 1
    loader.close()
    assert n == len(loader) * len(medium.types)


@needs_cuda
def test_copy_event_completes_and_batches_stay_right_across_reuse(medium):
    """Twice round the ring with wait_copies() between batches (the
    loader's own call): every batch's device tensors equal its CPU ones,
    read after the slot was handed back and refilled."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    loader = pertload.Loader(medium.db, batch_size=32, shuffle=True, dense="bits")
    kept = []
    for batch in loader:
        kept.append((batch.to_torch("cuda"), batch.to_torch("cpu")))
        assert batch._copy_done is not None
    torch.cuda.synchronize()
    for dev, cpu in kept:
        assert_same(dev, cpu, "cuda")
    assert len(kept) == len(loader)
    loader.close()



def _layouts_on_the_device(db, n_genes, n_reactions):
    """The first batches' pyg and lazy layouts, node features included
    (float16 genes, float32 reactions), built on the device against the CPU."""
    rng = np.random.default_rng(11)
    feats = {"gene": rng.standard_normal((n_genes, 6)).astype(np.float16),
             "reaction": rng.standard_normal((n_reactions, 3)).astype(np.float32)}
    loader = pertload.Loader(db, batch_size=40, shuffle=True, seed=2, features=feats)
    n = 0
    for batch in itertools.islice(loader, 6):
        for lay in ("pyg", "lazy"):
            cpu = batch.to_torch("cpu", layout=lay)
            dev = batch.to_torch("cuda", layout=lay)
            torch.cuda.synchronize()
            assert_same(dev, cpu, "cuda")
            x = dev["gene"]["x"]
            assert x.dtype == torch.float16 and x.device.type == "cuda", lay
            n += 1
    loader.close()
    assert n == 12


@needs_cuda
def test_pyg_batch_and_lazy_layouts_on_the_device(medium, torch_geometric):
    """With PyTorch Geometric: a torch_geometric Batch on the device."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    _layouts_on_the_device(medium.db, len(medium.genes), len(medium.reactions))


@needs_cuda
def test_pyg_mapping_and_lazy_layouts_on_the_device(medium, monkeypatch):
    """Without PyTorch Geometric: the documented dictionaries on the device."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    _layouts_on_the_device(medium.db, len(medium.genes), len(medium.reactions))


@needs_cuda
@pytest.mark.parametrize("B,E,seed", [(1, 1, 0), (5, 17, 1), (64, 300, 2), (33, 100000, 3),
                                      (0, 10, 4)])
def test_layout_kernels_on_the_device_equal_the_host_twin(B, E, seed):
    """Each kernel's output on the device, byte for byte, against the host
    twin's on the same random lists (samples removing nothing or all)."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    from pertload import kernels
    from test_layout_kernels import random_lists

    assert kernels.built(), "libpertload was built without its CUDA kernels"
    rng = np.random.default_rng(seed)
    ei = torch.from_numpy(rng.integers(0, 1000, (2, E)).astype(np.int64))
    attr = torch.from_numpy(rng.standard_normal(E).astype(np.float32))
    pos, ptr, _ = random_lists(rng, B, E, "mixed")
    d = torch.device("cuda")
    for name, host, dev in (
            ("union", kernels.union(torch, ei, pos, ptr, B, 1000, 2000, attr=attr),
             kernels.union(torch, ei.to(d), pos.to(d), ptr.to(d), B, 1000, 2000,
                           attr=attr.to(d))),
            ("tile", kernels.tile(torch, ei, pos, ptr, B, 1000, 2000, attr=attr),
             kernels.tile(torch, ei.to(d), pos.to(d), ptr.to(d), B, 1000, 2000,
                          attr=attr.to(d))),
            ("nodes", tuple(kernels.nodes(torch, E, B, torch.device("cpu"), pos, ptr).values()),
             tuple(kernels.nodes(torch, E, B, d, pos.to(d), ptr.to(d)).values())),
            ("rows", kernels.rows(torch, pos, ptr, B, E, shifted=True),
             kernels.rows(torch, pos.to(d), ptr.to(d), B, E, shifted=True))):
        torch.cuda.synchronize()
        for i, (h, g) in enumerate(zip(host, dev)):
            if isinstance(h, torch.Tensor):
                assert g.device.type == "cuda", (name, i)
                assert h.dtype == g.dtype and h.shape == g.shape, (name, i)
                assert bytes(h.numpy().tobytes()) == bytes(g.cpu().numpy().tobytes()), (name, i)
            else:
                assert h == g, (name, i)


@needs_cuda
@pytest.mark.parametrize("layout", ["masks", "pyg", "lazy"])
def test_layouts_on_the_device_never_synchronise(medium, layout):
    """torch's sync debug mode set to error: to_torch("cuda") of every layout
    runs with no host synchronisation (no nonzero, item() or blocking copy)."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True)
    it = iter(loader)
    first = next(it)
    first.to_torch("cuda", layout=layout)  # the graph's upload, once per device
    torch.cuda.synchronize()
    batch = next(it)
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = batch.to_torch("cuda", layout=layout)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert_same(out, batch.to_torch("cpu", layout=layout), "cuda")
    loader.close()


@needs_cuda
@pytest.mark.parametrize("layout", ["pyg", "lazy"])
def test_prefetched_batches_on_the_device_equal_unprefetched(medium, layout):
    """Loader(device="cuda", prefetch=2): every batch equals the CPU layout
    of the same batch, and a step's work on the current stream between
    deliveries does not disturb the batches being prefetched."""
    assert torch.cuda.is_available(), "no CUDA device visible"
    plain = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=5)
    want = [b.to_torch("cpu", layout=layout) for b in plain]
    plain.close()
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=5, device="cuda",
                             layout=layout, prefetch=2)
    n = 0
    for got, w in zip(loader, want):
        busy = torch.randn(2048, 2048, device="cuda")
        for _ in range(4):  # a step's work, queued on the current stream
            busy = busy @ busy
            busy /= busy.norm()
        assert_same(got, w, "cuda")
        n += 1
    assert n == len(want) == 50
    loader.close()
