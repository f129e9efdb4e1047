"""The PyG batch layout of a batch: the disjoint union of its samples' graphs.

Sample i of a batch of B is a copy of the shared graph whose nodes are
shifted by i times the node count of their type and which keeps only the
edges that survive its deletions. Per edge type the kept edges of every
sample are concatenated in sample order, each sample's in the graph's edge
order, as torch_geometric's Batch.from_data_list would; the layout is built
from the shared graph already on the device and the batch's removed lists
with a few vectorised ops per type (no loop over samples).
"""

from ._lib import LoaderError


def _union(torch, ei, pos, ptr, B, shift_src, shift_dst):
    """The kept edges of every sample of a type: (edge_index [2, K], ptr [B+1]
    of each sample's first edge). ei: [2, E] int64 on the device; pos, ptr:
    the removed positions (int64, each sample's sorted and unique, in range)
    and their ptr."""
    dev = ei.device
    E = ei.shape[1]
    keep = torch.ones(B * E, dtype=torch.bool, device=dev)
    if len(pos):
        rows = torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                       output_size=len(pos))
        keep[pos + rows * E] = False
    idx = torch.nonzero(keep).squeeze(1)
    kept = E - (ptr[1:] - ptr[:-1])
    eptr = torch.zeros(B + 1, dtype=torch.int64, device=dev)
    torch.cumsum(kept, 0, out=eptr[1:])
    sample = torch.repeat_interleave(torch.arange(B, device=dev), kept, output_size=len(idx))
    e = idx.sub_(sample * E)
    out = ei[:, e]
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


def build(torch, lists, graph, B, kinds, dev):
    """The PyG layout from the removed lists already on `dev`: lists maps a
    slot name to (positions int64, ptr int64); graph is Graph.to_torch(dev)."""
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
    for key, slot_name, n in kinds:
        if slot_name == "gene":
            continue
        pos, ptr = lists[slot_name]
        if slot_name == "reaction":
            node = _nodes(torch, B, n_react, dev)
            mask = torch.ones(B * n_react, dtype=torch.bool, device=dev)
            r = torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                        output_size=len(pos))
            mask[pos + r * n_react] = False
            node["mask"] = mask
            out["reaction"] = node
            continue
        g = graph.get(key)
        if g is None:
            raise LoaderError(f"layout='pyg': the graph has no {key!r}")
        if slot_name == "gpr":
            shifts = (n_genes, n_react)
        elif slot_name == "rmr":
            shifts = (n_react, n_met)
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
