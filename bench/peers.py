#!/usr/bin/python3
"""pertload beside the Python pipelines it replaces, on the same samples, in one run.

Each pipeline turns samples (deleted genes, labels) into the collated batch a
training step consumes; torch runs on one thread:
  lazy           the lazy mask pipeline: an incidence cache (per edge type and
                 gene, an index tensor of the gene's incident edge positions);
                 per sample a boolean keep-mask per edge type (ones, then False
                 at the incident positions of each deleted gene), the gene
                 masks, the GPR mask, reaction masks from a scatter sum of the
                 deleted GPR genes of each reaction (under rule gpr, each
                 such reaction's rule then evaluated), the RMR mask; per batch
                 the masks of each key concatenated (PyG collation).
  indices_only   the pipeline that computes no masks: per sample a tensor of
                 its sorted perturbation indices and its labels, concatenated
                 per batch with a ptr (the DANGO-style baseline).
  pertload       pertload.Loader: `pertload serve` computes every removed
                 list and collates batches into a shared-memory ring; this
                 process takes each batch and touches every list.
  pertload_dense the same, each batch then turned into dense torch bool masks
                 on the CPU (Batch.to_torch): the output the lazy pipeline makes.
Before any timing, the peers' outputs for the first rows are checked against
pertload's (masks position by position, indices, labels): a mismatch aborts.

usage: peers.py DB [--lazy-samples N] [--indices-samples N] [--check N]
                   [--batch-size B] [--threads T] [--json FILE]
"""
import argparse
import json
import sys
import time

import numpy as np
import torch

import pertload


class Lazy:
    """The lazy mask pipeline over one graph."""

    def __init__(self, graph):
        n = graph.n_genes
        self.n_genes = n
        self.inc = {}
        for t, ei in graph.edge_index.items():
            ei = np.asarray(ei, dtype=np.int64)
            e = np.arange(ei.shape[1], dtype=np.int64)
            both = np.concatenate([ei[0], ei[1]])
            order = np.argsort(both, kind="stable")
            bounds = np.searchsorted(both[order], np.arange(n + 1))
            ids = torch.from_numpy(np.concatenate([e, e])[order])
            self.inc[t] = ([ids[bounds[g]:bounds[g + 1]] for g in range(n)], ei.shape[1])
        self.metabolism = graph.has_metabolism
        if self.metabolism:
            self.gpr_gene = torch.from_numpy(np.asarray(graph.gpr[0], dtype=np.int64))
            self.gpr_reaction = torch.from_numpy(np.asarray(graph.gpr[1], dtype=np.int64))
            self.rmr_reaction = torch.from_numpy(np.asarray(graph.rmr[0], dtype=np.int64))
            self.n_reactions = graph.n_reactions
            # Rule gpr: the reactions of a deleted gene whose rule is false,
            # each rule evaluated from its postfix program (pertload.h,
            # PL_ARRAY_RULES) with a Python stack.
            self.rules = graph.rules if graph.reaction_rule == "gpr" else None

    def sample(self, genes):
        """Keep-masks of one sample, by key ("gene", edge type, "gpr",
        "reaction", "rmr")."""
        pert = torch.zeros(self.n_genes, dtype=torch.bool)
        pert[torch.as_tensor(genes, dtype=torch.long)] = True
        out = {"gene": ~pert}
        for t, (inc, n_edges) in self.inc.items():
            m = torch.ones(n_edges, dtype=torch.bool)
            for g in genes:
                m[inc[g]] = False
            out[t] = m
        if self.metabolism:
            hit = pert[self.gpr_gene]
            out["gpr"] = ~hit
            deleted = torch.zeros(self.n_reactions).scatter_add_(0, self.gpr_reaction,
                                                                 hit.float())
            reaction = deleted == 0
            if self.rules is not None:
                off, code = self.rules
                gone = set(int(g) for g in genes)
                for r in torch.nonzero(~reaction).flatten().tolist():
                    reaction[r] = _rule_holds(code[off[r]:off[r + 1]], gone)
            out["reaction"] = reaction
            out["rmr"] = reaction[self.rmr_reaction]
        return out

    def batch(self, samples):
        """One collated batch: each key's masks concatenated, labels stacked."""
        per = [self.sample(g) for g, _ in samples]
        masks = {k: torch.cat([p[k] for p in per]) for k in per[0]}
        labels = torch.stack([torch.as_tensor(y) for _, y in samples])
        return masks, labels


def _rule_stack(prog, gone):
    """The stack a compiled rule (graph.rules: gene numbers, 0xFFFFFFFD true,
    0xFFFFFFFE or, 0xFFFFFFFF and) leaves with the genes of `gone` false."""
    stack = []
    for w in prog.tolist():
        if w < 0xFFFFFFFD:
            stack.append(w not in gone)
        elif w == 0xFFFFFFFD:
            stack.append(True)
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(a and b if w == 0xFFFFFFFF else a or b)
    return stack


def _rule_holds(prog, gone):
    stack = _rule_stack(prog, gone)
    return stack[-1] if stack else True


def indices_batch(samples):
    """One batch of the indices-only pipeline: (indices, ptr, labels)."""
    items = [(torch.tensor(g, dtype=torch.long).sort().values, torch.tensor(y))
             for g, y in samples]
    idx = torch.cat([g for g, _ in items])
    ptr = torch.tensor([0] + [len(g) for g, _ in items]).cumsum(0)
    labels = torch.stack([y for _, y in items])
    return idx, ptr, labels


