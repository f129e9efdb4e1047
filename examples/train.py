#!/usr/bin/python3
"""Train a small model on a pertload database, on the CPU, and report a
held-out metric.

The train and held-out sets come from one database: the levels of its split
column when it has one (a text column of the sample table stored as a
category, `categories: [split]` in a recipe; pertload.DataModule over its
train level, held out its test level, else its val level), otherwise an
80/20 split of the rows (pertload.DataModule over row subsets). The
DataLoaders run pertload.Dataset in worker processes, which ship each batch's
lists in one shared-memory buffer; the training step expands them here
(batch.to_torch(layout=...)) from the graph read once (dm.graph).

The model predicts the first label (fitness) of a deletion from the
embeddings of the deleted genes and, per edge type, the share of edges the
deletion removes (the removed lists, layout="lists").
With --gnn TYPE it instead runs one round of message passing over the kept
edges of TYPE (layout="pyg": every sample's graph without its deleted
edges, as PyG models consume them) and reads out the deleted genes.

usage: train.py [DB] [--epochs 2] [--batch-size 64] [--workers 2]
                [--samples N] [--gnn TYPE] [--seed S] [--split-column NAME]

Without DB it builds the synthetic yeast-scale default (`pertload synth`,
--samples samples, 40,000 unless given) in a temporary directory.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn

import pertload


def synthetic_db(tmp, samples):
    """The synthetic yeast-scale default: 6,607 genes, nine edge types."""
    prog = pertload.program_path()
    inputs, db = os.path.join(tmp, "inputs"), os.path.join(tmp, "db")
    subprocess.run([prog, "synth", inputs, "--samples", str(samples), "--quiet"], check=True)
    with open(os.path.join(inputs, "build-args.txt")) as f:
        args = f.read().splitlines()
    subprocess.run([prog, "build", "-o", db, *args], check=True, stdout=subprocess.DEVNULL)
    return db


class ListsModel(nn.Module):
    """Mean embedding of the deleted genes + per-type removed-edge shares -> MLP."""

    def __init__(self, graph, dim=16):
        super().__init__()
        self.types = graph.type_names
        self.n_edges = torch.tensor([graph.n_edges[t] for t in self.types], dtype=torch.float32)
        self.genes = nn.EmbeddingBag(graph.n_genes, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim + len(self.types), 32), nn.ReLU(),
                                 nn.Linear(32, 1))

    def forward(self, t):
        g = t["gene"]
        emb = self.genes(g["perturbation_indices"], g["perturbation_ptr"][:-1])
        removed = torch.stack([t[("gene", ty, "gene")]["ptr"].diff() for ty in self.types], 1)
        share = removed.float() / self.n_edges.clamp(min=1) * 100
        return self.mlp(torch.cat([emb, share], 1)).squeeze(1)


class GNNModel(nn.Module):
    """One mean-aggregation round over the kept edges of one type, then the
    deleted genes' states, pooled per sample, -> linear."""

    def __init__(self, graph, edge_type, dim=16):
        super().__init__()
        self.key, self.n = ("gene", edge_type, "gene"), graph.n_genes
        self.genes = nn.Embedding(graph.n_genes, dim)
        self.pert = nn.Parameter(torch.zeros(dim))
        self.lin = nn.Linear(2 * dim, dim)
        self.out = nn.Linear(dim, 1)

    def forward(self, t):
        g = t["gene"]
        B = len(g["ptr"]) - 1
        x = self.genes.weight.repeat(B, 1) + g["pert_mask"].unsqueeze(1) * self.pert
        src, dst = t[self.key]["edge_index"]
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(len(x)).index_add_(0, dst, torch.ones(len(dst))).clamp(min=1)
        h = torch.relu(self.lin(torch.cat([x, agg / deg.unsqueeze(1)], 1)))
        # The deleted genes' states, averaged per sample.
        who = torch.nonzero(g["pert_mask"]).squeeze(1)
        sample = g["batch"][who]
        pooled = torch.zeros(B, h.shape[1]).index_add_(0, sample, h[who])
        count = torch.zeros(B).index_add_(0, sample, torch.ones(len(who))).clamp(min=1)
        return self.out(pooled / count.unsqueeze(1)).squeeze(1)


