"""DCell on GO biological process: forward + backward per batch for four
models of the same architecture (examples/dcell.py), same run, and the
share of the data side in a step. The figures of docs/dcell.md.

usage: dcell_bench.py PERTLOAD WORKDIR [--reps 5] [--sizes 8,64,256]
                      [--widths 20,0.3] [--threads 1] [--device cpu] [--json OUT]

The database: recipes/yeast-real.yaml over tests/data (GO biological process,
is_a and part_of, SGD annotations, terms of >= 3 genes; its eleven edge
sources and yeast-GEM), its SGA samples replaced by 20,000 random double
deletions of its genes with a random label, so that batches of 256 exist.
Term widths: max(a, ceil(b |genes(T)|)) for --widths a,b (DCell's: 20,0.3).

Models (one training step each: forward, DCell's loss with the auxiliary
terms, backward):
  per-term   a Python loop over the terms in stratum order, one nn.Linear
             and one auxiliary head per term, as a DCell user writes it
  grouped    examples/dcell.py over every term (one gather per stratum, one
             torch.bmm per group)
  affected   the same, but only the groups that hold a term the batch
             affects (schedule.affected(batch)) run on every sample; the
             others run on one wild-type row whose outputs every sample takes
             (forward(..., affected, by="group"))
  pairs      every term on the wild-type row and each affected term only
             on the samples that affect it, one block per group
             (forward(..., affected, by="pair"))
Multiply-adds of the term products per step (forward) are counted for the
three grouped models from the schedule (the share of the grouped model's).
The data side of a step: the next batch from the loader (ring, zero-copy),
its tensors and its affected-term schedule. Times are medians of --reps
interleaved repetitions (the four models in turn, each on the same batch).
"""
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time

import numpy as np

if "--threads" in sys.argv:  # OpenBLAS reads it when torch loads it
    os.environ.setdefault("OPENBLAS_NUM_THREADS", sys.argv[sys.argv.index("--threads") + 1])
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import dcell  # noqa: E402

import pertload  # noqa: E402


def width_rule(least, share):
    """DCell's widths: max(least, ceil(share * |genes(T)|))."""
    return lambda n: max(least, math.ceil(share * n))


class PerTerm(nn.Module):
    """DCell written term by term: what the schedule replaces."""

    def __init__(self, onto, width):
        super().__init__()
        cptr, cidx = onto.children
        ann_term = onto.annotation_index[1]
        self.n_annotations = onto.n_annotations
        self.order = np.argsort(onto.stratum, kind="stable").tolist()
        self.child_terms = [cidx[cptr[t]:cptr[t + 1]].tolist() for t in range(onto.n_terms)]
        self.ann = [torch.from_numpy(np.flatnonzero(ann_term == t)) for t in range(onto.n_terms)]
        self.lin = nn.ModuleList(
            nn.Linear(sum(int(width[c]) for c in self.child_terms[t]) + len(self.ann[t]),
                      int(width[t])) for t in range(onto.n_terms))
        self.aux = nn.ModuleList(nn.Linear(int(width[t]), 1) for t in range(onto.n_terms))
        has_parent = np.zeros(onto.n_terms, bool)
        has_parent[cidx] = True
        self.roots = np.flatnonzero(~has_parent).tolist()
        self.head = nn.Linear(sum(int(width[r]) for r in self.roots), 1)

    def forward(self, removed, ptr):
        B, dev = len(ptr) - 1, ptr.device
        if self.ann and self.ann[0].device != dev:  # the index lists where the batch is
            self.ann = [a.to(dev) for a in self.ann]
        kept = torch.ones(B, self.n_annotations, device=dev)
        rows = torch.repeat_interleave(torch.arange(B, device=dev), ptr.diff())
        kept[rows, removed] = 0
        out, aux = {}, []
        for t in self.order:
            x = torch.cat([out[c] for c in self.child_terms[t]] + [kept[:, self.ann[t]]], 1)
            out[t] = torch.tanh(self.lin[t](x))
            aux.append(self.aux[t](out[t]))
        root = torch.cat([out[r] for r in self.roots], 1)
        return self.head(root)[:, 0], torch.cat(aux, 1)


def database(exe, work):
    db = os.path.join(work, "go-bp-db")
    if os.path.exists(db):
        return db
    data = os.environ.get("PERTLOAD_REAL_DATA") or os.path.join(HERE, "..", "tests", "data")
    import gzip

    with gzip.open(os.path.join(data, "real", "dango-string", "yeast_string_genes.txt.gz"),
                   "rt") as f:
        genes = [ln.split()[0] for ln in f if ln.strip()]
    rng = random.Random(28)
    samples = os.path.join(os.path.abspath(work), "doubles.tsv")
    with open(samples, "w") as f:
        f.write("genes\tfitness\n")
        for _ in range(20000):
            a, b = rng.sample(genes, 2)
            f.write(f"{a};{b}\t{rng.gauss(0, 0.1):.4f}\n")
    with open(os.path.join(HERE, "..", "recipes", "yeast-real.yaml")) as f:
        text = f.read()
    head, rest = text.split("\nsamples:\n", 1)
    onto = rest[rest.index("\nontology:\n"):]
    recipe = os.path.join(work, "go-bp.yaml")
    with open(recipe, "w") as f:
        f.write(head + f"\nsamples:\n  format: table\n  file: {samples}\n  sep: tab\n" + onto)
    subprocess.run([exe, "build", "--recipe", recipe, "--root", data, "-o", db, "--quiet"],
                   check=True)
    return db


