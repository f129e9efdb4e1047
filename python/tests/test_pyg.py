"""batch.to_torch(device, layout="pyg"): the disjoint union of the samples'
graphs, against a brute-force construction, one sample at a time, from the
input files alone (the oracle of DESIGN section 2)."""

import numpy as np
import pytest
import torch

import pertload

# The mapping without torch_geometric (test_pyg_batch.py checks the Batch).
pytestmark = pytest.mark.usefixtures("without_pyg")


def brute_force(inputs, rows):
    """The PyG layout of the samples `rows`, built sample by sample: per edge
    type the edges that survive, nodes shifted by the sample's position."""
    N, R = len(inputs.genes), len(inputs.reactions)
    M = len(inputs.metabolites)
    out = {("gene", t, "gene"): [] for t in inputs.types}
    out[("gene", "gpr", "reaction")] = []
    out[("reaction", "rmr", "metabolite")] = []
    stoich, pert_mask, reaction_mask = [], np.zeros(len(rows) * N, bool), []
    for i, row in enumerate(rows):
        want = inputs.expected(row)
        pert_mask[np.array(want["gene"], np.int64) + i * N] = True
        for t in inputs.types:
            ei = inputs.edges[t]
            keep = np.ones(ei.shape[1], bool)
            keep[want["edges/" + t]] = False
            out[("gene", t, "gene")].append(ei[:, keep] + i * N)
        keep = np.ones(inputs.gpr.shape[1], bool)
        keep[want["gpr"]] = False
        out[("gene", "gpr", "reaction")].append(inputs.gpr[:, keep] +
                                               np.array([[i * N], [i * R]]))
        keep = np.ones(inputs.rmr.shape[1], bool)
        keep[want["rmr"]] = False
        out[("reaction", "rmr", "metabolite")].append(inputs.rmr[:, keep] +
                                                     np.array([[i * R], [i * M]]))
        stoich.append(inputs.rmr_stoich[keep])
        rm = np.ones(R, bool)
        rm[want["reaction"].astype(np.int64)] = False
        reaction_mask.append(rm)
    edges = {k: (np.concatenate(v, axis=1),
                 np.concatenate([[0], np.cumsum([x.shape[1] for x in v])]))
             for k, v in out.items()}
    return edges, pert_mask, np.concatenate(stoich), np.concatenate(reaction_mask)


def check(t, inputs, batch_rows, labels, device):
    B = len(batch_rows)
    N, R = len(inputs.genes), len(inputs.reactions)
    M = len(inputs.metabolites)
    edges, pert_mask, stoich, reaction_mask = brute_force(inputs, batch_rows)

    def eq(got, want, what):
        assert got.device.type == torch.device(device).type, what
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=what)

    for key, (ei, eptr) in edges.items():
        eq(t[key]["edge_index"], ei, f"{key} edge_index")
        eq(t[key]["ptr"], eptr, f"{key} ptr")
    eq(t[("reaction", "rmr", "metabolite")]["stoichiometry"], stoich, "stoichiometry")
    for node, n in (("gene", N), ("reaction", R), ("metabolite", M)):
        assert t[node]["num_nodes"] == B * n
        eq(t[node]["batch"], np.repeat(np.arange(B), n), f"{node} batch")
        eq(t[node]["ptr"], np.arange(B + 1) * n, f"{node} ptr")
    eq(t["gene"]["pert_mask"], pert_mask, "pert_mask")
    eq(t["gene"]["perturbed"], np.flatnonzero(pert_mask), "perturbed")
    eq(t["reaction"]["mask"], reaction_mask, "reaction mask")
    eq(t["labels"], labels, "labels")
    eq(t["row"], np.array(batch_rows), "row")


def devices():
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", devices())
def test_pyg_layout_equals_per_sample_construction(small, device):
    seen = 0
    for batch in pertload.Loader(small.db, batch_size=37, shuffle=True, seed=5):
        rows = batch.row.tolist()
        t = batch.to_torch(device, layout="pyg")
        check(t, small, rows, batch.labels, device)
        seen += len(rows)
    assert seen == small.n


def test_pyg_layout_of_split_batches_and_copies(small):
    """Batches that came in parts, copies, and an explicit graph."""
    loader = pertload.Loader(small.db, batch_size=64, max_ring_bytes=64 * 1024)
    graph = loader.graph.to_torch("cpu")
    parts = 0
    for batch in loader:
        parts += batch.parts > 1
        c = batch.copy()
        check(c.to_torch("cpu", layout="pyg"), small, batch.row.tolist(), batch.labels, "cpu")
        check(batch.to_torch("cpu", layout="pyg", graph=graph), small, batch.row.tolist(),
              batch.labels, "cpu")
    assert parts > 0


def test_pyg_layout_refuses_lists_that_are_not_sets(small):
    loader = pertload.Loader(small.db, batch_size=16)
    for batch in loader:
        c = batch.copy()
        t = next(iter(small.types))
        pos, ptr = c.removed[t]
        i = int(np.argmax(np.diff(ptr) >= 2))  # a sample with two removed edges
        assert ptr[i + 1] - ptr[i] >= 2
        pos[ptr[i] + 1] = pos[ptr[i]]  # a duplicate
        with pytest.raises(pertload.LoaderError, match=f"pyg layout: sample {i}: removed "
                           f"position {pos[ptr[i]]} is not above the one before"):
            c.to_torch("cpu", layout="pyg", edge_types=[t])
        if torch.cuda.is_available():
            with pytest.raises(pertload.LoaderError, match=f"edges/{t} positions of a "
                               "sample are not increasing"):
                c.to_torch("cuda", layout="pyg")
        c.to_torch("cpu")  # the mask layout does not count: a duplicate is harmless there
        break
    loader.close()


