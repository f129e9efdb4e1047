#!/usr/bin/python3
"""The PyG batch layout on the CPU: batch.to_torch("cpu", layout="pyg")
against a memset of its output bytes (a fresh zeroed tensor of the same
size, in the same run) and against the construction a user writes in Python
(a loop over the samples: each sample's kept edges, shifted, concatenated).

usage: pyg_layout.py DB [--batch-size B] [--batches N] [--types T1,T2,...]
                        [--python-batches K]
"""
import argparse
import math
import sys
import time

import numpy as np
import torch

import pertload


def out_bytes(t):
    """Bytes of every tensor of a layout (a torch_geometric Batch or the
    mapping)."""
    stores = t.stores if hasattr(t, "stores") else [
        v if isinstance(v, dict) else {None: v} for v in t.values()]
    n = 0
    for store in stores:
        for x in store.values():
            if isinstance(x, torch.Tensor):
                n += x.numel() * x.element_size()
    return n


def python_loop(batch, graph, types):
    """The user's construction: per sample, per type, a mask and a shifted copy."""
    N = graph.n_genes
    out = {}
    for t in types:
        ei = graph.edge_index[t]
        pos, ptr = batch.removed[t]
        parts = []
        for i in range(len(batch)):
            keep = np.ones(ei.shape[1], bool)
            keep[pos[ptr[i]:ptr[i + 1]]] = False
            parts.append(ei[:, keep] + i * N)
        out[t] = torch.from_numpy(np.concatenate(parts, axis=1))
    return out


def best(f, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def at_least(least, kind=int):
    """An argparse type: a finite number of `kind` (int, float) not under
    `least`; anything else is refused with a usage error naming the option."""
    def parse(s):
        try:
            v = kind(s)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"'{s}' is not {what}") from None
        if not (math.isfinite(v) and v >= least):
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {s}")
        return v
    return parse


def options(doc, batches, batches_help=None, least_batches=1):
    """The options of the layout benches (this one, model_layouts.py): DB,
    --batch-size, --batches (default `batches`, at least `least_batches`),
    --types; the caller adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--batch-size", type=at_least(1), default=64)
    ap.add_argument("--batches", type=at_least(least_batches), default=batches,
                    help=batches_help)
    ap.add_argument("--types", help="edge types (default: all)")
    return ap


def first_batches(a):
    """(graph, its edge types chosen by --types, its tensors on the CPU,
    copies of the first --batches batches of a shuffled epoch, seed 1)."""
    loader = pertload.Loader(a.db, batch_size=a.batch_size, shuffle=True, seed=1)
    graph = loader.graph
    types = a.types.split(",") if a.types else graph.type_names
    g = graph.to_torch("cpu")
    batches = []
    for batch in loader:
        if len(batches) == a.batches:
            break
        batches.append(batch.copy())
    loader.close()
    return graph, types, g, batches


def main():
    ap = options(__doc__, 5)
    ap.add_argument("--python-batches", type=at_least(0), default=1)
    a = ap.parse_args()
    torch.set_num_threads(1)
    graph, types, g, batches = first_batches(a)
    tp = tm = tpy = 0.0
    nbytes = samples = edges = 0
    for k, b in enumerate(batches):
        out = b.to_torch("cpu", layout="pyg", graph=g, edge_types=types)
        n = out_bytes(out)
        nbytes += n
        samples += len(b)
        edges += sum(out[("gene", t, "gene")]["edge_index"].shape[1] for t in types)
        tp += best(lambda: b.to_torch("cpu", layout="pyg", graph=g, edge_types=types), 3)
        tm += best(lambda: torch.zeros(n, dtype=torch.uint8), 3)
        if k < a.python_batches:
            tpy += best(lambda: python_loop(b, graph, types), 1)
    per = samples / len(batches)
    print(f"{len(batches)} batches of {a.batch_size}, {len(types)} edge types, "
          f"{edges / len(batches) / 1e6:.1f}M edges and {nbytes / len(batches) / 2**20:.0f} MiB "
          "a batch")
    print(f"layout='pyg' on the CPU (one thread): {tp / len(batches) * 1e3:.1f} ms a batch, "
          f"{samples / tp:,.0f} samples/s, {nbytes / tp / 1e9:.2f} GB/s")
    print(f"memset of the same bytes: {tm / len(batches) * 1e3:.1f} ms a batch, "
          f"{nbytes / tm / 1e9:.2f} GB/s; layout = {tp / tm:.2f}x memset")
    if a.python_batches:
        k = min(a.python_batches, len(batches))
        tpk = tpy / k
        print(f"Python loop over samples: {tpk * 1e3:.1f} ms a batch "
              f"({per / tpk:,.0f} samples/s); layout = {tpk / (tp / len(batches)):.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