def multiply_adds(model, aff, B):
    """Multiply-adds of the term products (x W_T) in one forward of each
    grouped model on a batch of B samples."""
    cost = np.array([g.n_inputs * g.width for g in model.s.groups], float)
    size = np.array([len(g.terms) for g in model.s.groups], float)
    hit = np.array(aff.counts) > 0
    pairs = sum(size[k] * rows * cost[k] for part in model._pair_layout(aff, B, "cpu")[:-1]
                for k, rows, _ in part[0])
    return {"grouped": B * (cost * size).sum(),
            "affected": ((B * hit + 1) * cost * size).sum(), "pairs": pairs}


def blas_info():
    """torch's BLAS, and the library libblas.so.3 resolves to in this process."""
    libs = set()
    with open("/proc/self/maps") as f:
        for ln in f:
            if "blas" in ln:
                libs.add(os.path.realpath(ln.split()[-1]))
    info = re.search(r"BLAS_INFO=([^,\s]*)", torch.__config__.show())
    return {"torch": info.group(1) if info else "", "libraries": sorted(libs)}


def med(xs):
    return statistics.median(xs) * 1e3


def main():
    exe, work = sys.argv[1], sys.argv[2]

    def opt(name, default):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default

    reps = int(opt("--reps", 5))
    sizes = [int(v) for v in opt("--sizes", "8,64,256").split(",")]
    torch.set_num_threads(int(opt("--threads", 1)))
    device = opt("--device", "cpu")
    os.makedirs(work, exist_ok=True)
    db = database(exe, work)
    graph = pertload.Loader(db).graph
    onto = graph.ontology
    t0 = time.perf_counter()
    least, share = opt("--widths", "20,0.3").split(",")
    sched = onto.schedule(width=width_rule(int(least), float(share)))
    sched_s = time.perf_counter() - t0
    dev = sched.to(device)
    torch.manual_seed(0)
    grouped = dcell.DCell(dev).to(device)
    models = {"per-term": PerTerm(onto, sched.width).to(device), "grouped": grouped,
              "affected": grouped, "pairs": grouped}
    by = {"affected": "group", "pairs": "pair"}
    report = {"terms": onto.n_terms, "strata": len(sched.strata), "groups": len(sched.groups),
              "published_groups": sum(len(s) for s in onto.strata),
              "state_columns": sched.state_size, "widths": [int(least), float(share)],
              "parameters": sum(p.numel() for p in models["grouped"].parameters()),
              "schedule_build_ms": sched_s * 1e3,
              "threads": torch.get_num_threads(), "device": device,
              "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
              "blas": blas_info(), "sizes": {}}
    for B in sizes:
        loader = pertload.Loader(db, batch_size=B, shuffle=True, seed=B)
        it = iter(loader)
        times = {k: [] for k in list(models) + ["data"]}
        n_aff, macs = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            b = next(it)
            removed, ptr = (torch.from_numpy(v.astype(np.int64)).to(device)
                            for v in b.ontology["annotation"])
            y = torch.from_numpy(b.labels[:, 0].copy()).to(device)
            aff = dev.affected(b)
            times["data"].append(time.perf_counter() - t0)
            n_aff.append(len(aff.terms))
            macs.append(multiply_adds(grouped, aff, B))
            for name, m in models.items():
                t0 = time.perf_counter()
                if name == "per-term":
                    pred, aux = m(removed, ptr)
                else:
                    pred, aux, _ = m(removed, ptr, aff if name in by else None,
                                     by.get(name, "group"))
                loss = dcell.dcell_loss(pred, aux, y)
                m.zero_grad()
                loss.backward()
                if device != "cpu":
                    torch.cuda.synchronize()
                times[name].append(time.perf_counter() - t0)
        loader.close()
        r = {k: med(v) for k, v in times.items()}
        r["affected_terms_median"] = statistics.median(n_aff)
        r["data_share_of_pairs_step"] = r["data"] / (r["data"] + r["pairs"])
        r["per_term_over_pairs"] = r["per-term"] / r["pairs"]
        r["per_term_over_affected"] = r["per-term"] / r["affected"]
        r["per_term_over_grouped"] = r["per-term"] / r["grouped"]
        r["multiply_add_share"] = {k: statistics.median(m[k] / m["grouped"] for m in macs)
                                   for k in ("affected", "pairs")}
        report["sizes"][B] = r
        share = r["multiply_add_share"]
        print(f"batch {B}: per-term {r['per-term']:.1f} ms, grouped {r['grouped']:.1f} ms, "
              f"affected groups {r['affected']:.1f} ms, pairs {r['pairs']:.1f} ms "
              f"({r['affected_terms_median']:.0f} of {onto.n_terms} terms; multiply-adds "
              f"{100 * share['affected']:.0f}% and {100 * share['pairs']:.0f}% of grouped), "
              f"data {r['data']:.2f} ms ({100 * r['data_share_of_pairs_step']:.2f}% of a "
              f"pairs step)", flush=True)
    if "--json" in sys.argv:
        with open(opt("--json", ""), "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "sizes"}))


if __name__ == "__main__":
    main()
