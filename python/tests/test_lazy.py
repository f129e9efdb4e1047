"""layout="lazy": TorchCell's lazy batch (every sample's full graph with
boolean masks, TorchCell's LazySubgraphRepresentation samples put together
by its lazy_collate_hetero), against a reimplementation written here from
the documented semantics over per-sample graphs made from the input files,
and a masked message-passing model in TorchCell's style run on both."""

import sys

import numpy as np
import pytest
import torch
from torch import nn

import pertload

HYPER = {"gpr", "rmr"}


def lazy_sample(inputs, row):
    """Sample `row` as a lazy representation: the whole graph, masks True
    for what the deletions keep (an edge is kept when no end is deleted; a
    GPR edge when its gene is not; a reaction when its rule holds with the
    deleted genes false; an RMR edge when its reaction is kept)."""
    N, R, M = len(inputs.genes), len(inputs.reactions), len(inputs.metabolites)
    P = np.array(inputs.sample_genes[row], np.int64)
    gene_kept = np.ones(N, bool)
    gene_kept[P] = False
    deleted = {inputs.genes[g] for g in P}
    from conftest import rule_holds
    r_kept = np.array([not inputs.rules.get(r) or rule_holds(inputs.rules[r], deleted)
                       for r in range(R)])
    t = torch.from_numpy
    s = {"gene": {"num_nodes": N, "n_id": torch.arange(N), "perturbation_indices": t(P),
                  "mask": t(gene_kept), "pert_mask": t(~gene_kept)},
         "reaction": {"num_nodes": R, "n_id": torch.arange(R), "mask": t(r_kept),
                      "pert_mask": t(~r_kept)},
         "metabolite": {"num_nodes": M, "n_id": torch.arange(M),
                        "mask": torch.ones(M, dtype=torch.bool),
                        "pert_mask": torch.zeros(M, dtype=torch.bool)}}
    for ty in inputs.types:
        src, dst = inputs.edges[ty]
        s[("gene", ty, "gene")] = {"edge_index": t(inputs.edges[ty]), "num_edges": len(src),
                                   "mask": t(gene_kept[src] & gene_kept[dst])}
    s[("gene", "gpr", "reaction")] = {"hyperedge_index": t(inputs.gpr),
                                      "num_edges": inputs.gpr.shape[1],
                                      "mask": t(gene_kept[inputs.gpr[0]])}
    s[("reaction", "rmr", "metabolite")] = {"hyperedge_index": t(inputs.rmr),
                                            "num_edges": inputs.rmr.shape[1],
                                            "stoichiometry": t(inputs.rmr_stoich),
                                            "mask": t(r_kept[inputs.rmr[0]])}
    return s


def lazy_collate(samples):
    """The lazy collate as documented: per edge type each sample's node
    pairs shifted by the node counts of the samples before it (source and
    destination type each), masks and other tensors concatenated, other
    values listed; per node type tensors concatenated (perturbation
    indices stay local), a batch vector, the node counts summed."""
    out = {}
    first = samples[0]
    before = {k: np.cumsum([0] + [s[k]["num_nodes"] for s in samples[:-1]])
              for k in first if not isinstance(k, tuple)}
    for key, v in first.items():
        if isinstance(key, tuple):
            e = out[key] = {}
            for attr in v:
                vals = [s[key][attr] for s in samples]
                if attr.endswith("edge_index"):
                    e[attr] = torch.cat([x + torch.tensor([[before[key[0]][i]],
                                                           [before[key[2]][i]]])
                                         for i, x in enumerate(vals)], 1)
                elif isinstance(vals[0], torch.Tensor):
                    e[attr] = torch.cat(vals)
                else:
                    e[attr] = vals
        else:
            n = out[key] = {a: torch.cat([s[key][a] for s in samples])
                            for a in v if a != "num_nodes"}
            n["num_nodes"] = sum(s[key]["num_nodes"] for s in samples)
            n["batch"] = torch.cat([torch.full((s[key]["num_nodes"],), i)
                                    for i, s in enumerate(samples)])
    counts = torch.tensor([len(s["gene"]["perturbation_indices"]) for s in samples])
    out["gene"]["perturbation_indices_ptr"] = torch.cat([torch.zeros(1, dtype=torch.int64),
                                                         counts.cumsum(0)])
    return out


