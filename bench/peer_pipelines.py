#!/usr/bin/python3
"""pertload beside the Python pipelines it replaces, on the same samples, in one run.

Pipelines, each turning samples (deleted genes, labels) into what a training
step needs, measured in samples/s on this machine:
  lazy_masks     the lazy mask pipeline, emulated with numpy: per sample and per
                 edge type a boolean mask from a per-gene incidence cache
                 (np.ones, then False at every incident edge of a deleted gene),
                 stacked per batch. It omits the per-sample edge_index copies
                 of the pipeline it stands for, so it errs on the fast side.
  indices_only   the pipeline that computes no masks: per sample a torch tensor
                 of perturbation indices and labels, collated per batch with
                 torch.cat and a ptr (the DANGO-style baseline).
  pertload       pertload.Loader: `pertload serve` computes the removed edges of
                 every type and the metabolism lists and collates them into a
                 shared-memory ring; this process iterates the batches.
Ratios are pertload's samples/s over each peer's.

usage: peer_pipelines.py DB [--lazy-samples N] [--indices-samples N] [--batch-size B]
"""
import argparse
import sys
import time

import numpy as np
import torch

import pertload


def samples_of(loader, n):
    """(genes, labels) of the first n samples of the database, in row order."""
    out = []
    for batch in loader:
        ptr, idx = batch.perturbation_ptr, batch.perturbation_indices
        for i in range(len(batch)):
            out.append((idx[ptr[i]:ptr[i + 1]].copy(), batch.labels[i].copy()))
            if len(out) == n:
                loader.close()
                return out
    return out


def lazy_masks(graph, samples, batch_size):
    n_genes = graph.n_genes
    inc = {}
    for t, ei in graph.edge_index.items():  # per-gene incident edge ids (the cache)
        e = np.arange(ei.shape[1])
        both = np.concatenate([ei[0], ei[1]])
        ids = np.concatenate([e, e])
        order = np.argsort(both, kind="stable")
        bounds = np.searchsorted(both[order], np.arange(n_genes + 1))
        inc[t] = (ids[order], bounds)
    t0 = time.perf_counter()
    for start in range(0, len(samples), batch_size):
        masks = {t: [] for t in inc}
        for genes, _ in samples[start:start + batch_size]:
            for t, (ids, bounds) in inc.items():
                m = np.ones(graph.n_edges[t], dtype=bool)
                for g in genes:
                    m[ids[bounds[g]:bounds[g + 1]]] = False
                masks[t].append(m)
        batch = {t: torch.from_numpy(np.stack(v)) for t, v in masks.items()}
        del batch
    return time.perf_counter() - t0


def indices_only(samples, batch_size):
    t0 = time.perf_counter()
    for start in range(0, len(samples), batch_size):
        items = [(torch.tensor(g, dtype=torch.long), torch.tensor(y))
                 for g, y in samples[start:start + batch_size]]
        idx = torch.cat([g for g, _ in items])
        ptr = torch.tensor([0] + [len(g) for g, _ in items]).cumsum(0)
        labels = torch.stack([y for _, y in items])
        del idx, ptr, labels
    return time.perf_counter() - t0


def pertload_epoch(db, batch_size, threads):
    loader = pertload.Loader(db, batch_size=batch_size, shuffle=True, threads=threads)
    n = 0
    t0 = time.perf_counter()
    for batch in loader:
        n += len(batch)
    dt = time.perf_counter() - t0
    loader.close()
    return n, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--lazy-samples", type=int, default=300)
    ap.add_argument("--indices-samples", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    loader = pertload.Loader(a.db, batch_size=a.batch_size)
    graph = loader.graph
    samples = samples_of(loader, max(a.lazy_samples, a.indices_samples))
    rows = []
    n, dt = pertload_epoch(a.db, a.batch_size, a.threads)
    base = n / dt
    rows.append(("pertload", n, dt))
    nl = min(a.lazy_samples, len(samples))
    rows.append(("lazy_masks", nl, lazy_masks(graph, samples[:nl], a.batch_size)))
    ni = min(a.indices_samples, len(samples))
    rows.append(("indices_only", ni, indices_only(samples[:ni], a.batch_size)))
    print(f"{graph.n_genes} genes, {sum(graph.n_edges.values())} edges in "
          f"{len(graph.type_names)} types, batch size {a.batch_size}")
    print(f"  {'pipeline':<14} {'samples':>9} {'seconds':>9} {'samples/s':>12} "
          f"{'pertload is':>12}")
    for name, n, dt in rows:
        rate = n / dt
        print(f"  {name:<14} {n:>9} {dt:>9.2f} {rate:>12,.0f} {base / rate:>11,.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
