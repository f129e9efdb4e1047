"""The PyG batch layout of a batch: the disjoint union of its samples' graphs.

Sample i of a batch of B is a copy of the shared graph whose nodes are
shifted by i times the node count of their type and which keeps only the
edges that survive its deletions. Per edge type the kept edges of every
sample are concatenated in sample order, each sample's in the graph's edge
order, as torch_geometric's Batch.from_data_list would; the layout is built
from the shared graph already on the device and the batch's removed lists,
with no loop over samples in Python: on the CPU one pass of the library's
pl_pyg_edges per type (runs of kept edges copied and shifted), on a GPU one
launch of the library's kernels per edge and node type (pertload.kernels),
with no synchronisation; where the library has no CUDA kernels, a few
vectorised torch ops per type.
"""

import ctypes

from . import _layouts, _lib, kernels
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


def _nodes(torch, B, n, dev, graph_node=None):
    """A node type's store: num_nodes B * n, batch [B * n], ptr [B + 1], n_id
    [B * n] (each node's row in the shared graph), mask (True = kept) and
    pert_mask (its negation), nothing removed yet; x [B * n, F] gathered
    from the shared graph's features when it has them."""
    ar = torch.arange(B, device=dev)
    n_id = torch.arange(n, device=dev).repeat(B)
    store = {"num_nodes": B * n, "batch": ar.repeat_interleave(n),
             "ptr": torch.arange(B + 1, device=dev) * n, "n_id": n_id,
             "mask": torch.ones(B * n, dtype=torch.bool, device=dev),
             "pert_mask": torch.zeros(B * n, dtype=torch.bool, device=dev)}
    if graph_node is not None and "x" in graph_node:
        store["x"] = graph_node["x"].index_select(0, n_id)
    return store


def _nodes_kernels(torch, B, n, dev, graph_node, lists=None):
    """_nodes by one kernel launch, the list's entries removed (mask False,
    pert_mask True) in the same pass."""
    pos, ptr = lists if lists is not None else (None, None)
    store = kernels.nodes(torch, n, B, dev, pos, ptr)
    if graph_node is not None and "x" in graph_node:
        store["x"] = graph_node["x"].index_select(0, store["n_id"])
    return store


def _node_stores_kernels(torch, lists, graph, B, dev):
    """node_stores by the kernels: one launch per node type and one for the
    deleted genes' samples and batch indices ("perturbed", which
    layout "pyg" keeps)."""
    out = {}
    n_genes = graph["gene"]["num_nodes"]
    pert, pptr = lists["gene"]
    gene = out["gene"] = _nodes_kernels(torch, B, n_genes, dev, graph["gene"], lists["gene"])
    rows, perturbed = kernels.rows(torch, pert, pptr, B, n_genes, shifted=True)
    gene.update(perturbation_indices=pert, perturbation_indices_ptr=pptr,
                perturbation_indices_batch=rows)
    for node, node_lists in _other_nodes(lists, graph):
        out[node] = _nodes_kernels(torch, B, graph[node]["num_nodes"], dev, graph[node],
                                   node_lists)
    return out, perturbed


def _other_nodes(lists, graph):
    """(node type, its removed lists or None) of the node types beside the
    gene the graph and the batch have: reaction (removed reactions),
    metabolite (none removed), term (affected terms)."""
    for node, slot_name in (("reaction", "reaction"), ("metabolite", None),
                            ("term", "ontology/term")):
        if node in graph and (slot_name is None or slot_name in lists):
            yield node, lists[slot_name] if slot_name is not None else None


def node_stores(torch, lists, graph, B, dev):
    """The node stores of the pyg and lazy layouts (see _nodes): gene with
    the deleted genes (pert_mask True, mask False) and perturbation_indices
    (their rows in the shared graph, int64, every sample's in turn) with
    perturbation_indices_ptr [B + 1] and perturbation_indices_batch; with
    metabolism reaction (mask False: removed reaction) and metabolite; with
    an ontology term (mask False: affected term)."""
    if kernels.enabled(dev):
        return _node_stores_kernels(torch, lists, graph, B, dev)[0]
    out = {}
    n_genes = graph["gene"]["num_nodes"]
    gene = out["gene"] = _nodes(torch, B, n_genes, dev, graph["gene"])
    pert, pptr = lists["gene"]
    rows = _layouts.rows_of(torch, pptr, len(pert), dev)
    gene["mask"][pert + rows * n_genes] = False
    gene["pert_mask"] = ~gene["mask"]
    gene.update(perturbation_indices=pert, perturbation_indices_ptr=pptr,
                perturbation_indices_batch=rows)
    for node, node_lists in _other_nodes(lists, graph):
        n = graph[node]["num_nodes"]
        store = out[node] = _nodes(torch, B, n, dev, graph[node])
        if node_lists is not None:
            pos, ptr = node_lists
            store["mask"][pos + _layouts.rows_of(torch, ptr, len(pos), dev) * n] = False
            store["pert_mask"] = ~store["mask"]
    return out


