"""layout="pyg" with real PyTorch Geometric 2.4.0: a torch_geometric Batch of
HeteroData equal to Batch.from_data_list of per-sample graphs built with
PyG's own subgraph functions from the input files, which PyG models
(HeteroConv, to_hetero, ToUndirected) consume with no glue; and the mapping
without PyG."""

import sys

import numpy as np
import pytest
import torch

import pertload

FOLLOW = ["perturbation_indices"]


def sample_graph(tg, inputs, row, x=None):
    """Sample `row` as PyG would make it from the input files: the shared
    graph with its deletions' edges dropped by torch_geometric.utils.subgraph
    (gene-gene) and bipartite_subgraph (GPR: deleted genes; RMR: reactions
    whose rule fails); node ids, masks and local perturbation indices."""
    from torch_geometric.data import HeteroData
    from torch_geometric.utils import bipartite_subgraph, subgraph

    N, R, M = len(inputs.genes), len(inputs.reactions), len(inputs.metabolites)
    P = torch.tensor(inputs.sample_genes[row], dtype=torch.int64)
    kept = torch.ones(N, dtype=torch.bool)
    kept[P] = False
    want = inputs.expected(row)
    rkept = torch.ones(R, dtype=torch.bool)
    rkept[torch.from_numpy(want["reaction"])] = False
    d = HeteroData()
    for nt, n, mask in (("gene", N, kept), ("reaction", R, rkept),
                        ("metabolite", M, torch.ones(M, dtype=torch.bool))):
        d[nt].num_nodes = n
        d[nt].n_id = torch.arange(n)
        d[nt].mask = mask
        d[nt].pert_mask = ~mask
        if nt == "gene" and x is not None:
            d[nt].x = x
    d["gene"].perturbation_indices = P
    for t in inputs.types:
        ei, _ = subgraph(kept, torch.from_numpy(inputs.edges[t]), num_nodes=N)
        d["gene", t, "gene"].edge_index = ei
    d["gene", "gpr", "reaction"].edge_index, _ = bipartite_subgraph(
        (kept, torch.ones(R, dtype=torch.bool)), torch.from_numpy(inputs.gpr), size=(N, R))
    ei, st = bipartite_subgraph((rkept, torch.ones(M, dtype=torch.bool)),
                                torch.from_numpy(inputs.rmr),
                                torch.from_numpy(inputs.rmr_stoich), size=(R, M))
    d["reaction", "rmr", "metabolite"].edge_index = ei
    d["reaction", "rmr", "metabolite"].stoichiometry = st
    d.y = torch.from_numpy(inputs.labels[row:row + 1])
    d.row = torch.tensor([row])
    return d


def assert_same(a, b, where):
    """Every store of a and b holds the same attributes with equal values."""
    assert set(a.node_types) == set(b.node_types), where
    assert set(a.edge_types) == set(b.edge_types), where
    for store in a.stores:
        other = b[store._key] if store._key is not None else b._global_store
        keys = set(store.keys()) - {"sample_id", "payload"}
        assert keys <= set(other.keys()), (where, store._key, keys - set(other.keys()))
        for k in keys:
            x, y = store[k], other[k]
            if isinstance(x, torch.Tensor):
                assert x.dtype == y.dtype, (where, store._key, k, x.dtype, y.dtype)
                torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True,
                                           msg=f"{where}: {store._key} {k}")
            else:
                assert x == y, (where, store._key, k)


def batches(inputs, **kw):
    loader = pertload.Loader(inputs.db, **kw)
    for batch in loader:
        yield batch, batch.to_torch("cpu", layout="pyg")


