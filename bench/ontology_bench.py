"""Ontology layers: the figures of the README.

usage: ontology_bench.py PERTLOAD WORKDIR [--samples N] [--served-only]

1. GO biological process with the SGD annotations (tests/data/real-raw/go,
   ORFs of SGD_features as the gene list): `pertload build` time with the
   ontology minus the same build without it (median of 5).
2. The extra cost of the ontology lists over the nine edge types: a synthetic
   yeast-scale graph (`pertload synth`, N samples), built twice, once with GO
   BP as a three-column file whose genes are the synthetic genes (the i-th ORF
   of SGD mapped to the i-th synthetic gene), and `pertload masks --all` on
   both (medians of 7 interleaved runs).
3. A DCell-style Python peer: per sample, loop over the terms and test the
   intersection of genes(T) with the deleted set; its lists are checked
   against pertload's first.
4. The served path: the extra cost of the ontology lists that served batches
   carry (masks + collation, pl__collate) over the nine edge types and the
   metabolism, on the same two databases: `pertload bench collate` (batches
   of 64 from a shuffled plan, one core), instructions inside pl__collate
   under callgrind on 20,000 samples, and the collation rate of sparse and
   bits batches per CPU second of the process (robust to other work on the
   machine) and per wall second (medians of 5 interleaved runs). --served-only runs 2's
   builds and 4 alone.
"""
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import ontology_real as ref  # noqa: E402  (the test's readers and closure)


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, (cmd, out.stderr)
    return out.stdout