def check(got, want, where):
    for key, v in want.items():
        for attr, x in v.items():
            y = got[key][attr]
            if isinstance(x, torch.Tensor):
                assert x.dtype == y.dtype, (where, key, attr, x.dtype, y.dtype)
                assert torch.equal(y, x), (where, key, attr)
            else:
                assert y == x, (where, key, attr)


class MaskedNet(nn.Module):
    """Masked message passing over the full graphs: per gene-gene type sum
    the kept edges' messages into their destination genes, GPR hyperedges'
    kept genes into their reactions; pool genes and reactions per sample."""

    def __init__(self, n_genes, types, dim=8):
        super().__init__()
        self.emb = nn.Embedding(n_genes, dim)
        self.lin = nn.ModuleDict({t: nn.Linear(dim, dim) for t in types})
        self.gpr = nn.Linear(dim, dim)
        self.out = nn.Linear(2 * dim, 1)

    def forward(self, b, B):
        g = b["gene"]
        h = self.emb(g["n_id"]) * g["mask"].unsqueeze(1)
        agg = torch.zeros_like(h)
        for t, lin in self.lin.items():
            e = b[("gene", t, "gene")]
            src, dst = e["edge_index"][:, e["mask"]]
            agg = agg.index_add(0, dst, lin(h)[src])
        h = torch.relu(h + agg)
        gpr = b[("gene", "gpr", "reaction")]
        genes, reactions = gpr["hyperedge_index"][:, gpr["mask"]]
        r = torch.zeros(b["reaction"]["num_nodes"], h.shape[1]).index_add(
            0, reactions, self.gpr(h)[genes])
        pool = [torch.zeros(B, h.shape[1]).index_add(0, b[nt]["batch"], x)
                for nt, x in (("gene", h), ("reaction", r))]
        return self.out(torch.cat(pool, 1)).squeeze(1)


@pytest.mark.parametrize("pyg_present", [True, False])
def test_lazy_layout_equals_the_documented_collate(small, torch_geometric, monkeypatch,
                                                   pyg_present):
    from torch_geometric.data import Batch

    if not pyg_present:
        monkeypatch.setitem(sys.modules, "torch_geometric", None)
        monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    seen = 0
    for kw in ({"batch_size": 33, "shuffle": True, "seed": 4},
               {"batch_size": 64, "max_ring_bytes": 64 * 1024}):
        for batch in pertload.Loader(small.db, **kw):
            rows = batch.row.tolist()
            B = len(rows)
            got = batch.to_torch("cpu", layout="lazy")
            samples = [lazy_sample(small, r) for r in rows]
            want = lazy_collate(samples)
            check(got, want, f"rows {rows[:3]}")
            if pyg_present:
                assert isinstance(got, Batch) and got.num_graphs == B
                torch.testing.assert_close(got.y, torch.from_numpy(batch.labels),
                                           equal_nan=True)
                for i in (0, B - 1):  # sample i: its own lazy graph
                    check(got.get_example(i), samples[i], f"sample {i}")
                again = Batch.from_data_list(got.to_data_list(),
                                             follow_batch=["perturbation_indices"])
                for store in got.stores:
                    for k, x in store.items():
                        y = again[store._key][k] if store._key else again[k]
                        y = y.tolist() if isinstance(x, list) else y
                        assert (torch.equal(x, y) if k != "y" else
                                torch.allclose(x, y, equal_nan=True)) if isinstance(
                            x, torch.Tensor) else x == y, (store._key, k)
            else:
                assert type(got) is dict
                torch.testing.assert_close(got["labels"], torch.from_numpy(batch.labels),
                                           equal_nan=True)
            seen += B
    assert seen == 2 * small.n


def test_masked_message_passing_forward_and_backward(small, torch_geometric):
    loader = pertload.Loader(small.db, batch_size=40, shuffle=True, seed=9)
    batch = next(iter(loader))
    B = len(batch)
    got = batch.to_torch("cpu", layout="lazy")
    want = lazy_collate([lazy_sample(small, r) for r in batch.row.tolist()])
    torch.manual_seed(0)
    net = MaskedNet(len(small.genes), small.types)
    out = net(got, B)
    torch.testing.assert_close(out, net(want, B))
    y = got.y[:, 0].nan_to_num()
    ((out - y) ** 2).mean().backward()
    assert bool(net.emb.weight.grad.abs().sum()) and bool(net.gpr.weight.grad.abs().sum())
    for t, lin in net.lin.items():
        assert bool(lin.weight.grad.abs().sum()), t
    loader.close()
