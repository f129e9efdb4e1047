#!/usr/bin/python3
"""Train a PyTorch Geometric HeteroConv model on pertload batches.

Each batch comes as layout="pyg": a torch_geometric Batch of HeteroData,
every sample's graph without its deleted genes' edges, which PyG models
take as they are. The model embeds each node by its id in the shared graph
(data[node_type].n_id), or projects its features (x) with --features, runs
two HeteroConv(SAGEConv) rounds over every edge type, and reads out the
fitness (first label) from the deleted genes' states and the mean gene
state of each sample. Train and held-out sets: an 80/20 split of the rows,
through pertload.DataModule (--workers worker processes).

usage: pyg_train.py [DB] [--epochs 2] [--batch-size 32] [--workers 0]
                    [--samples N] [--features GENE_FEATURES.npy] [--seed S]

Needs torch_geometric. Without DB it builds the synthetic yeast-scale
default (examples/train.py) with --samples samples (4,000 unless given).
"""
import sys
import tempfile
import time

import torch
from torch import nn
from torch_geometric.nn import HeteroConv, SAGEConv, global_mean_pool

import pertload
import train  # the sibling example: the database, the split, the epochs


class HeteroNet(nn.Module):
    def __init__(self, graph, metadata, dim=16, features=None):
        super().__init__()
        counts = graph.node_counts()
        self.embed = nn.ModuleDict({
            nt: nn.Linear(features[nt].shape[1], dim) if features and nt in features
            else nn.Embedding(counts[nt], dim) for nt in metadata[0]})
        self.convs = nn.ModuleList([
            HeteroConv({et: SAGEConv((dim, dim), dim) for et in metadata[1]}, aggr="sum")
            for _ in range(2)])
        self.out = nn.Linear(2 * dim, 1)

    def forward(self, data):
        x = {nt: self.embed[nt](data[nt].x.float() if "x" in data[nt] else data[nt].n_id)
             for nt in data.node_types}
        for conv in self.convs:
            h = conv(x, data.edge_index_dict)
            x = {nt: torch.relu(h[nt]) if nt in h else x[nt] for nt in x}
        g = data["gene"]
        deleted = global_mean_pool(x["gene"][g.pert_mask], g.batch[g.pert_mask],
                                   size=data.num_graphs)
        everyone = global_mean_pool(x["gene"], g.batch, size=data.num_graphs)
        return self.out(torch.cat([deleted, everyone], 1)).squeeze(1)


def main():
    ap = train.model_arguments(__doc__)
    ap.add_argument("--features", metavar="NPY", help="gene features [n_genes, F]")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pertload-pyg-") as tmp:
        db = a.db or train.synthetic_db(tmp, a.samples)
        features = {"gene": a.features} if a.features else None
        graph = pertload.Loader(db, rank=0, world_size=1, features=features).graph
        dm = train.datamodule_80_20(db, graph, batch_size=a.batch_size,
                                    num_workers=a.workers, seed=a.seed, layout="pyg",
                                    rank=0, world_size=1, features=features)
        first = next(iter(pertload.Loader(db, batch_size=2, rank=0, world_size=1)))
        metadata = first.to_torch(layout="pyg", graph=graph).metadata()
        model = HeteroNet(graph, metadata, features=graph.features)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        print(f"{graph.n_samples} samples, {graph.n_genes} genes, {len(metadata[1])} edge "
              f"types; HeteroConv(SAGEConv) x 2, layout 'pyg'"
              f"{', gene features ' + a.features if a.features else ''}", flush=True)
        train.fit(model, opt, dm.train_dataloader(), dm.test_dataloader(), a.epochs)
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