def cpu(cmd):
    """User + system CPU seconds of one run (robust to a machine shared with
    other work, unlike its wall time)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    assert status == 0, (cmd, p.stderr.read())
    p.stderr.close()
    return ru.ru_utime + ru.ru_stime


def timed(cmd):
    t0 = time.perf_counter()
    run(cmd)
    return time.perf_counter() - t0


def main():
    exe, work = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv \
        else 200000
    data = os.environ.get("PERTLOAD_REAL_DATA") or os.path.join(HERE, "..", "tests", "data")
    go = os.path.join(data, "real-raw", "go")
    obo, gaf = os.path.join(go, "gene_ontology.1_2.obo.gz"), \
        os.path.join(go, "gene_association.sgd.gz")
    os.makedirs(work, exist_ok=True)
    with gzip.open(os.path.join(data, "real-raw", "sgd_features", "SGD_features.tab.gz"),
                   "rt") as f:
        orfs = sorted({c[3] for c in (l.rstrip("\n").split("\t") for l in f)
                       if len(c) > 3 and c[1] == "ORF" and c[3]})
    # 1. build time of GO BP + SGD annotations
    small = os.path.join(work, "small")
    os.makedirs(small, exist_ok=True)
    with open(os.path.join(small, "genes.txt"), "w") as f:
        f.write("\n".join(orfs) + "\n")
    with open(os.path.join(small, "e.tsv"), "w") as f:
        f.write("%s\t%s\n" % (orfs[0], orfs[1]))
    with open(os.path.join(small, "s.tsv"), "w") as f:
        f.write("id\tgenes\tfitness\n1\t%s\t0.5\n" % orfs[2])
    base = [exe, "build", "--quiet", "--genes", os.path.join(small, "genes.txt"), "--edges",
            "physical=" + os.path.join(small, "e.tsv"), "--samples",
            os.path.join(small, "s.tsv")]
    onto = ["--ontology", obo, "--annotations", gaf, "--go-namespace", "biological_process"]
    with_o, without = [], []
    for i in range(5):
        for lst, extra in ((with_o, onto), (without, [])):
            db = os.path.join(small, "db%d" % i)
            subprocess.run(["rm", "-rf", db])
            lst.append(timed(base + ["-o", db] + extra))
    build_s = statistics.median(with_o) - statistics.median(without)
    # 2. ontology lists over the nine edge types
    syn = os.path.join(work, "synth")
    if not os.path.exists(os.path.join(syn, "build-args.txt")):
        run([exe, "synth", syn, "--samples", str(samples)])
    with open(os.path.join(syn, "genes.txt")) as f:
        sgenes = [l.split()[0] for l in f if l.strip()]
    terms, ids, alt = ref.read_obo(obo)
    rows, _ = ref.read_gaf(gaf, ids, alt, {n: i for i, n in enumerate(orfs)}, set())
    dcell = os.path.join(work, "go_bp_dcell.txt")
    ref.write_bp_dcell(dcell, terms, rows, sgenes)
    with open(os.path.join(syn, "build-args.txt")) as f:
        args = f.read().split("\n")
    args = [a for a in args if a]
    dbs = {}
    for name, extra in (("plain", []), ("onto", ["--ontology-dcell", dcell])):
        db = os.path.join(work, "db-" + name)
        if not os.path.exists(db):
            run([exe, "build", "--quiet", "-o", db] + args + extra)
        dbs[name] = db
    if "--served-only" in sys.argv:
        print(json.dumps(served(exe, work, dbs), indent=1))
        return
    # CPU time of `masks --all` minus that of one sample (the loading), per
    # sample; medians of 7 interleaved runs
    with open(os.path.join(syn, "samples.tsv")) as f:
        next(f)
        one = f.readline().split("\t")[1].replace(";", ",")
    r = {name: [] for name in dbs}
    for _ in range(7):
        for name, db in dbs.items():
            r[name].append(cpu([exe, "masks", db, "--all"]) -
                           cpu([exe, "masks", db, "--genes", one]))
    us = {name: statistics.median(v) / samples * 1e6 for name, v in r.items()}
    extra_cost = us["onto"] / us["plain"] - 1
    # 3. the DCell-style peer: genes(T) as Python sets, a loop over terms
    children, direct = {}, {}
    order = []
    with open(dcell) as f:
        for line in f:
            p, c, t = line.split()
            for x in (p,) if t == "gene" else (p, c):
                if x not in direct:
                    direct[x] = set()
                    children[x] = []
                    order.append(x)
            if t == "gene":
                direct[p].add(c)
            else:
                children[p].append(c)
    genes_of = ref.gene_closure(direct, children)
    kept = [t for t in order if genes_of(t)]
    gsets = [frozenset(genes_of(t)) for t in kept]
    info = run([exe, "inspect", dbs["onto"]])
    n_terms = int(re.search(r"ontology: (\d+) terms", info).group(1))
    assert n_terms == len(kept), (n_terms, len(kept))
    with open(os.path.join(syn, "samples.tsv")) as f:
        next(f)
        samp = [set(l.split("\t")[1].split(";")) for _, l in zip(range(2000), f)]
    for row in range(5):
        got = json.loads(run([exe, "masks", dbs["onto"], "--row", str(row), "--json"]))
        want = [k for k, s in enumerate(gsets) if not s.isdisjoint(samp[row])]
        assert got["ontology/term"] == want, row
    t0 = time.perf_counter()
    for p in samp:
        [k for k, s in enumerate(gsets) if not s.isdisjoint(p)]
    peer_us = (time.perf_counter() - t0) / len(samp) * 1e6
    fig = {"go_bp_build_s": round(build_s, 3),
           "build_with_go_s": round(statistics.median(with_o), 3),
           "build_without_s": round(statistics.median(without), 3),
           "masks_cpu_us_per_sample": round(us["plain"], 3),
           "masks_onto_cpu_us_per_sample": round(us["onto"], 3),
           "ontology_extra_cost": round(extra_cost, 4), "terms": n_terms,
           "pertload_us_per_sample_with_onto": round(us["onto"], 2),
           "dcell_peer_us_per_sample": round(peer_us, 1)}
    fig.update(served(exe, work, dbs))
    print(json.dumps(fig, indent=1))


def served(exe, work, dbs, cg_samples=20000):
    """4. masks + collation with and without the ontology lists."""
    ir = {}
    for name, db in dbs.items():
        out = os.path.join(work, "cg-%s.out" % name)
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                        "--toggle-collect=pl__collate", exe, "bench", "collate", db,
                        "--samples", str(cg_samples), "--outputs", "sparse"], check=True,
                       capture_output=True, env=dict(os.environ, PERTLOAD_IO="pread"))
        with open(out) as f:
            ir[name] = next(int(l.split()[1]) for l in f if l.startswith("summary:"))
    outs = ("sparse", "bits", "sparse_cpu", "bits_cpu")
    rates = {(name, o): [] for name in dbs for o in outs}
    for _ in range(5):
        for name, db in dbs.items():
            js = os.path.join(work, "collate-%s.json" % name)
            run([exe, "bench", "collate", db, "--outputs", "sparse,bits", "--json", js])
            with open(js) as f:
                r = json.load(f)
            for o in outs:
                rates[(name, o)].append(r["%s_samples_per_s" % o])
    med = {k: statistics.median(v) for k, v in rates.items()}
    fig = {"collate_instructions_per_sample": ir["plain"] / cg_samples,
           "collate_onto_instructions_per_sample": ir["onto"] / cg_samples,
           "collate_onto_extra_instructions": round(ir["onto"] / ir["plain"] - 1, 4)}
    for o in outs:
        fig["collate_%s_samples_per_s" % o] = [round(x) for x in rates[("plain", o)]]
        fig["collate_%s_onto_samples_per_s" % o] = [round(x) for x in rates[("onto", o)]]
        fig["collate_%s_onto_extra_time" % o] = round(med[("plain", o)] /
                                                       med[("onto", o)] - 1, 4)
    with open("/proc/loadavg") as f:
        fig["loadavg"] = f.read().split()[:3]
    return fig


if __name__ == "__main__":
    main()
