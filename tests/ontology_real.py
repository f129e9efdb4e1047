"""The ontology layers on real GO data: `pertload build` with the GO ontology
(OBO 1.2, 2012) and the SGD annotations (GAF 2.0, 2011), checked against a
closure computed here, independently, from the same gzip'd files.

usage: ontology_real.py PERTLOAD
The data folder is $PERTLOAD_REAL_DATA, else <source root>/tests/data. The
oracle implements DESIGN section 10 and the documented rules of
preprocess/ontology/ontology.h on its own: terms in OBO stanza order, the gene
of a GAF row from column 3, then the synonyms of column 11, then column 2;
genes(T) over descendants; terms under the minimum removed, their rows moved to
the nearest kept ancestors; annotations deduplicated in row order; strata and
groups by (direct genes, children).
"""
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile


def read_obo(path):
    terms, alt, cur = [], {}, None
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n").rstrip(" \t")
            if line.startswith("["):
                cur = None
                if line == "[Term]":
                    cur = {"parents": [], "ns": "", "obsolete": False}
                    terms.append(cur)
                continue
            if cur is None or not line or line.startswith("!"):
                continue
            tag, _, val = line.partition(":")
            val = re.split(r"[ \t][!{]", val.strip())[0].strip()
            if tag == "id":
                cur["id"] = val
            elif tag == "namespace":
                cur["ns"] = val
            elif tag == "is_obsolete":
                cur["obsolete"] = val == "true"
            elif tag == "alt_id":
                alt.setdefault(val, cur)
            elif tag == "is_a":
                cur["parents"].append(("is_a", val.split()[0]))
            elif tag == "relationship":
                rel, target = val.split()[:2]
                cur["parents"].append((rel, target))
    ids = {t["id"]: t for t in terms}
    return terms, ids, {a: t["id"] for a, t in alt.items()}


def read_gaf(path, ids, alt, genes, exclude):
    rows, unknown = [], 0
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("!"):
                continue
            c = line.split("\t")
            if "NOT" in c[3].split("|") or c[6] in exclude:
                continue
            term = c[4] if c[4] in ids else alt.get(c[4])
            if term is None:
                continue
            cands = [c[2]] + c[10].split("|") + [c[1]]
            g = next((genes[x] for x in cands if x in genes), None)
            if g is None:
                unknown += 1
                continue
            rows.append((g, term))
    return rows, unknown


def gene_closure(direct, children):
    """genes_of(t): the genes annotated to term t (direct[t], a set) or to
    any term below it (children[t], its child terms), remembered per term."""
    memo = {}

    def genes_of(t):
        if t not in memo:
            s = set(direct[t])
            for c in children[t]:
                s |= genes_of(c)
            memo[t] = s
        return memo[t]

    sys.setrecursionlimit(100000)
    return genes_of


def oracle(terms, ids, rows, namespaces, relations, min_genes):
    keep = [t["id"] for t in terms
            if not t["obsolete"] and (namespaces is None or t["ns"] in namespaces)]
    kset = set(keep)
    parents = {t: [] for t in keep}
    children = {t: [] for t in keep}
    for t in keep:
        for rel, p in ids[t]["parents"]:
            if rel in relations and p in kset:
                parents[t].append(p)
                children[p].append(t)
    direct = {t: set() for t in keep}
    for g, t in rows:
        if t in kset:
            direct[t].add(g)
    genes_of = gene_closure(direct, children)
    final = [t for t in keep if len(genes_of(t)) >= max(min_genes, 1)]
    index = {t: i for i, t in enumerate(final)}

    def nearest(t, step):
        out, todo, seen = set(), list(step[t]), set()
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            if x in index:
                out.add(index[x])
            else:
                todo.extend(step[x])
        return out

    ann, seen = [], set()
    for g, t in rows:
        if t not in kset:
            continue
        for k in sorted([index[t]] if t in index else nearest(t, parents)):
            if (g, k) not in seen:
                seen.add((g, k))
                ann.append((g, k))
    kids = [sorted(nearest(t, children)) for t in final]
    dgenes = [set() for _ in final]
    for g, k in ann:
        dgenes[k].add(g)
    stratum = {}

    def strat(k):
        if k not in stratum:
            stratum[k] = 1 + max((strat(c) for c in kids[k]), default=-1)
        return stratum[k]

    for k in range(len(final)):
        strat(k)
    gset = [genes_of(t) for t in final]
    return final, ann, kids, dgenes, stratum, gset


def write_bp_dcell(path, terms, rows, genes):
    """GO biological process (is_a edges between kept, non-obsolete terms)
    with annotation rows (gene index, term) as a three-column `parent child
    type` file; gene index g is named genes[g] (rows past the list are left
    out)."""
    bp = {t["id"] for t in terms if t["ns"] == "biological_process" and not t["obsolete"]}
    with open(path, "w") as f:
        for t in terms:
            if t["id"] in bp:
                for rel, p in t["parents"]:
                    if rel == "is_a" and p in bp:
                        f.write(f"{p}\t{t['id']}\tdefault\n")
        for g, t in rows:
            if t in bp and g < len(genes):
                f.write(f"{t}\t{genes[g]}\tgene\n")


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, (cmd, out.stdout, out.stderr)
    return out.stdout


