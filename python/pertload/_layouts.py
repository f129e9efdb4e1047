"""What the two graph layouts share (pertload.pyg: each sample's kept
edges; pertload.lazy: the whole graph per sample with masks): the sample of
each entry of a list, the node-count shifts of an edge type, the edge types
to build, the mask of kept edges over a tiled graph, and the edge slices a
lazy mapping hands to pyg.as_batch. Every function takes the torch module
(imported by the caller) and works on the device its tensors are on."""


def rows_of(torch, ptr, n, dev):
    """The sample of each of the n entries of a list with ptr [B + 1]."""
    B = len(ptr) - 1
    return torch.repeat_interleave(torch.arange(B, device=dev), ptr[1:] - ptr[:-1],
                                   output_size=n)


def shifts(graph, key):
    """(source, destination) node counts of an edge key: each sample's
    offsets."""
    return graph[key[0]]["num_nodes"], graph[key[2]]["num_nodes"]


def chosen(kinds, edge_types):
    """(key, slot name) of the edge kinds to build: every edge kind, or
    those whose relation (the middle of the key: a gene-gene type, "gpr",
    "rmr", "annotated") is in edge_types."""
    return [(key, slot_name) for key, slot_name, _ in kinds
            if isinstance(key, tuple) and (edge_types is None or key[1] in edge_types)]


def kept_mask(torch, pos, ptr, B, E, dev):
    """bool [B * E]: False at each sample's removed positions (sample-major)."""
    keep = torch.ones(B * E, dtype=torch.bool, device=dev)
    keep[pos + rows_of(torch, ptr, len(pos), dev) * E] = False
    return keep


def edge_slices(torch, out, B, dev):
    """{edge key: (attribute of the node pairs, each sample's first edge)}
    of a lazy mapping, for pyg.as_batch."""
    res = {}
    for key, v in out.items():
        if isinstance(key, tuple):
            name = "hyperedge_index" if "hyperedge_index" in v else "edge_index"
            E = v[name].shape[1] // B if B else 0
            res[key] = (name, torch.arange(B + 1, device=dev) * E)
    return res