@pytest.mark.parametrize("split", [False, True])
def test_pyg_batch_equals_from_data_list_of_subgraphs(small, torch_geometric, split):
    from torch_geometric.data import Batch, HeteroData

    kw = ({"batch_size": 64, "max_ring_bytes": 64 * 1024} if split
          else {"batch_size": 37, "shuffle": True, "seed": 3})
    seen, parts = 0, 0
    for batch, b in batches(small, **kw):
        parts += batch.parts > 1
        rows = batch.row.tolist()
        B = len(rows)
        assert isinstance(b, Batch) and isinstance(b, HeteroData)
        assert b.num_graphs == B and len(b) == B
        for et in b.edge_types:
            assert "ptr" not in b[et], et  # sample offsets live in _slice_dict
        assert "perturbed" not in b["gene"]
        assert b["gene"].perturbation_indices.dtype == torch.int64
        graphs = [sample_graph(torch_geometric, small, r) for r in rows]
        want = Batch.from_data_list(graphs, follow_batch=FOLLOW)
        assert_same(want, b, "vs from_data_list")
        assert_same(b, want, "from_data_list vs")
        for i in (0, B // 2, B - 1):
            assert_same(graphs[i], b.get_example(i), f"sample {i}")
            assert_same(b.get_example(i), graphs[i], f"sample {i}")
        again = Batch.from_data_list(b.to_data_list(), follow_batch=FOLLOW)
        assert_same(again, b, "round trip")
        assert_same(b, again, "round trip")
        seen += B
    assert seen == small.n
    assert parts > 0 if split else parts == 0


def models(torch_geometric, b):
    """A HeteroConv(SAGEConv) model and to_hetero(GraphSAGE), ids embedded."""
    from torch import nn
    from torch_geometric.nn import HeteroConv, SAGEConv, global_mean_pool, to_hetero

    class Net(nn.Module):
        def __init__(self, metadata, n_nodes, dim=8):
            super().__init__()
            self.emb = nn.ModuleDict({nt: nn.Embedding(n, dim) for nt, n in n_nodes.items()})
            self.conv = HeteroConv({et: SAGEConv((dim, dim), dim) for et in metadata[1]},
                                   aggr="sum")
            self.out = nn.Linear(dim, 1)

        def forward(self, data):
            x = {nt: self.emb[nt](data[nt].n_id) for nt in data.node_types}
            h = self.conv(x, data.edge_index_dict)
            pooled = global_mean_pool(h["gene"], data["gene"].batch, size=data.num_graphs)
            return self.out(pooled).squeeze(1)

    class Sage(nn.Module):
        # Two SAGEConv layers, the model of PyG's to_hetero documentation
        # (GraphSAGE itself does not trace under torch 1.13's fx).
        def __init__(self):
            super().__init__()
            self.conv1 = SAGEConv((-1, -1), 8)
            self.conv2 = SAGEConv((-1, -1), 8)

        def forward(self, x, edge_index):
            return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    n_nodes = {nt: int(b[nt].n_id.max()) + 1 for nt in b.node_types}
    torch.manual_seed(0)
    net = Net(b.metadata(), n_nodes)
    sage = to_hetero(Sage(), b.metadata(), aggr="sum")
    return net, sage


def test_pyg_models_run_on_the_batch_with_no_glue(small, torch_geometric):
    from torch_geometric import transforms as T
    from torch_geometric.data import Batch

    loader = pertload.Loader(small.db, batch_size=24, shuffle=True, seed=1)
    batch = next(iter(loader))
    b = batch.to_torch("cpu", layout="pyg")
    want = Batch.from_data_list([sample_graph(torch_geometric, small, r)
                                 for r in batch.row.tolist()], follow_batch=FOLLOW)
    net, sage = models(torch_geometric, b)
    y = b.y[:, 0].nan_to_num()
    out = net(b)
    assert out.shape == (b.num_graphs,)
    torch.testing.assert_close(out, net(want))
    loss = ((out - y) ** 2).mean()
    loss.backward()
    # Gradients reach the gene embedding and every gene-gene convolution.
    assert bool(net.emb["gene"].weight.grad.abs().sum())
    for t in small.types:
        conv = net.conv.convs[("gene", t, "gene")]
        assert bool(conv.lin_l.weight.grad.abs().sum()), t
    x = {nt: torch.randn(len(b[nt].n_id), 8, generator=torch.Generator().manual_seed(2))
         for nt in b.node_types}
    h = sage(x, b.edge_index_dict)
    torch.testing.assert_close(h["gene"], sage(x, want.edge_index_dict)["gene"])
    h["gene"].sum().backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum()) for p in sage.parameters())
    # ToUndirected: what it makes of the batch equals what it makes of PyG's.
    u, w = T.ToUndirected()(b.clone()), T.ToUndirected()(want.clone())
    assert set(u.edge_types) == set(w.edge_types) and len(u.edge_types) > len(b.edge_types)
    for et in u.edge_types:
        assert torch.equal(u[et].edge_index, w[et].edge_index), et
    # No attribute of pertload's own leaks into the homogeneous graph.
    extra = {"sample_id", "payload"}  # global attributes the samples lack here
    assert set(u.to_homogeneous().keys()) - extra == set(w.to_homogeneous().keys())
    assert set(b.to_homogeneous().keys()) - extra == set(want.to_homogeneous().keys())
    loader.close()