def test_pyg_layout_needs_a_graph_outside_a_loader(small):
    from pertload.batch import Batch

    loader = pertload.Loader(small.db, batch_size=8)
    for batch in loader:
        b = Batch(batch.copy().arrays, batch._head, batch._kinds,
                  fingerprints=(batch.gene_fingerprint, batch.edge_fingerprints))
        with pytest.raises(ValueError, match="needs graph="):
            b.to_torch("cpu", layout="pyg")
        check(b.to_torch("cpu", layout="pyg", graph=loader.graph.to_torch("cpu")), small,
              batch.row.tolist(), batch.labels, "cpu")
        # A Graph: checked against the batch's fingerprints, its tensors kept.
        check(b.to_torch("cpu", layout="pyg", graph=loader.graph), small,
              batch.row.tolist(), batch.labels, "cpu")
        assert loader.graph.tensors_on("cpu") is loader.graph.tensors_on("cpu")
        with pytest.raises(ValueError, match="is for layout='pyg'"):
            b.to_torch("cpu", graph=loader.graph.to_torch("cpu"))
        with pytest.raises(ValueError, match="layout is"):
            b.to_torch("cpu", layout="dense")
        lists, masks = b.to_torch("cpu", layout="lists"), b.to_torch("cpu")
        for key, v in masks.items():
            if not isinstance(v, dict):
                torch.testing.assert_close(lists[key], v, rtol=0, atol=0, equal_nan=True)
            elif key == "gene":
                assert lists[key].keys() == {"perturbation_indices", "perturbation_ptr"}
                for k, x in lists[key].items():
                    assert torch.equal(x, v[k]), k
            else:
                assert lists[key].keys() == {"removed", "ptr"}
                for k, x in lists[key].items():
                    assert torch.equal(x, v[k]), (key, k)
        break
    loader.close()


def test_pyg_layout_of_chosen_edge_types(small):
    loader = pertload.Loader(small.db, batch_size=50)
    one, other = small.types[0], small.types[1]
    for batch in loader:
        t = batch.to_torch("cpu", layout="pyg", edge_types=[one])
        assert ("gene", one, "gene") in t and ("gene", other, "gene") not in t
        edges, *_ = brute_force(small, batch.row.tolist())
        np.testing.assert_array_equal(t[("gene", one, "gene")]["edge_index"].numpy(),
                                      edges[("gene", one, "gene")][0])
        with pytest.raises(ValueError, match="no edge type 'nope'"):
            batch.to_torch("cpu", layout="pyg", edge_types=["nope"])
        with pytest.raises(ValueError, match="option of layout='pyg'"):
            batch.to_torch("cpu", edge_types=[one])
    assert not batch.released


def test_vectorised_union_equals_the_library_kernel(medium):
    """The GPU path's ops (run here on the CPU) give what pl_pyg_edges gives."""
    from pertload import pyg

    loader = pertload.Loader(medium.db, batch_size=48, shuffle=True)
    g = loader.graph.to_torch("cpu")
    n = 0
    for batch in loader:
        for t, (pos, ptr) in batch.removed.items():
            ei = g[("gene", t, "gene")]["edge_index"]
            p, q = torch.from_numpy(pos).long(), torch.from_numpy(ptr).clone()
            a = pyg._union_cpu(torch, ei, p, q, len(batch), 300, 7)
            b = pyg._union_torch(torch, ei, p, q, len(batch), 300, 7)
            assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), t
            n += 1
    assert n == len(loader) * len(medium.types)


def test_pyg_edges_refuses_bad_lists_before_writing(small):
    """pl_pyg_edges checks every list before it writes: a later sample that
    removes more positions than there are edges (duplicates) makes the
    output smaller than an earlier sample's kept edges; nothing is written,
    not even within the output."""
    import ctypes

    from pertload import _lib

    ei = np.ascontiguousarray(small.edges[small.types[0]])
    E = ei.shape[1]
    cases = {
        "removes": (np.zeros(E + 1, np.int64), np.array([0, 0, E + 1], np.int64)),
        "not above the one before": (np.array([1, 1], np.int64), np.array([0, 0, 2])),
        "out of range": (np.array([E], np.int64), np.array([0, 0, 1])),
        "ptr decreases": (np.array([0], np.int64), np.array([0, 1, 0])),
        "ptr[0] is 1, not 0": (np.array([0], np.int64), np.array([1, 1])),
    }
    for why, (pos, ptr) in cases.items():
        ptr = ptr.astype(np.int64)
        B = len(ptr) - 1
        cap = max(B * E - len(pos), 0)
        out = np.full((2, cap + 64), -7, np.int64)  # a guard after the output
        eptr = np.full(B + 1, -7, np.int64)
        err = _lib.PlErr()
        rc = _lib.lib().pl_pyg_edges(ei[0].ctypes.data, ei[1].ctypes.data, E, pos.ctypes.data,
                                     ptr.ctypes.data, B, 10, 10, out[0].ctypes.data,
                                     out[1].ctypes.data, eptr.ctypes.data, ctypes.byref(err))
        assert rc < 0 and why in err.text(rc), (why, err.text(rc))
        assert (out == -7).all() and (eptr == -7).all(), why
