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
