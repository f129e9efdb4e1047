"""The PyG batch layout of a batch: the disjoint union of its samples' graphs.

Sample i of a batch of B is a copy of the shared graph whose nodes are
shifted by i times the node count of their type and which keeps only the
edges that survive its deletions. Per edge type the kept edges of every
sample are concatenated in sample order, each sample's in the graph's edge
order, as torch_geometric's Batch.from_data_list would; the layout is built
from the shared graph already on the device and the batch's removed lists,
with no loop over samples in Python: on the CPU one pass of the library's
pl_pyg_edges per type (runs of kept edges copied and shifted), on a GPU a few
vectorised torch ops per type.
"""

import ctypes

from . import _lib
from ._lib import LoaderError


def _union_cpu(torch, ei, pos, ptr, B, shift_src, shift_dst):
    """_union on the CPU: one pass of the library's pl_pyg_edges, which also
    checks the lists (sets, in range)."""
    E = ei.shape[1]
    ei = ei.contiguous()
    out = torch.empty((2, B * E - len(pos)), dtype=torch.int64)
    eptr = torch.empty(B + 1, dtype=torch.int64)
    err = _lib.PlErr()
    rc = _lib.lib().pl_pyg_edges(ei[0].data_ptr(), ei[1].data_ptr(), E, pos.data_ptr(),
                                 ptr.data_ptr(), B, shift_src, shift_dst, out[0].data_ptr(),
                                 out[1].data_ptr(), eptr.data_ptr(), ctypes.byref(err))
    if rc < 0:
        raise LoaderError(err.text(rc))
    return out, eptr


def _union(torch, ei, pos, ptr, B, shift_src, shift_dst):
    """The kept edges of every sample of a type: (edge_index [2, K], ptr [B+1]
    of each sample's first edge). ei: [2, E] int64 on the device; pos, ptr:
    the removed positions (int64, each sample's sorted and unique, in range)
    and their ptr (ptr[B] == len(pos))."""
    if _use_library(ei):
        return _union_cpu(torch, ei, pos.contiguous(), ptr.contiguous(), B, shift_src,
                          shift_dst)
    return _union_torch(torch, ei, pos, ptr, B, shift_src, shift_dst)


def _use_library(ei):
    """True when _union takes pl_pyg_edges (CPU tensors; the tests' device
    double takes the torch path on the CPU by replacing this)."""
    return ei.device.type == "cpu"


# Bytes of temporaries _union_torch allows itself per chunk of samples: at
# its peak, per edge position of the chunk, an index, its sample and their
# product (8 bytes each; the kept mask, 1 byte, is freed before).
UNION_BUDGET = 1 << 28
_UNION_BYTES = 24


