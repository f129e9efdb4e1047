#!/usr/bin/python3
"""The whole pertload benchmark, in one run: `pertload bench [options]`.

On one synthetic yeast-scale dataset (made here unless --db names one), it
runs, one after the other on this machine:
  - the memory roofline of one core (memset, memcpy);
  - build time, peak memory and database size, beside the size of full
    per-sample masks;
  - the masks engine (sparse, one core) beside the naive unions it replaces;
  - collation on one core: sparse, dense bits and dense bool, each beside the
    memset roofline of the same bytes;
  - the whole service through the ring into this Python process (2 worker
    threads), and the Python peer pipelines (bench/peers.py) on the same
    samples, after checking their outputs against pertload's;
  - host-to-device bytes per batch (and device times when a GPU is visible);
  - payload streaming beside the sequential O_DIRECT read of the same file,
    the two in turn for three rounds (medians);
  - scaling: samples/s as the deleted genes per sample grow (1, 2, 3, 8, 32)
    and as the graph grows (--scale 0.25 to 4);
  - many ranks (bench/ranks.py): 4 `pertload serve` ranks at once on 20,000
    samples, a third each of singles, doubles and triples, each consumer
    timing a training-like step per batch: the ranks' samples/s and stall
    share over time, and the per-step spread of their step times, with
    fixed batches of 64 and with a budget of removed positions.
It writes report.md (a markdown table of figures, targets and ratios),
report.json (every figure) and the figures as PNG files (bench/plots.py:
scaling.png, ranks.png, step-spread.png) into --out, and prints the
markdown.

With --preset human it measures instead the human-scale preset beside the
yeast one, in the same run (bench/scale_presets.py): build time and peak
memory, database size, the masks engine on one core, the ring into Python
and the serve's start.

usage: pertload bench [--db DB] [--samples N] [--out DIR] [--quick] [--work DIR]
                      [--preset yeast|human] [--ring-samples N]
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (beside this file)
import plots  # noqa: E402
import ranks  # noqa: E402
import scale_presets  # noqa: E402

PERTLOAD = os.environ.get("PERTLOAD_BIN") or shutil.which("pertload") or "pertload"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# Runs a program as its child and writes the child's peak RSS (KiB) to a file:
# the peak of a child forked by this process would count this process's own
# memory (torch included: about 250 MiB), which the child holds until its exec
# and which Linux keeps in its ru_maxrss; this bare interpreter holds ~10 MiB.
_PEAK = ("import os, sys\n"
         "pid = os.fork()\n"
         "if pid == 0:\n"
         "    os.execv(sys.argv[2], sys.argv[2:])\n"
         "_, status, ru = os.wait4(pid, 0)\n"
         "open(sys.argv[1], 'w').write(str(ru.ru_maxrss))\n"
         "sys.exit(os.waitstatus_to_exitcode(status))\n")


def pertload(*args, rusage=False):
    """Run `pertload ARGS`; its output goes to our stderr (the log). With
    rusage, return (wall seconds, peak RSS bytes) of the process, measured
    through _PEAK."""
    cmd = [PERTLOAD, *map(str, args)]
    if rusage:
        fd, peak = tempfile.mkstemp(prefix="pertload-peak-")
        os.close(fd)
        cmd = [sys.executable, "-I", "-S", "-c", _PEAK, peak] + cmd
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=sys.stderr)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"pertload {' '.join(map(str, args))}: exit status {p.returncode}")
    if not rusage:
        return None
    with open(peak) as f:
        kib = int(f.read())
    os.unlink(peak)
    return dt, kib * 1024


def bench(name, *args, work):
    """`pertload bench NAME ARGS --json FILE`, its figures as a dict."""
    out = os.path.join(work, f"{name}-{time.monotonic_ns()}.json")
    log(f"\n$ pertload bench {name} {' '.join(map(str, args))}")
    pertload("bench", name, *args, "--json", out)
    with open(out) as f:
        res = json.load(f)
    bad = [k for k in res if k.endswith("_output_mismatch")]
    if bad:
        raise SystemExit(f"pertload bench {name}: a peer's output differs from pertload's: "
                         f"{', '.join(bad)}")
    return res


def dataset(work, name, samples, scale=1.0, payload_dim=0, seed=1, rewrite=None, preset=None):
    """Synthesize and build a dataset (`pertload synth --preset`; samples None:
    the preset's); (db path, build figures). rewrite(src) may change the
    synthesized inputs in directory src before the build."""
    src, db = os.path.join(work, name + "-in"), os.path.join(work, name + "-db")
    if os.path.exists(db):
        shutil.rmtree(db)
    args = ["synth", src, "--scale", scale, "--seed", seed, "--quiet"]
    args += ["--samples", samples] if samples is not None else []
    args += ["--preset", preset] if preset else []
    if payload_dim:
        args += ["--payload-dim", payload_dim]
    log(f"\n$ pertload {' '.join(map(str, args))}")
    pertload(*args)
    if rewrite:
        rewrite(src)
    with open(os.path.join(src, "build-args.txt")) as f:
        build_args = f.read().split("\n")
    build_args = [a for a in build_args if a]
    log(f"$ pertload build -o {db} ...")
    secs, rss = pertload("build", "-o", db, "--quiet", *build_args, rusage=True)
    size = {f: os.path.getsize(os.path.join(db, f)) for f in os.listdir(db)
            if os.path.isfile(os.path.join(db, f))}
    with open(os.path.join(src, "samples.tsv")) as f:
        n = sum(1 for _ in f) - 1
    shutil.rmtree(src)  # the inputs are not needed any more (payload.npy is large)
    return db, {"build_seconds": secs, "build_peak_rss_bytes": rss, "files": size, "samples": n}


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_bytes": mem,
            "kernel": platform.release(), "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def slope(xs, ys):
    """Least-squares slope of log(y) over log(x): cost ~ size^slope."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


def fmt(x, digits=0):
    return f"{x:,.{digits}f}"


def mb(x):
    return f"{x / 1e6:,.1f} MB"


def mark(ok):
    return "met" if ok else "**not met**"


def markdown(r):
    m, c, p, g = r["masks"], r["collate"], r["peers"], r["gpu"]
    mem, b = r["memory"], r["build"]
    n = r["dataset"]["samples"]
    lines = [f"# pertload benchmark report", "",
             f"{r['machine']['cpu']}, {r['machine']['cores']} cores, "
             f"{r['machine']['memory_bytes'] / 2**30:.0f} GiB, Linux {r['machine']['kernel']}, "
             f"{r['machine']['date']}; command: `pertload bench {r['command']}`", "",
             f"Dataset: {r['dataset']['genes']:,} genes, {r['dataset']['edges']:,} edges, "
             f"{n:,} samples ({m['genes_per_sample']:.2f} deleted genes and "
             f"{m['removed_per_sample']:,.0f} removed positions per sample).", "",
             "| figure | measured | target (DESIGN 8) | |", "|---|---|---|---|"]

    def row(name, value, target="", status=""):
        lines.append(f"| {name} | {value} | {target} | {status} |")

    row("memset, one core", f"{mem['memset_bytes_per_s'] / 1e9:.2f} GB/s")
    row("memcpy, one core", f"{mem['memcpy_bytes_per_s'] / 1e9:.2f} GB/s")
    eng = m["engine_samples_per_s"]
    row("masks engine, sparse, one core", f"{fmt(eng)} samples/s ({1e6 / eng:.2f} us/sample)",
        ">= 300,000 samples/s", mark(eng >= 300000))
    for peer in ("plain_merge", "roaring_or", "roaring_or_many"):
        if peer + "_samples_per_s" in m:
            row(f"  peer: {peer.replace('_', ' ')} (C)", f"{fmt(m[peer + '_samples_per_s'])} "
                f"samples/s", "", f"engine {m['engine_subset_samples_per_s'] / m[peer + '_samples_per_s']:.1f}x")
    sp = c["sparse_samples_per_s"]
    row("masks + collation, sparse, one core", f"{fmt(sp)} samples/s, "
        f"{c['sparse_bytes_per_sample'] * 64 / 1e6:.2f} MB a batch of 64",
        ">= 300,000 samples/s", mark(sp >= 300000))
    for k in ("bits", "bool"):
        share = c[k + "_samples_per_s"] / c[k + "_memset_samples_per_s"]
        row(f"masks + collation, dense {k}, one core", f"{fmt(c[k + '_samples_per_s'])} samples/s"
            f" = {100 * share:.0f}% of memset ({fmt(c[k + '_memset_samples_per_s'])}/s)",
            ">= 70% of the memset roofline", mark(share >= 0.70))
    ring = p["pertload_samples_per_s"]
    row(f"ring into Python, {p['threads']} worker threads", f"{fmt(ring)} samples/s "
        f"({p['pertload_samples']:,} samples in {p['pertload_samples'] / ring:.1f} s)",
        ">= 150,000 samples/s", mark(ring >= 150000))
    row("  peer: lazy mask pipeline (torch, one thread)",
        f"{fmt(p['lazy_samples_per_s'], 1)} samples/s", "pertload >= 1,000x",
        f"ring {ring / p['lazy_samples_per_s']:,.0f}x; one-core sparse "
        f"{sp / p['lazy_samples_per_s']:,.0f}x")
    row("  peer: indices-only pipeline (torch, one thread)",
        f"{fmt(p['indices_only_samples_per_s'])} samples/s", "pertload faster",
        f"ring {ring / p['indices_only_samples_per_s']:.1f}x; one-core sparse "
        f"{sp / p['indices_only_samples_per_s']:.1f}x")
    row("  pertload to dense torch bool masks on the CPU (to_torch)",
        f"{fmt(p['pertload_dense_samples_per_s'])} samples/s", "",
        f"{p['pertload_dense_samples_per_s'] / p['lazy_samples_per_s']:.1f}x lazy")
    graph_mb = b["files"].get("data.mdb", 0)
    full_bool = n * r["dataset"]["mask_positions"]
    row(f"build: graph + {n:,} samples", f"{b['build_seconds']:.1f} s, peak "
        f"{b['build_peak_rss_bytes'] / 2**20:.0f} MiB",
        "<= 20 s for 1M samples" if n == 1000000 else "", mark(b['build_seconds'] <= 20)
        if n == 1000000 else "")
    row("database: graph part (data.mdb)", mb(graph_mb), "<= 32 MB", mark(graph_mb <= 32e6))
    db_all = sum(b["files"].values())
    row("database: all files", f"{mb(db_all)} (sample store "
        f"{mb(b['files'].get('samples.pls', 0))})", "",
        f"full per-sample masks: {full_bool / 1e9:,.1f} GB as bool, {full_bool / 8e9:,.1f} GB "
        f"as bits ({full_bool / 8 / db_all:,.0f}x the database)")
    h2d = g["h2d_bytes_per_batch"]
    row(f"host-to-device bytes a batch of {g['batch_size']:.0f}",
        f"{h2d / 1e6:.3f} MB mean ({g['h2d_bytes_least'] / 1e6:.3f} - "
        f"{g['h2d_bytes_most'] / 1e6:.3f})", "<= 1 MB", mark(h2d <= 1e6))
    if g.get("devices"):
        row("  device: copy a batch", f"{g['device_copy_ms_per_batch']:.3f} ms")
        row("  device: expand to bits / bool (one launch)",
            f"{g['device_bits_ms_per_batch']:.3f} / {g['device_bool_ms_per_batch']:.3f} ms" +
            (f" ({g['device_bits_bytes_per_s'] / 1e9:.1f} / "
             f"{g['device_bool_bytes_per_s'] / 1e9:.1f} GB/s written)"
             if g.get("device_bits_bytes_per_s") else ""))
    else:
        row("  device copy and kernel times", "no CUDA device visible: not measured")
    for plan in ("in-order", "shuffled"):
        pay = r["payload"][plan]
        share = pay["producer_share_of_sequential"]
        row(f"payload streaming, {plan} plan", f"{pay['producer_bytes_per_s'] / 1e9:.2f} GB/s ="
            f" {100 * share:.0f}% of sequential {'O_DIRECT' if pay['sequential_direct'] else 'buffered'}"
            f" ({pay['sequential_bytes_per_s'] / 1e9:.2f} GB/s; medians of {pay['rounds']:.0f} rounds"
            f" in turn, {100 * pay['producer_share_least']:.0f} - "
            f"{100 * pay['producer_share_most']:.0f}%)",
            ">= 80%" if plan == "in-order" else "", mark(share >= 0.8) if plan == "in-order"
            else "random 4 KiB reads")
    lines += ["", "Scaling with the deleted genes per sample (masks engine, sparse, one core, "
              "random uniform samples):", "",
              "| genes per sample | removed positions | samples/s | us/sample | ns per removed position |",
              "|---|---|---|---|---|"]
    for s in r["scaling_genes"]:
        us = 1e6 / s["engine_samples_per_s"]
        lines.append(f"| {s['genes_per_sample']:.0f} | {fmt(s['removed_per_sample'])} | "
                     f"{fmt(s['engine_samples_per_s'])} | {us:.2f} | "
                     f"{1e3 * us / s['removed_per_sample']:.2f} |")
    sg = r["scaling_genes_slope"]
    lines += ["", f"Cost per sample grows as (removed positions)^{sg:.2f}.", "",
              "Scaling with the graph (`synth --scale`, stored samples):", "",
              "| scale | edges | build | data.mdb | removed positions | engine samples/s | "
              "collation samples/s | us/sample (collation) |", "|---|---|---|---|---|---|---|---|"]
    for s in r["scaling_graph"]:
        lines.append(f"| {s['scale']} | {fmt(s['edges'])} | {s['build_seconds']:.1f} s | "
                     f"{mb(s['graph_bytes'])} | {fmt(s['removed_per_sample'])} | "
                     f"{fmt(s['engine_samples_per_s'])} | {fmt(s['collate_samples_per_s'])} | "
                     f"{1e6 / s['collate_samples_per_s']:.2f} |")
    lines += ["", f"Collation cost per sample grows as (edges)^{r['scaling_graph_slope']:.2f}; "
              f"build time as (edges)^{r['scaling_build_slope']:.2f}."]
    lines += ["", "![scaling curves](scaling.png)", ""] + ranks_markdown(r["ranks"])
    return "\n".join(lines) + "\n"


def ranks_markdown(k):
    """The multi-rank part of report.md."""
    f, b = k["fixed"], k["budgeted"]
    types = " and ".join(f["pyg_types"])
    lines = [f"Many ranks: {k['world_size']} `pertload serve` ranks, shuffled, on "
             f"{k['samples']:,} samples (a third each of singles, doubles and triples), one "
             "Python consumer each running a step per batch: the PyG layout of the two "
             f"smallest edge types ({types}) on the CPU, and an embedding bag (32 floats) over "
             f"every removed list. Fixed batches of {k['batch_size']} against `--budget "
             f"{k['budget']}` (the mean removed positions of the fixed batches; at most "
             f"{k['budget_cap']} samples); the ranks at once, then one after another. Spread "
             "of a step: (slowest - fastest rank) / mean, median (90th percentile) over the "
             "steps.", "",
             "| | fixed | budgeted |", "|---|---|---|"]

    def row(name, col, suffix="", digits=0):
        cells = [f"{100 * s[col + '_spread_median']:.{digits}f}% "
                 f"({100 * s[col + '_spread_p90']:.{digits}f}%)"
                 for s in (k["fixed" + suffix], k["budgeted" + suffix])]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")

    lines.append(f"| steps a rank | {f['steps'][0]} | {b['steps'][0]} |")
    lines.append(f"| samples a batch (mean) | {f['samples_mean']:.1f} | {b['samples_mean']:.1f} |")
    row("spread of the removed positions", "removed", digits=1)
    row("spread of the samples", "samples", digits=1)
    for suffix, how in (("", "ranks at once"), ("_alone", "one after another")):
        for kind, name in (("embed", "embedding-bag step"), ("pyg", "PyG-layout step")):
            row(f"spread of the {name}, CPU time, {how}", kind + "_cpu", suffix)
            row(f"spread of the {name}, wall time, {how}", kind + "_wall", suffix)
    lines.append(f"| job's wall time, ranks at once | {f['seconds']:.2f} s | "
                 f"{b['seconds']:.2f} s |")
    return lines + ["", "![samples/s and stall share per rank over time](ranks.png)", "",
                    "![per-step spread of the step times across ranks](step-spread.png)"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="measure this database instead of a synthetic one "
                    "(build figures are then not measured)")
    ap.add_argument("--samples", type=int, help="samples of the synthetic dataset "
                    "[1,000,000; --quick: 20,000]")
    ap.add_argument("--out", default="bench-report", help="directory for report.md and "
                    "report.json [bench-report]")
    ap.add_argument("--work", help="directory for the datasets [a temporary one, removed]")
    ap.add_argument("--quick", action="store_true", help="small data everywhere: checks "
                    "that every part runs, in about a minute; its figures mean little")
    ap.add_argument("--preset", choices=("yeast", "human"), default="yeast",
                    help="human: the human-scale preset beside the yeast one (build, "
                    "database, masks engine, ring, serve start) instead of the whole report")
    ap.add_argument("--ring-samples", type=int, help="with --preset human: samples "
                    "through the ring for each preset [200,000; --quick: 5,000]")
    a = ap.parse_args()
    quick = a.quick
    if a.preset == "human":
        return human_scale(a)
    n = a.samples or (20000 if quick else 1000000)
    work = a.work or tempfile.mkdtemp(prefix="pertload-bench-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    scale = 0.1 if quick else 1.0
    r = {"command": " ".join(sys.argv[1:]), "machine": machine(), "quick": quick}
    try:
        r["memory"] = bench("memory", *(["--mib", 64] if quick else []), work=work)
        if a.db:
            db, r["build"] = a.db, {"build_seconds": float("nan"),
                                    "build_peak_rss_bytes": float("nan"),
                                    "files": {f: os.path.getsize(os.path.join(a.db, f))
                                              for f in os.listdir(a.db)}}
        else:
            db, r["build"] = dataset(work, "main", n, scale)
        r["masks"] = bench("masks", db, "--samples", n, "--peer-samples",
                           2000 if quick else 20000, work=work)
        r["collate"] = bench("collate", db, "--samples", min(n, 200000), work=work)
        log("\n$ bench/peers.py (the Python peer pipelines and the ring)")
        r["peers"] = peers.run(db, lazy_samples=64 if quick else 320,
                               indices_samples=2000 if quick else 20000,
                               check=100 if quick else 500, dense_batches=5 if quick else 20,
                               log=log)
        r["gpu"] = bench("gpu", db, "--batches", 50 if quick else 300, work=work)
        info = pl_info(db)
        r["dataset"] = {"samples": info["n_samples"], "genes": info["n_genes"],
                        "edges": info["edges"], "mask_positions": info["mask_positions"]}

        pay_n = 5000 if quick else 100000
        pdb, pb = dataset(work, "payload", pay_n, scale, payload_dim=1024)
        r["payload"] = {"build": pb}
        for plan, extra in (("in-order", []), ("shuffled", ["--shuffle"])):
            r["payload"][plan] = bench("payload", pdb, *extra, work=work)
        shutil.rmtree(pdb)

        r["scaling_genes"] = []
        for k in (1, 2, 3, 8, 32):
            cnt = (5000 if quick else 200000) // (1 if k <= 3 else k // 2)
            s = bench("masks", db, "--genes", k, "--samples", cnt, "--peer-samples", 0,
                      work=work)
            r["scaling_genes"].append(s)
        r["scaling_genes_slope"] = slope([s["removed_per_sample"] for s in r["scaling_genes"]],
                                         [1 / s["engine_samples_per_s"] for s in r["scaling_genes"]])
        r["scaling_graph"] = []
        for sc in ((0.025, 0.05, 0.1, 0.2) if quick else (0.25, 0.5, 1, 2, 4)):
            gdb, gb = dataset(work, f"scale{sc}", 5000 if quick else 100000, sc)
            mk = bench("masks", gdb, "--peer-samples", 0, work=work)
            co = bench("collate", gdb, "--outputs", "sparse", work=work)
            r["scaling_graph"].append({
                "scale": sc, "edges": mk["edges"], "build_seconds": gb["build_seconds"],
                "graph_bytes": gb["files"].get("data.mdb", 0),
                "removed_per_sample": mk["removed_per_sample"],
                "engine_samples_per_s": mk["engine_samples_per_s"],
                "collate_samples_per_s": co["sparse_samples_per_s"]})
            shutil.rmtree(gdb)
        sg = r["scaling_graph"]
        r["scaling_graph_slope"] = slope([s["edges"] for s in sg],
                                         [1 / s["collate_samples_per_s"] for s in sg])
        r["scaling_build_slope"] = slope([s["edges"] for s in sg],
                                         [s["build_seconds"] for s in sg])

        mix_n = 2400 if quick else 20000
        mdb, _ = dataset(work, "mixed", mix_n, scale, rewrite=ranks.mix_samples)
        log(f"\n$ bench/ranks.py: 4 ranks at once on {mix_n:,} singles, doubles and triples")
        r["ranks"] = ranks.run(mdb, world=4, batch_size=64, bins=8 if quick else 24,
                               work=work, log=log)
        r["ranks"]["samples"] = mix_n
        shutil.rmtree(mdb)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    r["figures"] = plots.draw(r, a.out)
    md = markdown(r)
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(r, f, indent=2)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    print(md, end="")
    log(f"\nwritten: {os.path.join(a.out, 'report.md')}, {os.path.join(a.out, 'report.json')}, "
        f"{', '.join(os.path.join(a.out, f) for f in r['figures'])}")
    return 0


def human_scale(a):
    """`pertload bench --preset human`: report.md and report.json of the two
    presets (bench/scale_presets.py)."""
    n = a.samples or (20000 if a.quick else None)
    work = a.work or tempfile.mkdtemp(prefix="pertload-bench-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    r = {"command": " ".join(sys.argv[1:]), "machine": machine(), "quick": a.quick}
    try:
        r["presets"] = scale_presets.run(
            dataset, bench, work, {"yeast": n, "human": n},
            a.ring_samples or (5000 if a.quick else 200000), 0.1 if a.quick else 1.0, log)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    md = scale_presets.markdown(r["presets"], r["machine"], r["command"])
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(r, f, indent=2)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    print(md, end="")
    return 0


def pl_info(db):
    """Counts of a database: samples, genes, edges, and the positions a full
    per-sample mask covers (edges, genes, GPR, reactions, RMR)."""
    import pertload as pl
    g = pl.Loader(db, batch_size=1).graph
    edges = sum(g.n_edges.values())
    extra = g.n_gpr + g.n_reactions + g.n_rmr if g.has_metabolism else 0
    return {"n_samples": g.n_samples, "n_genes": g.n_genes, "edges": edges,
            "mask_positions": edges + g.n_genes + extra}


if __name__ == "__main__":
    sys.exit(main())