def test_edge_types_choose_every_kind(small, torch_geometric):
    loader = pertload.Loader(small.db, batch_size=40)
    batch = next(iter(loader))
    rows = batch.row.tolist()
    graphs = [sample_graph(torch_geometric, small, r) for r in rows]
    for layout in ("pyg", "lazy"):
        for chosen in (["gpr"], ["rmr", small.types[0]], [small.types[1]]):
            b = batch.to_torch("cpu", layout=layout, edge_types=chosen)
            assert sorted(et[1] for et in b.edge_types) == sorted(chosen), layout
            assert set(b.node_types) == {"gene", "reaction", "metabolite"}
            if layout == "pyg":
                for et in b.edge_types:
                    want = torch.cat([g[et].edge_index + torch.tensor(
                        [[i * g[et[0]].num_nodes], [i * g[et[2]].num_nodes]])
                        for i, g in enumerate(graphs)], 1)
                    assert torch.equal(b[et].edge_index, want), et
    with pytest.raises(ValueError, match="no edge type 'nope'"):
        batch.to_torch("cpu", layout="lazy", edge_types=["gpr", "nope"])
    loader.close()


def test_without_torch_geometric_the_mapping(small, torch_geometric, monkeypatch):
    """Where torch_geometric does not import: the mapping, edge ptr and the
    deleted genes' batch indices ("perturbed") included."""
    loader = pertload.Loader(small.db, batch_size=30)
    batch = next(iter(loader))
    b = batch.to_torch("cpu", layout="pyg")
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    m = batch.to_torch("cpu", layout="pyg")
    assert type(m) is dict
    B, N = len(batch), len(small.genes)
    for et in b.edge_types:
        assert torch.equal(m[et]["edge_index"], b[et].edge_index)
        assert torch.equal(m[et]["ptr"], b._slice_dict[et]["edge_index"])
    for nt in b.node_types:
        for k in ("n_id", "mask", "pert_mask", "batch", "ptr"):
            assert torch.equal(m[nt][k], b[nt][k]), (nt, k)
    assert torch.equal(m["gene"]["perturbation_indices"], b["gene"].perturbation_indices)
    pert = torch.nonzero(m["gene"]["pert_mask"]).squeeze(1)
    assert torch.equal(m["gene"]["perturbed"], pert)
    assert torch.equal(pert % N, b["gene"].perturbation_indices)
    assert torch.equal(pert // N, b["gene"].perturbation_indices_batch)
    assert m["gene"]["num_nodes"] == B * N
    torch.testing.assert_close(m["labels"], b.y, equal_nan=True)
    loader.close()


def test_node_features_gathered_as_x(small, torch_geometric, tmp_path):
    from torch_geometric.data import Batch

    N, R = len(small.genes), len(small.reactions)
    rng = np.random.default_rng(5)
    fg = rng.standard_normal((N, 6)).astype(np.float16)
    fr = rng.standard_normal((R, 3)).astype(np.float32)
    np.save(tmp_path / "reaction.npy", fr)
    loader = pertload.Loader(small.db, batch_size=20,
                             features={"gene": fg, "reaction": tmp_path / "reaction.npy"})
    batch = next(iter(loader))
    rows = batch.row.tolist()
    b = batch.to_torch("cpu", layout="pyg")
    assert b["gene"].x.dtype == torch.float16 and b["gene"].x.shape == (len(rows) * N, 6)
    graphs = [sample_graph(torch_geometric, small, r, x=torch.from_numpy(fg)) for r in rows]
    for g in graphs:
        g["reaction"].x = torch.from_numpy(fr)
    assert_same(Batch.from_data_list(graphs, follow_batch=FOLLOW), b, "features")
    assert_same(graphs[3], b.get_example(3), "features of sample 3")
    lz = batch.to_torch("cpu", layout="lazy")
    assert torch.equal(lz["reaction"].x, torch.from_numpy(fr).repeat(len(rows), 1))
    assert "x" not in lz["metabolite"]
    loader.close()
    bad = {"rows": (np.zeros((N + 1, 4), np.float32), r"shape \(301, 4\), \[300, F\]"),
           "dtype": (np.zeros((N, 4), np.float64), "dtype float64, float32 or float16"),
           "rank": (np.zeros(N, np.float32), r"shape \(300,\)")}
    for why, (a, msg) in bad.items():
        with pytest.raises(ValueError, match="features of 'gene': " + msg):
            pertload.Loader(small.db, features={"gene": a})
    with pytest.raises(ValueError, match="the graph has no node type 'cell'"):
        pertload.Loader(small.db, features={"cell": fg})


@pytest.mark.parametrize("layout", ["pyg", "lazy"])
def test_khop_parts_in_the_batch(small, torch_geometric, layout):
    """k-hop lists in a Batch: the gene mask flat, the genes local with
    _ptr/_batch, each walked type's mask over the store's edges (the kept
    ones in layout pyg), capped per sample; against the mapping (checked
    against a BFS by test_khop) and through the to_data_list round trip."""
    from torch_geometric.data import Batch

    loader = pertload.Loader(small.db, batch_size=25, khop=1)
    batch = next(iter(loader))
    b = batch.to_torch("cpu", layout=layout)
    plain = batch.to_torch("cpu", layout="masks")
    g, pg = b["gene"], plain["gene"]
    assert torch.equal(g.khop_mask, pg["khop_mask"].reshape(-1))
    assert torch.equal(g.khop_genes, pg["khop_genes"])
    assert torch.equal(g.khop_genes_ptr, pg["khop_ptr"])
    assert torch.equal(b.khop_capped, pg["khop_capped"])
    walked = 0
    for t in small.types:
        key = ("gene", t, "gene")
        if "khop_mask" not in plain[key]:
            continue
        walked += 1
        want = plain[key]["khop_mask"].reshape(-1)
        if layout == "pyg":
            want = want[plain[key]["mask"].reshape(-1)]
        assert torch.equal(b[key].khop_mask, want), t
        assert "khop_edges" not in b[key] and "khop_ptr" not in b[key]
    assert walked == len(small.types)
    again = Batch.from_data_list(b.to_data_list(), follow_batch=FOLLOW + ["khop_genes"])
    for store in b.stores:
        for k, x in store.items():
            if k.startswith("khop"):
                y = again[store._key][k] if store._key else again[k]
                assert torch.equal(x, y), (store._key, k)
    loader.close()


def test_ontology_parts_in_the_batch(small, torch_geometric, tmp_path, monkeypatch):
    """With an ontology: node store term (mask False = affected term,
    pert_mask, n_id) and ("gene", "annotated", "term") edges, in both
    layouts; equal to the masks layout (checked against a brute-force
    closure by test_ontology_batches) and through the round trip."""
    import random

    from torch_geometric.data import Batch

    from conftest import run_cli
    from test_ontology import write_ontology

    write_ontology(tmp_path / "onto.txt", small.genes, random.Random(11))
    run_cli("build", "-o", tmp_path / "db", *small.build_args, "--ontology-dcell",
            tmp_path / "onto.txt", "--quiet")
    loader = pertload.Loader(tmp_path / "db", batch_size=21)
    batch = next(iter(loader))
    B, N = len(batch), len(small.genes)
    masks = batch.to_torch("cpu")
    ann = loader.graph.ontology.annotation_index
    T = loader.graph.ontology.n_terms
    key = ("gene", "annotated", "term")
    tiled = torch.cat([torch.from_numpy(ann) + torch.tensor([[i * N], [i * T]])
                       for i in range(B)], 1)
    kept = masks[key]["mask"].reshape(-1)
    for layout in ("pyg", "lazy"):
        b = batch.to_torch("cpu", layout=layout)
        assert torch.equal(b["term"].mask, masks["term"]["mask"].reshape(-1)), layout
        assert torch.equal(b["term"].pert_mask, ~b["term"].mask)
        assert torch.equal(b["term"].n_id, torch.arange(T).repeat(B))
        if layout == "pyg":
            assert torch.equal(b[key].edge_index, tiled[:, kept])
        else:
            assert torch.equal(b[key].edge_index, tiled) and torch.equal(b[key].mask, kept)
        again = Batch.from_data_list(b.to_data_list(), follow_batch=FOLLOW)
        for k in ("mask", "pert_mask", "n_id", "batch", "ptr"):
            assert torch.equal(again["term"][k], b["term"][k]), (layout, k)
        assert torch.equal(again[key].edge_index, b[key].edge_index), layout
    loader.close()