def run_epoch(model, loader, opt=None, timing=None, expand=None):
    """One pass; returns (mean squared error, Pearson r) over labelled samples.
    With a dict `timing`, sets its "wait" (seconds spent waiting for
    batches: the data stall) and "total" (seconds of the pass). `expand`
    turns what the loader yields (the lists a DataLoader worker shipped)
    into the model's input, in this process."""
    sq, n, preds, ys = 0.0, 0, [], []
    wait, t0 = 0.0, time.perf_counter()
    it = iter(loader)
    while True:
        w0 = time.perf_counter()
        t = next(it, None)
        wait += time.perf_counter() - w0
        if t is None:
            break
        if expand is not None:
            t = expand(t)
        # labels: "labels" of a mapping, y of a torch_geometric Batch
        y = (t["labels"] if isinstance(t, dict) else t.y)[:, 0]
        keep = ~torch.isnan(y)
        with torch.set_grad_enabled(opt is not None):
            p = model(t)
            loss = ((p - y)[keep] ** 2).mean()
            if opt is not None and keep.any():
                opt.zero_grad()
                loss.backward()
                opt.step()
        sq += float(((p - y)[keep] ** 2).sum())
        n += int(keep.sum())
        preds.append(p.detach()[keep])
        ys.append(y[keep])
    if timing is not None:
        timing.update(wait=wait, total=time.perf_counter() - t0)
    p, y = torch.cat(preds).numpy(), torch.cat(ys).numpy()
    r = float(np.corrcoef(p, y)[0, 1]) if len(p) > 1 and p.std() > 0 else float("nan")
    return sq / max(n, 1), r


def model_arguments(doc, samples=4000, batch_size=32):
    """The command line of the model examples (pyg_train.py, lazy_train.py):
    DB, --epochs, --batch-size, --workers, --samples, --seed."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("db", nargs="?")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=batch_size)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--seed", type=int, default=0)
    return ap


def datamodule_80_20(db, graph, **opts):
    """A DataModule over a random 80/20 split of the database's rows (by
    opts' seed)."""
    rows = np.random.default_rng(opts.get("seed", 0)).permutation(graph.n_samples)
    cut = len(rows) * 8 // 10
    return pertload.DataModule(db, {"train": rows[:cut], "test": rows[cut:]}, **opts)


def fit(model, opt, train, test, epochs, expand=None):
    """Train and evaluate `epochs` times, a line per epoch with the share of
    the training pass spent waiting for batches (the data stall)."""
    for epoch in range(epochs):
        timing = {}
        mse, r = run_epoch(model, train, opt, timing, expand)
        test_mse, test_r = run_epoch(model, test, expand=expand)
        print(f"epoch {epoch}: train loss (MSE) {mse:.4f}, r {r:.3f}; held-out MSE "
              f"{test_mse:.4f}, r {test_r:.3f} ({timing['total']:.1f} s, data stall "
              f"{timing['wait'] / max(timing['total'], 1e-9):.0%})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", nargs="?")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--samples", type=int, default=40000)
    ap.add_argument("--gnn", metavar="TYPE")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split-column", default="split",
                    help="category column whose levels give the train and held-out sets, "
                         "when the database has it (default: split)")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pertload-train-") as tmp:
        db = a.db or synthetic_db(tmp, a.samples)
        graph = pertload.Loader(db, rank=0, world_size=1).graph
        layout = "pyg" if a.gnn else "lists"
        opts = dict(batch_size=a.batch_size, num_workers=a.workers, seed=a.seed, rank=0,
                    world_size=1)
        if a.split_column in graph.categories:  # the database's own split
            dm = pertload.DataModule(db, split_column=a.split_column, **opts)
            held = "test" if "test" in dm.splits else "val"
            how = f"split column {a.split_column!r}: {dm.splits['train'][1]!r} and " \
                  f"{dm.splits[held][1]!r}"
        else:
            dm = datamodule_80_20(db, graph, **opts)
            held, how = "test", "rows 80/20"
        model = GNNModel(graph, a.gnn) if a.gnn else ListsModel(graph)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        edge_types = [a.gnn] if a.gnn else None

        def expand(batch):  # the lists from the workers, expanded in this process
            return batch.to_torch("cpu", layout=layout, graph=dm.graph, edge_types=edge_types)

        edge_types = [a.gnn] if a.gnn else None

        def expand(batch):  # the lists from the workers, expanded in this process
            return batch.to_torch("cpu", layout=layout, graph=dm.graph, edge_types=edge_types)

        train = dm.train_dataloader()
        test = dm.test_dataloader() if held == "test" else dm.val_dataloader()
        print(f"{graph.n_samples} samples ({dm.datasets['train'].n_samples} train, "
              f"{dm.datasets[held].n_samples} test; {how}), "
              f"{graph.n_genes} genes, {len(graph.type_names)} edge types; "
              f"model {type(model).__name__}, layout {layout!r}", flush=True)
        fit(model, opt, train, test, a.epochs, expand)
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