def build(torch, lists, graph, B, kinds, dev, edge_types=None):
    """The PyG layout from the removed lists already on `dev`: lists maps a
    slot name to (positions int64, ptr int64); graph is Graph.to_torch(dev);
    edge_types: the relations of the edge types to build (None: all). The
    mapping: node stores (node_stores) with, on gene, "perturbed" (the
    deleted genes' node indices in the batch); per edge type "edge_index"
    and "ptr" (each sample's first edge), RMR with "stoichiometry"."""
    fast = kernels.enabled(dev)
    if fast:
        out, perturbed = _node_stores_kernels(torch, lists, graph, B, dev)
        out["gene"]["perturbed"] = perturbed
    else:
        out = node_stores(torch, lists, graph, B, dev)
        gene = out["gene"]
        gene["perturbed"] = torch.nonzero(gene["pert_mask"]).squeeze(1)
    for key, slot_name in _layouts.chosen(kinds, edge_types):
        pos, ptr = lists[slot_name]
        g = graph.get(key)
        if g is None:
            raise LoaderError(f"layout='pyg': the graph has no {key!r}")
        if fast:
            attr = g["stoichiometry"] if slot_name == "rmr" else None
            edge_index, eptr, st = kernels.union(torch, g["edge_index"], pos, ptr, B,
                                                 *_layouts.shifts(graph, key), attr=attr)
            out[key] = {"edge_index": edge_index, "ptr": eptr}
            if st is not None:
                out[key]["stoichiometry"] = st.to(g["stoichiometry"].dtype)
            continue
        edge_index, eptr = _union(torch, g["edge_index"], pos, ptr, B,
                                  *_layouts.shifts(graph, key))
        store = {"edge_index": edge_index, "ptr": eptr}
        if slot_name == "rmr":
            # The kept edges' stoichiometries: the same gather, by edge.
            E = g["edge_index"].shape[1]
            keep = torch.ones(B * E, dtype=torch.bool, device=dev)
            keep[pos + _layouts.rows_of(torch, ptr, len(pos), dev) * E] = False
            store["stoichiometry"] = g["stoichiometry"].repeat(B)[keep]
        out[key] = store
    return out


# Node store entries the Batch derives (not sliced per sample): PyG's
# from_data_list rebuilds batch and ptr, and the _ptr/_batch pair of
# perturbation_indices with follow_batch=["perturbation_indices"].
_DERIVED = {"num_nodes", "batch", "ptr", "perturbed", "perturbation_indices_ptr",
            "perturbation_indices_batch", "khop_ptr", "khop_genes_ptr", "khop_genes_batch",
            "khop_capped"}
# Per-sample values of the whole batch: mapping key, Batch attribute.
GLOBALS = (("labels", "y"), ("sample_id", "sample_id"), ("row", "row"), ("payload", "payload"))


def torch_geometric():
    """(Batch, HeteroData) of torch_geometric, or None where it does not
    import (pertload does not need it)."""
    try:
        from torch_geometric.data import Batch, HeteroData
    except ImportError:
        return None
    return Batch, HeteroData


def finish(torch, out, B, layout, lists):
    """The mapping of layout "pyg" or "lazy" (and its k-hop entries) as
    as_batch makes it a Batch: the k-hop gene mask flat [B * N], the k-hop
    genes' ptr and batch as khop_genes_ptr / khop_genes_batch, per walked
    edge type khop_mask over the store's edges (the kept ones in the pyg
    layout, all B * E in the lazy one; khop_edges and khop_ptr, positions in
    the graph's arrays, left out). Without torch_geometric, `out` as it is."""
    if torch_geometric() is None:
        return out
    dev = out["gene"]["batch"].device
    gene = out["gene"]
    if "khop_mask" in gene:
        gene["khop_mask"] = gene["khop_mask"].reshape(-1)
        gene["khop_genes_ptr"] = gene.pop("khop_ptr")
        gene["khop_genes_batch"] = _layouts.rows_of(torch, gene["khop_genes_ptr"],
                                                    len(gene["khop_genes"]), dev)
    if layout == "lazy":
        slices = _layouts.edge_slices(torch, out, B, dev)
    else:
        slices = {k: ("edge_index", v.pop("ptr")) for k, v in out.items()
                  if isinstance(k, tuple)}
    for key in slices:
        v = out[key]
        if "khop_mask" not in v:
            continue
        del v["khop_edges"], v["khop_ptr"]
        mask = v["khop_mask"]
        E = mask.shape[1]
        mask = mask.reshape(-1)
        if layout == "pyg":
            pos, ptr = lists["edges/" + key[1]]
            mask = mask[_layouts.kept_mask(torch, pos, ptr, B, E, dev)]
        v["khop_mask"] = mask
    return as_batch(torch, out, B, slices)


