#!/usr/bin/python3
"""Many ranks at once: W `pertload serve` processes (--rank, --world-size),
one Python consumer process each, started together on one database.

Each consumer runs a training-like step on every batch and records, per
step, the wall and CPU time of two step kinds:
  - "pyg": the batch's PyG layout on the CPU for the two smallest edge
    types (to_torch(layout="pyg")), whose cost follows the kept edges, that
    is the samples of the batch;
  - "embed": an embedding bag over the removed lists of every kind
    (to_torch(layout="lists"), then one torch.nn.functional.embedding_bag
    per kind, 32 floats a position), whose cost follows the removed
    positions of the batch;
and after every batch the ring's counters (Loader.stats(): samples
consumed, the consumer's wait for data), from which the samples/s and the
stall share of each rank over time are drawn.

run() does this on a mix of singles, doubles and triples (mix_samples)
with fixed batches and with `--budget removed=N`, N the mean removed
positions of the fixed batches, each twice: the ranks at once (as a job
runs; on a small machine they share its cores) and one after another (each
rank alone, as on a machine of its own). The per-step spread of the step
times across ranks (slowest minus fastest over the mean) tells how far
budgets even out the steps of a job.

usage (the consumer side, started by run()): ranks.py consume JSON-ARGS
"""
import json
import os
import random
import subprocess
import sys
import time

STEP_KINDS = ("pyg", "embed")


def mix_samples(src, seed=1):
    """Rewrite the samples.tsv of a `pertload synth` input directory so that
    row i deletes i % 3 + 1 genes: a third each of singles, doubles and
    triples. A row keeps its own genes first and draws the missing ones at
    random (seeded) from genes.txt, all distinct; ids and labels stay."""
    with open(os.path.join(src, "genes.txt")) as f:
        genes = [g.split("\t")[0].strip() for g in f if g.strip() and not g.startswith("#")]
    rng = random.Random(seed)
    path = os.path.join(src, "samples.tsv")
    with open(path) as f:
        header, *rows = f.read().split("\n")
    cols = header.split("\t")
    gi = cols.index("genes")
    out = [header]
    i = 0
    for line in rows:
        if not line:
            continue
        f = line.split("\t")
        want = i % 3 + 1
        have = [g for g in f[gi].split(";") if g][:want]
        while len(have) < want:
            g = rng.choice(genes)
            if g not in have:
                have.append(g)
        f[gi] = ";".join(have)
        out.append("\t".join(f))
        i += 1
    with open(path + ".tmp", "w") as fh:
        fh.write("\n".join(out) + "\n")
    os.replace(path + ".tmp", path)
    return i


def spread(times):
    """Per step, (slowest - fastest) / mean over ranks: times[rank][step]."""
    n = min(len(t) for t in times)
    out = []
    for k in range(n):
        col = [t[k] for t in times]
        mean = sum(col) / len(col)
        out.append((max(col) - min(col)) / mean if mean > 0 else 0.0)
    return out