def _union_torch(torch, ei, pos, ptr, B, shift_src, shift_dst, budget=None):
    """_union by vectorised torch ops (the GPU path; it runs on any device):
    a kept mask, its nonzero positions, each one's sample, a gather. The
    samples are taken in chunks whose temporaries fit `budget` bytes (default
    UNION_BUDGET) and whose mask stays under 2^31 positions (torch.nonzero's
    limit in older releases); besides them only the output is allocated.
    More than one chunk reads ptr back to the host (one synchronisation)."""
    dev = ei.device
    E = ei.shape[1]
    budget = UNION_BUDGET if budget is None else budget
    step = max(1, min(B, budget // max(1, _UNION_BYTES * E), (1 << 31) // max(1, E) - 1))
    if step >= B:
        return _union_chunk(torch, ei, pos, ptr, B, shift_src, shift_dst)
    host = ptr.cpu()
    kept = E - (host[1:] - host[:-1])
    eptr = torch.zeros(B + 1, dtype=torch.int64)
    torch.cumsum(kept, 0, out=eptr[1:])
    out = torch.empty((2, int(eptr[-1])), dtype=torch.int64, device=dev)
    for b in range(0, B, step):
        n = min(step, B - b)
        p0, p1 = int(host[b]), int(host[b + n])
        part, _ = _union_chunk(torch, ei, pos[p0:p1], ptr[b:b + n + 1] - p0, n,
                               shift_src, shift_dst, first=b)
        out[:, int(eptr[b]):int(eptr[b + n])] = part
    return out, eptr.to(dev)


def _union_chunk(torch, ei, pos, ptr, B, shift_src, shift_dst, first=0):
    """_union_torch over B samples at once, the first of them sample `first`
    of the batch (its nodes shifted by that many graphs)."""
    dev = ei.device
    E = ei.shape[1]
    keep = torch.ones(B * E, dtype=torch.bool, device=dev)
    if len(pos):
        rows = torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                       output_size=len(pos))
        keep[pos + rows * E] = False
    idx = torch.nonzero(keep).squeeze(1)
    del keep
    kept = E - (ptr[1:] - ptr[:-1])
    eptr = torch.zeros(B + 1, dtype=torch.int64, device=dev)
    torch.cumsum(kept, 0, out=eptr[1:])
    sample = torch.repeat_interleave(torch.arange(B, device=dev), kept, output_size=len(idx))
    e = idx.sub_(sample * E)
    out = ei[:, e]
    if first:
        sample.add_(first)
    if shift_src == shift_dst:
        out.add_(sample.mul_(shift_src))
    else:
        out[0].add_(sample * shift_src)
        out[1].add_(sample.mul_(shift_dst))
    return out, eptr


def _nodes(torch, B, n, dev):
    """A node type's batch vector [B * n] and ptr [B + 1]."""
    ar = torch.arange(B, device=dev)
    return {"num_nodes": B * n, "batch": ar.repeat_interleave(n),
            "ptr": torch.arange(B + 1, device=dev) * n}


def build(torch, lists, graph, B, kinds, dev, edge_types=None):
    """The PyG layout from the removed lists already on `dev`: lists maps a
    slot name to (positions int64, ptr int64); graph is Graph.to_torch(dev);
    edge_types: the gene-gene types to build (None: all)."""
    n_genes = graph["gene"]["num_nodes"]
    out = {"gene": _nodes(torch, B, n_genes, dev)}
    pert, pptr = lists["gene"]
    rows = torch.repeat_interleave(torch.arange(B, device=dev), pptr[1:] - pptr[:-1],
                                   output_size=len(pert))
    glob = pert + rows * n_genes
    pert_mask = torch.zeros(B * n_genes, dtype=torch.bool, device=dev)
    pert_mask[glob] = True
    out["gene"].update(pert_mask=pert_mask, perturbed=glob)
    n_react = graph["reaction"]["num_nodes"] if "reaction" in graph else 0
    n_met = graph["metabolite"]["num_nodes"] if "metabolite" in graph else 0
    n_terms = graph["term"]["num_nodes"] if "term" in graph else 0
    for key, slot_name, n in kinds:
        if slot_name == "gene" or (edge_types is not None and slot_name.startswith("edges/")
                                   and slot_name[6:] not in edge_types):
            continue
        pos, ptr = lists[slot_name]
        if slot_name in ("reaction", "ontology/term"):
            # node types with a kept mask (False: removed reaction, affected term)
            n_nodes = n_react if slot_name == "reaction" else n_terms
            node = _nodes(torch, B, n_nodes, dev)
            mask = torch.ones(B * n_nodes, dtype=torch.bool, device=dev)
            r = torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                        output_size=len(pos))
            mask[pos + r * n_nodes] = False
            node["mask"] = mask
            out[key] = node
            continue
        g = graph.get(key)
        if g is None:
            raise LoaderError(f"layout='pyg': the graph has no {key!r}")
        if slot_name == "gpr":
            shifts = (n_genes, n_react)
        elif slot_name == "rmr":
            shifts = (n_react, n_met)
        elif slot_name == "ontology/annotation":
            shifts = (n_genes, n_terms)
        else:
            shifts = (n_genes, n_genes)
        edge_index, eptr = _union(torch, g["edge_index"], pos, ptr, B, *shifts)
        store = {"edge_index": edge_index, "ptr": eptr}
        if slot_name == "rmr":
            # The kept edges' stoichiometries: the same gather, by edge.
            E = g["edge_index"].shape[1]
            keep = torch.ones(B * E, dtype=torch.bool, device=dev)
            r = torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                        output_size=len(pos))
            keep[pos + r * E] = False
            store["stoichiometry"] = g["stoichiometry"].repeat(B)[keep]
        out[key] = store
    if n_met:
        out["metabolite"] = _nodes(torch, B, n_met, dev)
    return out


def as_hetero_data(mapping):
    """torch_geometric's HeteroData of the mapping where PyG is importable,
    else the mapping itself (the same keys)."""
    try:
        from torch_geometric.data import HeteroData
    except ImportError:
        return mapping
    return HeteroData(mapping)