def rows_of(db, n, batch_size, check):
    """The first n samples in row order as (genes, labels), and for the first
    `check` of them pertload's removed lists by key."""
    loader = pertload.Loader(db, batch_size=batch_size)
    graph = loader.graph
    samples, lists = [], []
    try:
        for batch in loader:
            ptr, idx = batch.perturbation_ptr, batch.perturbation_indices
            for i in range(len(batch)):
                genes = idx[ptr[i]:ptr[i + 1]].copy()
                samples.append((genes, batch.labels[i].copy()))
                if len(lists) < check:
                    d = {"gene": genes}
                    named = dict(batch.removed)
                    for k in ("gpr", "reaction", "rmr"):
                        if getattr(batch, k) is not None:
                            named[k] = getattr(batch, k)
                    for k, (pos, p) in named.items():
                        d[k] = pos[p[i]:p[i + 1]].copy()
                    lists.append(d)
                if len(samples) == n:
                    return graph, samples, lists
    finally:
        loader.close()
    return graph, samples, lists


def check_peers(lazy, samples, lists):
    """Raise if a peer's output differs from pertload's on the checked rows."""
    for r, want in enumerate(lists):
        genes, labels = samples[r]
        masks = lazy.sample(genes)
        for k, pos in want.items():
            got = torch.nonzero(~masks[k]).flatten().numpy()
            if not np.array_equal(got, pos):
                raise SystemExit(f"lazy pipeline: row {r}, {k}: {len(got)} removed positions, "
                                 f"pertload {len(pos)}")
        idx, ptr, lab = indices_batch([samples[r]])
        if not np.array_equal(idx.numpy(), want["gene"]) or ptr.tolist() != [0, len(genes)]:
            raise SystemExit(f"indices-only pipeline: row {r}: indices differ from pertload's")
        if not np.array_equal(lab.numpy()[0], labels, equal_nan=True):
            raise SystemExit(f"indices-only pipeline: row {r}: labels differ from pertload's")


def timed(fn, samples, batch_size):
    t0 = time.perf_counter()
    for start in range(0, len(samples), batch_size):
        out = fn(samples[start:start + batch_size])
        del out
    return time.perf_counter() - t0


def pertload_epoch(db, batch_size, threads, dense_batches=0):
    """samples/s of a shuffled epoch through the ring, every list touched,
    start-up included; with dense_batches, of that many batches turned into
    dense torch masks, timed from the first batch's arrival (the start-up,
    seconds for a large sample table, would swamp a few batches)."""
    loader = pertload.Loader(db, batch_size=batch_size, shuffle=True, threads=threads)
    n = removed = 0
    t0 = time.perf_counter()
    try:
        for b, batch in enumerate(loader):
            if dense_batches:
                if b == 0:
                    t0 = time.perf_counter()
                if b == dense_batches:
                    break
                out = batch.to_torch("cpu")
                del out
            for positions, _ in batch.removed.values():
                removed += positions.shape[0]
            n += len(batch)
        dt = time.perf_counter() - t0
    finally:
        loader.close()
    return n, dt


def run(db, lazy_samples=300, indices_samples=20000, check=200, batch_size=64, threads=2,
        dense_batches=20, log=print):
    """Every pipeline on `db`; a dict of samples/s by pipeline and ratios."""
    torch.set_num_threads(1)
    want = max(lazy_samples, indices_samples, check)
    graph, samples, lists = rows_of(db, want, batch_size, check)
    lazy = Lazy(graph)
    check_peers(lazy, samples, lists)
    log(f"peers: outputs of the first {len(lists)} rows match pertload's")
    res = {"checked_rows": len(lists), "batch_size": batch_size, "threads": threads}
    n, dt = pertload_epoch(db, batch_size, threads)
    res["pertload_samples"], res["pertload_samples_per_s"] = n, n / dt
    n, dt = pertload_epoch(db, batch_size, threads, dense_batches)
    res["pertload_dense_samples"], res["pertload_dense_samples_per_s"] = n, n / dt
    nl = min(lazy_samples, len(samples))
    res["lazy_samples"] = nl
    res["lazy_samples_per_s"] = nl / timed(lazy.batch, samples[:nl], batch_size)
    ni = min(indices_samples, len(samples))
    res["indices_only_samples"] = ni
    res["indices_only_samples_per_s"] = ni / timed(indices_batch, samples[:ni], batch_size)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--lazy-samples", type=int, default=300)
    ap.add_argument("--indices-samples", type=int, default=20000)
    ap.add_argument("--check", type=int, default=200, help="rows checked against pertload")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    res = run(a.db, a.lazy_samples, a.indices_samples, a.check, a.batch_size, a.threads)
    base = res["pertload_samples_per_s"]
    print(f"  {'pipeline':<16} {'samples':>9} {'samples/s':>12} {'pertload is':>12}")
    for name in ("pertload", "pertload_dense", "lazy", "indices_only"):
        rate = res[name + "_samples_per_s"]
        print(f"  {name:<16} {res[name + '_samples']:>9} {rate:>12,.0f} {base / rate:>11,.1f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
