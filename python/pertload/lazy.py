"""The lazy batch layout: every sample's full graph with masks, as masked
message-passing models (TorchCell's lazy models) consume it.

Sample i of a batch of B is the whole shared graph, its nodes shifted by i
times the node count of their type, with a boolean mask per edge (True =
kept: the sample's deletions do not remove it). Per edge type the graph's
edges are tiled B times, sample-major (sample i's copy is edges i*E ..
(i+1)*E - 1, in the graph's order), so the mask of an edge is the negation
of the removed lists at the same position. Gene-gene types carry
"edge_index"; GPR (gene -> reaction) and RMR (reaction -> metabolite) carry
"hyperedge_index", RMR also "stoichiometry"; the ontology's annotations
"edge_index". Every edge store has "num_edges", the graph's edge count per
sample (a list). Node stores are those of the pyg layout (pertload.pyg).

It is built on the device from the shared graph already there and the
batch's removed lists: one kernel launch per type (pertload.kernels) where
the library has its CUDA kernels, else one tiling and one indexed store per
type; no loop over samples, no synchronisation.
"""

from . import _layouts, kernels, pyg
from ._lib import LoaderError

# Edge kinds whose node pairs are hyperedges in TorchCell's graphs.
HYPEREDGES = {"gpr", "rmr"}


def tile(torch, ei, B, shift_src, shift_dst):
    """ei [2, E] repeated B times, copy i's nodes shifted by (i * shift_src,
    i * shift_dst): [2, B * E], written in one broadcast add."""
    E = ei.shape[1]
    dev = ei.device
    step = torch.tensor([shift_src, shift_dst], dtype=ei.dtype, device=dev).view(2, 1, 1)
    offsets = torch.arange(B, dtype=ei.dtype, device=dev).view(1, B, 1) * step
    return torch.add(ei.view(2, 1, E), offsets).view(2, B * E)


def build(torch, lists, graph, B, kinds, dev, edge_types=None):
    """The lazy layout from the removed lists already on `dev` (as
    pyg.build): node stores (pyg.node_stores) and per chosen edge type
    {"edge_index" or "hyperedge_index" [2, B * E], "mask" bool [B * E],
    "num_edges" [E] * B}, RMR with "stoichiometry" [B * E]."""
    out = pyg.node_stores(torch, lists, graph, B, dev)
    fast = kernels.enabled(dev)
    for key, slot_name in _layouts.chosen(kinds, edge_types):
        g = graph.get(key)
        if g is None:
            raise LoaderError(f"layout='lazy': the graph has no {key!r}")
        pos, ptr = lists[slot_name]
        E = g["edge_index"].shape[1]
        name = "hyperedge_index" if key[1] in HYPEREDGES else "edge_index"
        if fast:  # one launch: the tiled edges, their masks and attribute
            st = g.get("stoichiometry")
            ei, mask, st_out = kernels.tile(torch, g["edge_index"], pos, ptr, B,
                                            *_layouts.shifts(graph, key), attr=st)
            out[key] = store = {name: ei, "mask": mask, "num_edges": [E] * B}
            if st is not None:
                store["stoichiometry"] = st_out.to(st.dtype)
            continue
        store = {name: tile(torch, g["edge_index"], B, *_layouts.shifts(graph, key)),
                 "mask": _layouts.kept_mask(torch, pos, ptr, B, E, dev), "num_edges": [E] * B}
        if "stoichiometry" in g:
            store["stoichiometry"] = g["stoichiometry"].repeat(B)
        out[key] = store
    return out