def as_batch(torch, out, B, edge_slices):
    """The mapping `out` of a layout (pyg or lazy) as a torch_geometric
    Batch of HeteroData where PyG imports, else `out` itself.

    edge_slices: {edge key: (attribute of the node pairs, each sample's
    first edge [B + 1])}. Node stores keep their entries but those that are
    derived (batch, ptr, perturbation_indices_ptr/_batch: rebuilt by
    Batch.from_data_list with follow_batch=["perturbation_indices"]); edge
    stores keep theirs but "ptr" (each sample's first edge is in
    _slice_dict); labels become y [B, L]. _slice_dict and _inc_dict are those
    Batch.from_data_list would make from the samples' graphs, so
    get_example(i) / to_data_list() give them back."""
    pyg = torch_geometric()
    if pyg is None:
        return out
    Batch, HeteroData = pyg
    dev = out["gene"]["batch"].device
    zeros = torch.zeros(B, dtype=torch.int64, device=dev)
    per_sample = torch.arange(B + 1, device=dev)
    per_n, per_pair = {}, {}

    def times(n):  # per_sample * n, made once per node count
        if n not in per_n:
            per_n[n] = per_sample * n
        return per_n[n]

    def increments(src, dst):  # [B, 2, 1]: each sample's (src, dst) node offsets
        if (src, dst) not in per_pair:  # no torch.tensor(..., device): a blocking copy
            ar = per_sample[:B]
            per_pair[src, dst] = torch.stack((ar * src, ar * dst), 1).view(B, 2, 1)
        return per_pair[src, dst]
    # The stores' contents as one mapping, given to the constructor at once
    # (HeteroData(mapping) fills each store as store.update does): the
    # per-attribute assignments of a store cost more than the layout's launches.
    mapping, slices, incs, n_of = {}, {}, {}, {}
    for key, v in out.items():
        if isinstance(key, tuple) or not isinstance(v, dict):
            continue
        n = n_of[key] = v["num_nodes"] // B if B else 0
        m = mapping[key] = {"num_nodes": v["num_nodes"]}
        sl, inc = slices[key], incs[key] = {}, {}
        for attr, t in v.items():
            if attr in _DERIVED:
                continue
            m[attr] = t
            sl[attr] = v[attr + "_ptr"] if attr + "_ptr" in v else times(n)
            inc[attr] = zeros
        m["batch"], m["ptr"] = v["batch"], v["ptr"]
        for attr in ("perturbation_indices", "khop_genes"):
            if attr in v:
                m[attr + "_ptr"] = v[attr + "_ptr"]
                m[attr + "_batch"] = v[attr + "_batch"]
    for key, (index, eptr) in edge_slices.items():
        v = out[key]
        m = mapping[key] = {}
        sl, inc = slices[key], incs[key] = {}, {}
        for attr, t in v.items():
            if attr == "ptr":
                continue
            m[attr] = t
            sl[attr] = eptr
            inc[attr] = zeros
            if attr == index:
                inc[attr] = increments(n_of[key[0]], n_of[key[2]])
            elif not isinstance(t, torch.Tensor):
                sl[attr], inc[attr] = per_sample, None
    for key, attr in GLOBALS:
        if key in out:
            mapping[attr] = out[key]
            slices[attr], incs[attr] = per_sample, zeros
    if "khop_capped" in out.get("gene", {}):
        mapping["khop_capped"] = out["gene"]["khop_capped"]
        slices["khop_capped"], incs["khop_capped"] = per_sample, zeros
    b = Batch(_base_cls=HeteroData, _mapping=mapping)
    for key, n in n_of.items():
        b[key]._num_nodes = [n] * B
    b._num_graphs = B
    b._slice_dict, b._inc_dict = slices, incs
    return b
