#!/usr/bin/python3
"""The figures of `pertload bench` as PNG files (matplotlib, Agg backend),
drawn from the report's figures (report.json's dict):
  - scaling.png: samples/s against the deleted genes per sample and
    against the graph's edges;
  - ranks.png: each rank's samples/s and stall share over time in the
    multi-rank run, fixed batches and budgeted;
  - step-spread.png: per step, the spread of the step times across ranks
    (slowest minus fastest over the mean), fixed batches and budgeted, the
    ranks at once and one after another.

usage: plots.py REPORT.JSON OUTDIR   (draws them again from a report)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DPI = 72
JOBS = (("fixed", "fixed batches"), ("budgeted", "budgeted"))


def _save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return name


def scaling(r, out):
    """scaling.png: the two scaling curves of the report."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    sg = r["scaling_genes"]
    a.loglog([s["genes_per_sample"] for s in sg], [s["engine_samples_per_s"] for s in sg],
             "o-", label="masks engine, sparse")
    a.set_xlabel("deleted genes per sample")
    a.set_ylabel("samples/s (one core)")
    a.set_title(f"cost ~ (removed positions)^{r['scaling_genes_slope']:.2f}")
    a.set_xticks([s["genes_per_sample"] for s in sg])
    a.set_xticklabels([f"{s['genes_per_sample']:.0f}" for s in sg])
    a.grid(True, which="both", alpha=0.3)
    a.legend()
    gr = r["scaling_graph"]
    edges = [s["edges"] for s in gr]
    b.loglog(edges, [s["engine_samples_per_s"] for s in gr], "o-", label="masks engine")
    b.loglog(edges, [s["collate_samples_per_s"] for s in gr], "s-", label="masks + collation")
    b.set_xlabel("edges of the graph (synth --scale)")
    b.set_ylabel("samples/s (one core)")
    b.set_title(f"collation cost ~ (edges)^{r['scaling_graph_slope']:.2f}")
    b.grid(True, which="both", alpha=0.3)
    b.legend()
    return _save(fig, out, "scaling.png")


def ranks(r, out):
    """ranks.png: per rank, samples/s and stall share over time, per job."""
    k = r["ranks"]
    fig, ax = plt.subplots(2, 2, figsize=(10, 6), sharex="col")
    for row, (job, title) in enumerate(JOBS):
        s = k[job]
        e = s["bin_edges"]
        mid = [(lo + hi) / 2 for lo, hi in zip(e, e[1:])]
        for rank, (rate, stall) in enumerate(zip(s["rate"], s["stall"])):
            ax[row][0].plot(mid, rate, ".-", lw=1, label=f"rank {rank}")
            ax[row][1].plot(mid, [100 * x for x in stall], ".-", lw=1, label=f"rank {rank}")
        what = f"batches of {k['batch_size']}" if job == "fixed" else \
            f"--budget {k['budget']} (at most {k['budget_cap']})"
        ax[row][0].set_title(f"samples/s per rank, {what}", fontsize=10)
        ax[row][1].set_title(f"stall share per rank, {what}", fontsize=10)
        ax[row][0].set_ylabel("samples/s")
        ax[row][1].set_ylabel("consumer waiting for data, %")
        ax[row][1].set_ylim(-2, 102)
        for a in ax[row]:
            a.grid(True, alpha=0.3)
    for a in ax[1]:
        a.set_xlabel("seconds since the start")
    ax[0][0].legend(fontsize=8)
    return _save(fig, out, "ranks.png")


def step_spread(r, out):
    """step-spread.png: per step, the spread across ranks of what the
    batches hold and of each step kind's CPU time, fixed against budgeted;
    the ranks at once (top) and one after another (bottom)."""
    k = r["ranks"]
    rows = (("", "at once", (("removed", "removed positions a batch"),)),
            ("_alone", "one after another", (("samples", "samples a batch"),)))
    fig, ax = plt.subplots(2, 3, figsize=(12, 6.5), sharey=True)
    for row, (suffix, how, first) in enumerate(rows):
        kinds = first + (("embed_cpu", f"embedding-bag step, CPU time, {how}"),
                         ("pyg_cpu", f"PyG-layout step, CPU time, {how}"))
        for a, (col, title) in zip(ax[row], kinds):
            for job, label in JOBS:
                s = k[job + suffix]
                sp = s[col + "_spread"]
                a.plot(range(len(sp)), [100 * x for x in sp], "-", lw=1,
                       label=f"{label}: median {100 * s[col + '_spread_median']:.0f}%")
            a.set_title(title, fontsize=10)
            a.grid(True, alpha=0.3)
            a.legend(fontsize=8)
        ax[row][0].set_ylabel("(slowest - fastest rank) / mean, %")
    for a in ax[1]:
        a.set_xlabel("step")
    return _save(fig, out, "step-spread.png")


def draw(r, out):
    """Every figure of the report r into directory out; their file names."""
    return [scaling(r, out), ranks(r, out), step_spread(r, out)]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.rsplit("\n\n", 1)[-1])
    with open(sys.argv[1]) as f:
        print("\n".join(draw(json.load(f), sys.argv[2])))