def check(exe, root, tmp, genes, names, terms, ids, alt, cfg, rng):
    go = os.path.join(root, "real-raw", "go")
    rows, unknown = read_gaf(os.path.join(go, "gene_association.sgd.gz"), ids, alt, genes,
                             cfg["exclude"])
    final, ann, kids, dgenes, stratum, gset = oracle(terms, ids, rows, cfg["ns"],
                                                     cfg["rel"], cfg["min"])
    db = os.path.join(tmp, cfg["name"])
    args = [exe, "build", "-o", db, "--genes", os.path.join(tmp, "genes.txt"),
            "--edges", "physical=" + os.path.join(tmp, "e.tsv"),
            "--samples", os.path.join(tmp, "s.tsv"),
            "--ontology", os.path.join(go, "gene_ontology.1_2.obo.gz"),
            "--annotations", os.path.join(go, "gene_association.sgd.gz")] + cfg["args"]
    out = run(args)
    n_strata = 1 + max(stratum.values())
    want = "ontology: %d terms, %d annotations, %d strata (%d annotation rows of unknown " \
           "genes)" % (len(final), len(ann), n_strata, unknown)
    assert want in out, (want, out)
    insp = run([exe, "inspect", db])
    groups = {}
    for k in range(len(final)):
        groups.setdefault(stratum[k], set()).add((len(dgenes[k]), len(kids[k])))
    per = " ".join("%d:%d/%d" % (s, sum(1 for k in stratum if stratum[k] == s), len(groups[s]))
                   for s in range(n_strata))
    assert "  strata (terms/groups): " + per + "\n" in insp, (per, insp)
    links = sum(len(k) for k in kids)
    assert "ontology: %d terms, %d child links, %d direct (term, gene) pairs, %d annotations; " \
           "depth %d (strata), %d groups" % (len(final), links, len(ann), len(ann), n_strata,
                                              sum(len(g) for g in groups.values())) in insp, insp
    run([exe, "verify", db])
    annotated = sorted({g for g, _ in ann})
    for rep in range(40):
        pool = annotated if rep % 4 else range(len(names))
        pert = set(rng.sample(list(pool), 1 + rep % 3))
        sel = ",".join(names[g] for g in pert)
        got = json.loads(run([exe, "masks", db, "--genes", sel, "--json"]))
        terms_hit = [k for k in range(len(final)) if gset[k] & pert]
        ann_hit = [i for i, (g, _) in enumerate(ann) if g in pert]
        assert got["ontology/term"] == terms_hit, (sel, len(got["ontology/term"]), len(terms_hit))
        assert got["ontology/annotation"] == ann_hit, sel
    return len(final), len(ann), n_strata


def main():
    exe = sys.argv[1]
    root = os.environ.get("PERTLOAD_REAL_DATA") or os.path.join(
        os.environ["PERTLOAD_SOURCE_ROOT"], "tests", "data")
    with gzip.open(os.path.join(root, "real-raw", "sgd_features", "SGD_features.tab.gz"),
                   "rt") as f:
        names = sorted({c[3] for c in (l.rstrip("\n").split("\t") for l in f)
                        if len(c) > 3 and c[1] == "ORF" and c[3]})
    genes = {n: i for i, n in enumerate(names)}
    terms, ids, alt = read_obo(os.path.join(root, "real-raw", "go", "gene_ontology.1_2.obo.gz"))
    rng = random.Random(7)
    configs = [
        {"name": "bp", "ns": {"biological_process"}, "rel": {"is_a", "part_of"},
         "exclude": {"IEA"}, "min": 3,
         "args": ["--go-namespace", "biological_process", "--go-relations", "is_a,part_of",
                  "--exclude-evidence", "IEA", "--min-term-genes", "3"]},
        {"name": "all", "ns": None, "rel": {"is_a"}, "exclude": set(), "min": 0, "args": []},
    ]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "genes.txt"), "w") as f:
            f.write("\n".join(names) + "\n")
        with open(os.path.join(tmp, "e.tsv"), "w") as f:
            f.write("%s\t%s\n" % (names[0], names[1]))
        with open(os.path.join(tmp, "s.tsv"), "w") as f:
            f.write("id\tgenes\tfitness\n1\t%s\t0.5\n" % names[2])
        for cfg in configs:
            t, a, s = check(exe, root, tmp, genes, names, terms, ids, alt, cfg, rng)
            print("%s: %d terms, %d annotations, %d strata: ok" % (cfg["name"], t, a, s))


if __name__ == "__main__":
    main()
