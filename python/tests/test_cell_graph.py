"""TorchCell's models with no glue: Graph.to_pyg (the shared graph as the
HeteroData TorchCell calls cell_graph) against the input files, the label
keys of Graph.add_phenotypes against the sample table, TorchCell's reaction
rule by --reaction-rule any, and a model written from the structure of
TorchCell's lazy GeneInteractionDango (masked GIN over the nine gene-gene
types, reading cell_graph and the lazy batch) run on pertload's output as
it comes."""

import math
import random
import sys

import numpy as np
import pytest
import torch
from torch import nn

import pertload
from conftest import db_graph, run_cli
from test_ontology import write_ontology


@pytest.fixture(scope="module")
def featured(small, tmp_path_factory):
    """small's database with an ontology and a stored gene feature matrix."""
    tmp = tmp_path_factory.mktemp("featured")
    write_ontology(tmp / "onto.txt", small.genes, random.Random(4))
    feats = np.random.default_rng(1).standard_normal((len(small.genes), 5)).astype(np.float32)
    np.save(tmp / "genes.npy", feats)
    run_cli("build", "-o", tmp / "db", *small.build_args, "--ontology-dcell", tmp / "onto.txt",
            "--node-features", f"gene={tmp / 'genes.npy'}", "--quiet")
    return tmp / "db", feats


def check_gene_graph(cg, small):
    """cg holds small's genes, nine gene-gene types, GPR and RMR as the
    input files give them."""
    assert len(small.types) == 9
    gene = cg["gene"]
    assert gene.num_nodes == len(small.genes) and gene.node_ids == small.genes
    assert cg["reaction"].num_nodes == len(small.reactions)
    assert cg["reaction"].node_ids == small.reactions
    assert cg["metabolite"].node_ids == small.metabolites
    for t in small.types:
        store = cg["gene", t, "gene"]
        assert torch.equal(store.edge_index, torch.from_numpy(small.edges[t])), t
        assert store.num_edges == small.edges[t].shape[1]
    gpr, rmr = cg["gene", "gpr", "reaction"], cg["reaction", "rmr", "metabolite"]
    assert torch.equal(gpr.hyperedge_index, torch.from_numpy(small.gpr))
    assert torch.equal(rmr.hyperedge_index, torch.from_numpy(small.rmr))
    assert torch.equal(rmr.stoichiometry, torch.from_numpy(small.rmr_stoich))
    assert "edge_index" not in gpr and "edge_index" not in rmr
    for store in cg.stores:  # the whole graph: nothing of a batch
        assert not {"batch", "ptr", "mask", "pert_mask"} & set(store.keys()), store._key


def test_to_pyg_is_the_shared_graph(small, featured, torch_geometric):
    from torch_geometric.data import Batch, HeteroData

    g = db_graph(small.db)
    cg = g.to_pyg("cpu")
    assert isinstance(cg, HeteroData) and not isinstance(cg, Batch)
    check_gene_graph(cg, small)
    edge_types = {("gene", t, "gene") for t in small.types}
    edge_types |= {("gene", "gpr", "reaction"), ("reaction", "rmr", "metabolite")}
    assert set(cg.edge_types) == edge_types
    assert set(cg.node_types) == {"gene", "reaction", "metabolite"}
    assert all("x" not in cg[nt] for nt in cg.node_types)
    # kept per device, sharing the tensors uploaded for the layouts
    assert g.to_pyg("cpu") is cg and g.to_pyg(torch.device("cpu")) is cg
    assert cg["gene", "physical", "gene"].edge_index is \
        g.tensors_on("cpu")[("gene", "physical", "gene")]["edge_index"]
    # features given to the loader: made again, x = the matrix
    x = np.arange(len(small.reactions) * 3, dtype=np.float32).reshape(-1, 3)
    g.set_features({"reaction": x})
    again = g.to_pyg("cpu")
    assert again is not cg and torch.equal(again["reaction"].x, torch.from_numpy(x))
    assert "x" not in again["gene"]

    # an ontology and stored features
    db, feats = featured
    g = db_graph(db)
    cg = g.to_pyg("cpu")
    check_gene_graph(cg, small)
    assert torch.equal(cg["gene"].x, torch.from_numpy(feats))
    o = g.ontology
    assert cg["term"].num_nodes == o.n_terms and cg["term"].node_ids == list(o.term_names)
    ann = cg["gene", "annotated", "term"]
    assert torch.equal(ann.edge_index, torch.from_numpy(o.annotation_index))
    assert ann.num_edges == o.n_annotations
    assert set(cg.node_types) == {"gene", "reaction", "metabolite", "term"}


