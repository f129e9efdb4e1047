#!/usr/bin/python3
"""Train a masked message-passing model, in the style of TorchCell's lazy
models, on pertload batches.

Each batch comes as layout="lazy": per edge type the whole graph's edges
tiled once per sample with a boolean mask (True = kept), GPR and RMR as
hyperedge_index, node masks (mask: kept; pert_mask: deleted) and the local
perturbation_indices with perturbation_indices_ptr. The model never
filters a graph: deleted genes' states are zeroed by the gene mask and
messages flow only along kept edges (the mask weighs them), per gene-gene
type and from genes into their reactions along kept GPR edges. The readout
takes the deleted genes (perturbation_indices, local ids, with their
sample from perturbation_indices_ptr), the mean gene state and the mean
kept-reaction state of each sample. Train and held-out sets: an 80/20
split of the rows, through pertload.DataModule.

usage: lazy_train.py [DB] [--epochs 2] [--batch-size 32] [--workers 0]
                     [--samples N] [--seed S]

Runs with or without torch_geometric (a Batch or a mapping, read alike).
Without DB it builds the synthetic yeast-scale default (examples/train.py).
"""
import sys
import tempfile
import time

import torch
from torch import nn

import pertload
import train  # the sibling example: the database, the split, the epochs


def mean_by(x, index, n):
    """Mean of the rows of x grouped by index (0..n-1)."""
    s = torch.zeros(n, x.shape[1], dtype=x.dtype).index_add_(0, index, x)
    c = torch.zeros(n, dtype=x.dtype).index_add_(0, index, torch.ones(len(index)))
    return s / c.clamp(min=1).unsqueeze(1)


class MaskedNet(nn.Module):
    def __init__(self, graph, dim=16):
        super().__init__()
        self.n_genes = graph.n_genes
        self.types = graph.type_names
        self.genes = nn.Embedding(graph.n_genes, dim)
        self.lin = nn.ModuleDict({t: nn.Linear(dim, dim) for t in self.types})
        self.self_lin = nn.Linear(dim, dim)
        self.gpr = nn.Linear(dim, dim)
        self.out = nn.Linear(3 * dim, 1)

    def forward(self, b):
        g = b["gene"]
        B = len(g["ptr"]) - 1
        keep = g["mask"].unsqueeze(1).float()
        h = self.genes(g["n_id"]) * keep
        msg = self.self_lin(h)
        for t in self.types:
            e = b[("gene", t, "gene")]
            src, dst = e["edge_index"]
            w = e["mask"].float().unsqueeze(1)  # kept edges only
            msg = msg.index_add(0, dst, self.lin[t](h)[src] * w)
        h = torch.relu(msg) * keep
        gpr = b[("gene", "gpr", "reaction")]
        genes, reactions = gpr["hyperedge_index"]
        n_r = len(b["reaction"]["n_id"])
        r = torch.zeros(n_r, h.shape[1]).index_add(
            0, reactions, self.gpr(h)[genes] * gpr["mask"].float().unsqueeze(1))
        r = torch.relu(r) * b["reaction"]["mask"].float().unsqueeze(1)
        # The deleted genes' original states: their local ids plus their sample's offset.
        pi, ptr = g["perturbation_indices"], g["perturbation_indices_ptr"]
        sample = torch.repeat_interleave(torch.arange(B), ptr.diff())
        deleted = mean_by(self.genes(pi), sample, B)
        pooled = [deleted, mean_by(h, g["batch"], B), mean_by(r, b["reaction"]["batch"], B)]
        return self.out(torch.cat(pooled, 1)).squeeze(1)


def main():
    ap = train.model_arguments(__doc__)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pertload-lazy-") as tmp:
        db = a.db or train.synthetic_db(tmp, a.samples)
        graph = pertload.Loader(db, rank=0, world_size=1).graph
        if not graph.has_metabolism:
            raise SystemExit("lazy_train.py: the model reads GPR edges; the database has none")
        dm = train.datamodule_80_20(db, graph, batch_size=a.batch_size,
                                    num_workers=a.workers, seed=a.seed, layout="lazy",
                                    rank=0, world_size=1)
        model = MaskedNet(graph)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        print(f"{graph.n_samples} samples, {graph.n_genes} genes, {len(graph.type_names)} "
              f"edge types; masked message passing, layout 'lazy'", flush=True)
        train.fit(model, opt, dm.train_dataloader(), dm.test_dataloader(), a.epochs)
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