def quantile(xs, q):
    """The q-quantile of xs (linear between the order statistics)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    x = q * (len(s) - 1)
    lo = int(x)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (x - lo)


def over_time(records, edges):
    """A rank's samples/s and stall share in the time bins [edges[i],
    edges[i+1]) from its records [(t, samples_consumed, consumer_wait_ns)]
    (cumulative counters, t in seconds since the start): the counters are
    interpolated linearly between records, from (0, 0, 0), and held after
    the last."""
    pts = [(0.0, 0, 0)] + [tuple(r) for r in records]

    def at(t, col):
        if t >= pts[-1][0]:
            return float(pts[-1][col])
        for a, b in zip(pts, pts[1:]):
            if a[0] <= t <= b[0]:
                if b[0] == a[0]:
                    return float(b[col])
                return a[col] + (b[col] - a[col]) * (t - a[0]) / (b[0] - a[0])
        return float(pts[0][col])

    rate, stall = [], []
    for lo, hi in zip(edges, edges[1:]):
        dt = hi - lo
        rate.append((at(hi, 1) - at(lo, 1)) / dt)
        stall.append(min(1.0, (at(hi, 2) - at(lo, 2)) * 1e-9 / dt))
    return rate, stall


def batch_removed(batch):
    """Removed positions of a batch, every kind (edges, genes, GPR,
    reactions, RMR)."""
    n = len(batch.perturbation_indices)
    for pos, _ in batch.removed.values():
        n += len(pos)
    for kind in (batch.gpr, batch.reaction, batch.rmr):
        if kind is not None:
            n += len(kind[0])
    return n


def consume(a):
    """One rank: build the loader, say "ready", wait for "go", run the epoch
    with the steps, write the records as JSON to a["out"]."""
    import torch

    import pertload
    torch.set_num_threads(1)
    loader = pertload.Loader(a["db"], batch_size=a["batch_size"], shuffle=True, seed=a["seed"],
                             rank=a["rank"], world_size=a["world_size"], budget=a.get("budget"),
                             threads=a.get("threads", 1))
    graph = loader.graph
    tensors = graph.tensors_on(torch.device("cpu"))
    types = sorted(graph.n_edges, key=lambda t: (graph.n_edges[t], t))[:2]
    gen = torch.Generator().manual_seed(a["rank"])
    sizes = dict(graph.n_edges)
    sizes.update(gene=graph.n_genes)
    if graph.has_metabolism:
        sizes.update(gpr=graph.n_gpr, reaction=graph.n_reactions, rmr=graph.n_rmr)
    tables = {k: torch.rand(max(n, 1), 32, generator=gen) for k, n in sizes.items()}
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    t0 = time.perf_counter()
    steps, records = [], []
    for batch in loader:
        st = loader.stats()
        records.append((time.perf_counter() - t0, st["samples_consumed"],
                        st["consumer_wait_ns"]))
        row = {"samples": len(batch), "removed": batch_removed(batch)}
        w, c = time.perf_counter(), time.thread_time()
        batch.to_torch("cpu", layout="pyg", graph=tensors, edge_types=types)
        row["pyg_wall"], row["pyg_cpu"] = time.perf_counter() - w, time.thread_time() - c
        w, c = time.perf_counter(), time.thread_time()
        lists = batch.to_torch("cpu", layout="lists")
        for key, v in lists.items():
            name = key if isinstance(key, str) else key[1]
            if name not in tables or not isinstance(v, dict):
                continue
            pos = v.get("removed", v.get("perturbation_indices"))
            ptr = v.get("ptr", v.get("perturbation_ptr"))
            torch.nn.functional.embedding_bag(pos, tables[name], ptr[:-1].contiguous(),
                                              mode="sum")
        row["embed_wall"], row["embed_cpu"] = time.perf_counter() - w, time.thread_time() - c
        steps.append(row)
    st = loader.stats()
    records.append((time.perf_counter() - t0, st["samples_consumed"], st["consumer_wait_ns"]))
    with open(a["out"], "w") as f:
        json.dump({"rank": a["rank"], "steps": steps, "records": records,
                   "pyg_types": types}, f)
    return 0


def _ranks_of(db, ranks, world, batch_size, work, budget, seed):
    """Start the consumers of `ranks`, wait until each is ready, let them go
    together and wait for them; their results."""
    procs = []
    try:
        for r in ranks:
            args = {"db": db, "rank": r, "world_size": world, "batch_size": batch_size,
                    "budget": budget, "seed": seed,
                    "out": os.path.join(work, f"rank{r}-{time.monotonic_ns()}.json")}
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "consume",
                                  json.dumps(args)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            procs.append((p, args))
        for p, _ in procs:
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"ranks.py: a consumer did not start (exit {p.wait()})")
        for p, _ in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        out = []
        for p, args in procs:
            if p.wait() != 0:
                raise SystemExit(f"ranks.py: rank {args['rank']} exit status {p.returncode}")
            with open(args["out"]) as f:
                out.append(json.load(f))
            os.unlink(args["out"])
        return out
    finally:
        for p, _ in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def job(db, world, batch_size, work, budget=None, seed=0, at_once=True, log=print):
    """Run one job of `world` ranks, at once or one rank after another; the
    consumers' results by rank."""
    if at_once:
        out = _ranks_of(db, range(world), world, batch_size, work, budget, seed)
    else:
        out = [o for r in range(world)
               for o in _ranks_of(db, [r], world, batch_size, work, budget, seed)]
    log(f"  {world} ranks {'at once' if at_once else 'one after another'}, batch size "
        f"{batch_size}, budget {budget}: {len(out[0]['steps'])} steps a rank")
    return out


def summary(ranks, bins):
    """Figures of one job: steps, per-step spreads of each step kind (wall
    and CPU), of the removed positions, and each rank's samples/s and stall
    share over `bins` time bins."""
    end = max(r["records"][-1][0] for r in ranks)
    edges = [end * i / bins for i in range(bins + 1)]
    s = {"steps": [len(r["steps"]) for r in ranks], "seconds": end, "bin_edges": edges,
         "rate": [], "stall": []}
    for r in ranks:
        rate, stall = over_time(r["records"], edges)
        s["rate"].append(rate)
        s["stall"].append(stall)
    cols = ["removed", "samples"] + [f"{k}_{c}" for k in STEP_KINDS for c in ("wall", "cpu")]
    for col in cols:
        sp = spread([[st[col] for st in r["steps"]] for r in ranks])
        s[col + "_spread"] = sp
        s[col + "_spread_median"] = quantile(sp, 0.5)
        s[col + "_spread_p90"] = quantile(sp, 0.9)
    s["step_rows"] = [r["steps"] for r in ranks]
    s["pyg_types"] = ranks[0]["pyg_types"]
    n = sum(len(r["steps"]) for r in ranks)
    s["removed_mean"] = sum(st["removed"] for r in ranks for st in r["steps"]) / n
    s["samples_mean"] = sum(st["samples"] for r in ranks for st in r["steps"]) / n
    return s


def run(db, world=4, batch_size=64, budget_cap=256, bins=20, work=None, log=print):
    """The fixed and the budgeted job on `db`, the ranks at once ("fixed",
    "budgeted") and one after another ("fixed_alone", "budgeted_alone");
    their summaries and the budget."""
    work = work or os.path.dirname(os.path.abspath(db))
    out = {"world_size": world, "batch_size": batch_size, "budget_cap": budget_cap}
    out["fixed"] = summary(job(db, world, batch_size, work, log=log), bins)
    out["budget"] = budget = f"removed={max(1, round(out['fixed']['removed_mean']))}"
    out["budgeted"] = summary(job(db, world, budget_cap, work, budget=budget, log=log), bins)
    out["fixed_alone"] = summary(job(db, world, batch_size, work, at_once=False, log=log), bins)
    out["budgeted_alone"] = summary(job(db, world, budget_cap, work, budget=budget,
                                        at_once=False, log=log), bins)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "consume":
        sys.exit(__doc__.rsplit("\n\n", 1)[-1])
    sys.exit(consume(json.loads(sys.argv[2])))