def test_to_pyg_without_torch_geometric(small, torch_geometric, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    with pytest.raises(ImportError, match=r"pip install torch_geometric"):
        db_graph(small.db).to_pyg("cpu")


def expected_phenotypes(small, rows, names):
    """TorchCell's COO labels of the samples at `rows`, from the sample
    table: per sample its known labels in the order of `names`, or one NaN
    of type 0."""
    cols = [small.label_names.index(n) for n in names]
    per = []
    for r in rows:
        got = [(small.labels[r, c], k) for k, c in enumerate(cols)
               if not math.isnan(small.labels[r, c])]
        per.append(got or [(math.nan, 0)])
    return per


def check_phenotypes(data, per, names, example=False):
    """data's label keys are those of `per`; an example (get_example) has
    no ptr or batch of its values."""
    gene = data["gene"]
    vals = torch.tensor([v for p in per for v, _ in p], dtype=torch.float32)
    torch.testing.assert_close(gene["phenotype_values"], vals, equal_nan=True)
    assert gene["phenotype_type_indices"].tolist() == [k for p in per for _, k in p]
    assert gene["phenotype_sample_indices"].tolist() == [0] * len(vals)
    if not example:
        assert gene["phenotype_types"] == [names] * len(per)
    if example:
        assert gene["phenotype_types"] == names
        return
    counts = [len(p) for p in per]
    assert gene["phenotype_values_ptr"].tolist() == [0, *np.cumsum(counts).tolist()]
    assert gene["phenotype_values_batch"].tolist() == [i for i, n in enumerate(counts)
                                                       for _ in range(n)]


@pytest.mark.parametrize("pyg_present", [True, False])
def test_phenotype_keys_equal_the_sample_table(small, torch_geometric, monkeypatch,
                                               pyg_present):
    from torch_geometric.data import Batch

    if not pyg_present:
        monkeypatch.setitem(sys.modules, "torch_geometric", None)
        monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    loader = pertload.Loader(small.db, batch_size=50)
    g = loader.graph
    missing = np.isnan(small.labels)
    assert missing.any(1).any() and missing.all(1).any(), "the table must test both cases"
    seen = 0
    for batch in loader:
        rows = batch.row.tolist()
        for layout in ("lazy", "pyg"):
            for names in (None, list(reversed(small.label_names)), small.label_names[1:]):
                data = batch.to_torch("cpu", layout=layout)
                assert g.add_phenotypes(data, names) is data
                want = names or small.label_names
                per = expected_phenotypes(small, rows, want)
                check_phenotypes(data, per, want)
                y = data.y if pyg_present else data["labels"]
                torch.testing.assert_close(y, torch.from_numpy(batch.labels), equal_nan=True)
                if not pyg_present:
                    continue
                assert isinstance(data, Batch)
                for i in (0, len(rows) - 1):
                    check_phenotypes(data.get_example(i), [per[i]], want, example=True)
                again = Batch.from_data_list(data.to_data_list(), follow_batch=[
                    "perturbation_indices", "phenotype_values"])
                check_phenotypes(again, per, want)
        seen += len(rows)
    assert seen == small.n
    data = next(iter(loader)).to_torch("cpu", layout="lazy")
    with pytest.raises(ValueError, match=r"add_phenotypes: no label 'nope' \(the database's "
                                         r"labels: fitness, gene_interaction\)"):
        g.add_phenotypes(data, ["fitness", "nope"])
    with pytest.raises(ValueError, match=r"add_phenotypes: no label given"):
        g.add_phenotypes(data, [])
    loader.close()


def test_reaction_rule_any_is_torchcells(small, tmp_path):
    """TorchCell removes a reaction when any of its GPR genes is deleted:
    pertload's reaction rule any; the default (gpr: the rule decides) keeps
    some of those reactions, and the lazy GPR edge masks give TorchCell's
    reaction masks under either rule (docs/models.md)."""
    db = tmp_path / "any.db"
    run_cli("build", "-o", db, *small.build_args, "--reaction-rule", "any", "--quiet")
    assert db_graph(db).reaction_rule == "any" and db_graph(small.db).reaction_rule == "gpr"
    R = len(small.reactions)
    differ = 0
    for d, gpr_rule in ((db, False), (small.db, True)):
        for batch in pertload.Loader(d, batch_size=100):
            data = batch.to_torch("cpu", layout="lazy", edge_types=["gpr"])
            mask = data["reaction"]["mask"].view(len(batch), R)
            for i, r in enumerate(batch.row.tolist()):
                deleted = np.isin(small.gpr[0], small.sample_genes[r])
                torchcell = np.ones(R, bool)  # reactions without genes stay
                torchcell[small.gpr[1][deleted]] = False
                if gpr_rule:
                    differ += int((mask[i].numpy() != torchcell).any())
                    # docs/models.md: TorchCell's mask from the lazy GPR edges
                    gpr = data["gene", "gpr", "reaction"]
                    E = gpr["hyperedge_index"].shape[1] // len(batch)
                    lost = gpr["hyperedge_index"][1][~gpr["mask"]] - i * R
                    lost = lost[(lost >= 0) & (lost < R)]
                    assert np.array_equal(~np.isin(np.arange(R), lost.numpy()), torchcell), r
                    assert E == small.gpr.shape[1]
                else:
                    assert np.array_equal(mask[i].numpy(), torchcell), r
    assert differ > 0


class MaskedGIN(nn.Module):
    """A GIN layer over the edges a mask keeps (True = kept; no mask: all):
    mlp((1 + eps) x_i + sum of x_j over kept edges j -> i)."""

    def __init__(self, dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.eps = nn.Parameter(torch.zeros(1))

    def forward(self, x, edge_index, mask=None):
        if mask is not None:
            edge_index = edge_index[:, mask]
        src, dst = edge_index
        return self.mlp((1 + self.eps) * x + torch.zeros_like(x).index_add(0, dst, x[src]))


class LazyInteractionModel(nn.Module):
    """The structure of TorchCell's lazy GeneInteractionDango: one gene
    embedding expanded over the batch's full graphs, masked GIN layers over
    the gene-gene types summed per layer, the wild type (cell_graph) and the
    perturbed batch through the same layers, a global head over the
    difference of their pooled kept genes and a local head over the deleted
    genes' wild-type embeddings. Reads cell_graph and the batch by TorchCell's
    keys only."""

    def __init__(self, n_genes, types, dim=8, layers=2):
        super().__init__()
        self.types = list(types)
        self.emb = nn.Embedding(n_genes, dim)
        self.pre = nn.Sequential(nn.Linear(dim, dim), nn.LayerNorm(dim), nn.ReLU())
        self.layers = nn.ModuleList(nn.ModuleDict({t: MaskedGIN(dim) for t in self.types})
                                    for _ in range(layers))
        self.global_head = nn.Linear(dim, 1)
        self.local_head = nn.Linear(dim, 1)

    def single(self, data):
        gene = data["gene"]
        if hasattr(gene, "batch"):  # a batch: B full graphs
            B = len(gene.ptr) - 1
            x = self.emb.weight.expand(B, -1, -1).reshape(-1, self.emb.weight.shape[1])
        else:
            x = self.emb(torch.arange(gene.num_nodes))
        x = self.pre(x)
        for convs in self.layers:
            out = 0
            for t, conv in convs.items():
                if ("gene", t, "gene") not in data.edge_types:
                    continue
                store = data["gene", t, "gene"]
                out = out + conv(x, store.edge_index, getattr(store, "mask", None))
            x = torch.relu(out)
        return x

    def forward(self, cell_graph, batch):
        z_w = self.single(cell_graph)
        z_w_global = z_w.mean(0, keepdim=True)
        z_i = self.single(batch)
        gene = batch["gene"]
        B = len(gene.ptr) - 1
        kept = ~gene.pert_mask
        idx = gene.batch[kept]
        sums = torch.zeros(B, z_i.shape[1]).index_add(0, idx, z_i[kept])
        z_i_global = sums / torch.bincount(idx, minlength=B).clamp(min=1).unsqueeze(1)
        pert = z_w[gene.perturbation_indices]
        counts = gene.perturbation_indices_ptr.diff()
        assign = torch.repeat_interleave(torch.arange(B), counts)
        local = torch.zeros(B, pert.shape[1]).index_add(0, assign, pert)
        local = local / counts.clamp(min=1).unsqueeze(1)
        return (self.global_head(z_w_global - z_i_global) + self.local_head(local)).squeeze(1)


def test_torchcell_lazy_model_runs_with_no_glue(small, torch_geometric):
    from torch_geometric.data import HeteroData

    torch.manual_seed(0)
    loader = pertload.Loader(small.db, batch_size=32, shuffle=True, seed=2)
    graph = loader.graph
    cell_graph = graph.to_pyg("cpu")
    model = LazyInteractionModel(graph.n_genes, graph.type_names)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    # the cell_graph TorchCell builds by hand from the same files
    by_hand = HeteroData()
    by_hand["gene"].num_nodes = len(small.genes)
    by_hand["gene"].node_ids = small.genes
    for t in small.types:
        by_hand["gene", t, "gene"].edge_index = torch.from_numpy(small.edges[t])
    losses = []
    for step, batch in enumerate(loader):
        data = graph.add_phenotypes(batch.to_torch("cpu", layout="lazy"), ["gene_interaction"])
        pred = model(cell_graph, data)
        if step == 0:
            torch.testing.assert_close(pred, model(by_hand, data))
        y = data["gene"].phenotype_values
        assert pred.shape == y.shape == (len(batch),)
        known = ~torch.isnan(y)
        loss = ((pred[known] - y[known]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for t, conv in model.layers[0].items():
            assert conv.mlp[0].weight.grad.abs().sum() > 0, t
        opt.step()
        losses.append(loss.item())
    assert len(losses) == math.ceil(small.n / 32) and all(map(math.isfinite, losses))
    loader.close()
