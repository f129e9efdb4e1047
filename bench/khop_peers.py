#!/usr/bin/python3
"""k-hop neighbourhoods: pertload beside two torch peers, on the same samples, in one run.

For each k the three compute, per sample, the genes within k hops of its
deleted genes (edges of the walked types taken both ways) and per walked
type the positions of the edges with both ends among them:
  pertload  `pertload bench khop DB` (C, one core), which also dumps its
            outputs for the checks below
  scatter   torch, O(E) per hop: a batch of bool gene masks X [B, N]; a hop
            scatters X[:, src] into the destinations (index_add over the
            walked edges in both directions) and ors the result into X; the
            edges are X[:, src] & X[:, dst] per type, their positions by
            nonzero (the sparse construction of the partitioner analysis)
  dense     torch: the dense symmetric adjacency A (float32 [N, N], built
            once); a hop is X = X | (X @ A > 0) for the batch; the edges as
            above
torch runs on one thread. Before any timing, both peers' outputs for the
first --check samples are compared with pertload's (sets and edge positions,
exactly); a mismatch aborts. Samples whose walk the cap cut are left out of
the checks (the peers have no cap: use --khop-max-genes N to measure
uncapped). Ratios are between figures of this one run.

usage: khop_peers.py DB [--k 1,2] [--types physical,regulatory] [--samples N]
                        [--peer-samples M] [--check C] [--batch-size B]
                        [--khop-max-genes G] [--json FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import pertload


def walked_edges(graph, types):
    ei = [torch.from_numpy(np.ascontiguousarray(graph.edge_index[t])).long() for t in types]
    both = torch.cat([torch.cat([e, e.flip(0)], 1) for e in ei], 1)
    return ei, both[0].contiguous(), both[1].contiguous()


def batch_masks(genes_list, n):
    X = torch.zeros(len(genes_list), n, dtype=torch.bool)
    for i, g in enumerate(genes_list):
        X[i, torch.as_tensor(g, dtype=torch.long)] = True
    return X


def edges_of(X, ei):
    """Per type, per sample, the positions with both ends in the sample's set."""
    out = []
    for e in ei:
        keep = X[:, e[0]] & X[:, e[1]]
        out.append(keep)
    return out


def scatter_peer(genes_list, k, n, ei, src, dst):
    X = batch_masks(genes_list, n)
    for _ in range(k):
        hit = torch.zeros(X.shape[0], n, dtype=torch.int32)
        hit.index_add_(1, dst, X[:, src].to(torch.int32))
        X = X | (hit > 0)
    keeps = edges_of(X, ei)
    return X, [[torch.nonzero(kp[i]).flatten() for i in range(X.shape[0])] for kp in keeps]


def dense_peer(genes_list, k, n, ei, A):
    X = batch_masks(genes_list, n)
    for _ in range(k):
        X = X | ((X.to(torch.float32) @ A) > 0)
    keeps = edges_of(X, ei)
    return X, [[torch.nonzero(kp[i]).flatten() for i in range(X.shape[0])] for kp in keeps]


def run_peer(fn, samples, B):
    t0 = time.perf_counter()
    for a in range(0, len(samples), B):
        fn(samples[a:a + B])
    dt = time.perf_counter() - t0
    return len(samples) / dt if dt > 0 else 0.0


def check(name, X, edges, want, types, first):
    for i, (capped, genes, *per_type) in enumerate(want):
        if capped:
            continue
        got = torch.nonzero(X[i]).flatten().tolist()
        if got != genes:
            sys.exit(f"khop_peers: {name}: sample {first + i}: genes differ from pertload's")
        for j, t in enumerate(types):
            if edges[j][i].tolist() != per_type[j]:
                sys.exit(f"khop_peers: {name}: sample {first + i}: {t} edges differ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--k", default="1,2")
    ap.add_argument("--types", default="physical,regulatory")
    ap.add_argument("--samples", type=int, default=100000)
    ap.add_argument("--peer-samples", type=int, default=2000)
    ap.add_argument("--check", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--khop-max-genes", type=int, default=1024)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    types = a.types.split(",")
    ks = [int(x) for x in a.k.split(",")]
    graph = pertload.Loader(a.db).graph
    n = graph.n_genes
    cmd = [pertload.program_path(), "bench", "khop", a.db, "--types", a.types,
           "--khop-max-genes", str(a.khop_max_genes)]
    res = subprocess.run(cmd + ["--k", a.k, "--samples", str(a.samples)], check=True,
                         capture_output=True, text=True)
    print(res.stdout, end="")
    rates = {int(m.group(1)): float(m.group(2))
             for m in re.finditer(r"k = (\d+): (\d+) samples/s", res.stdout)}
    # The outputs for the checks, and the samples' deleted genes (0 hops: P).
    outs = {}
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "khop.jsonl")
        subprocess.run(cmd + ["--k", "0," + a.k, "--samples", str(a.peer_samples),
                              "--dump", dump], check=True, capture_output=True)
        with open(dump) as f:
            for line in f:
                d = json.loads(line)
                outs[d["k"]] = d["samples"]
    pert = [s[1] for s in outs[0]]
    ei, src, dst = walked_edges(graph, types)
    A = torch.zeros(n, n, dtype=torch.float32)
    A[src, dst] = 1.0
    figures = {"khop_types": a.types}
    m = min(a.peer_samples, len(pert))
    for k in ks:
        want = outs[k]
        c = min(a.check, m)
        for name, fn in (("scatter", lambda s, k=k: scatter_peer(s, k, n, ei, src, dst)),
                         ("dense", lambda s, k=k: dense_peer(s, k, n, ei, A))):
            for b in range(0, c, a.batch_size):
                X, edges = fn(pert[b:min(b + a.batch_size, c)])
                check(name, X, edges, want[b:min(b + a.batch_size, c)], types, b)
        r_s = run_peer(lambda s, k=k: scatter_peer(s, k, n, ei, src, dst), pert[:m],
                       a.batch_size)
        r_d = run_peer(lambda s, k=k: dense_peer(s, k, n, ei, A), pert[:m], a.batch_size)
        r_p = rates.get(k, 0.0)
        print(f"  k = {k}: torch scatter O(E) {r_s:,.0f} samples/s, torch dense adjacency "
              f"{r_d:,.0f} samples/s (one thread, {m} samples, batches of {a.batch_size}); "
              f"pertload {r_p / r_s:,.0f}x the scatter peer, {r_p / r_d:,.0f}x the dense one")
        figures.update({f"khop_k{k}_samples_per_s": r_p, f"khop_k{k}_scatter_samples_per_s": r_s,
                        f"khop_k{k}_dense_samples_per_s": r_d})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f)


if __name__ == "__main__":
    main()
