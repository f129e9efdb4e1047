"""`pertload recipe check` on the recipe for the real yeast files, against
counts computed here, independently, from the same gzip'd files.

usage: import_recipe_real.py PERTLOAD RECIPE
The data folder is $PERTLOAD_REAL_DATA, else <source root>/tests/data
($PERTLOAD_SOURCE_ROOT). The oracle implements the documented rules of
preprocess/import (names.h, import.h, reader.h, metab.h, samples.h) on its own: exact gene name,
alias by table precedence (ambiguous within a table -> unresolved), then the
same on ASCII upper case; pairs 'unordered' keep the first of each {a, b}.
"""
import gzip
import os
import subprocess
import sys
import tempfile



def expected(root):
    """The oracle: (gene list, {source: (counts, unresolved names)},
    {source: kept edges as (src, dst) gene indices, in file order}) of the
    real files under `root`, by the documented rules alone."""
    def lines(rel):
        with gzip.open(os.path.join(root, rel), "rt", encoding="utf-8", newline="") as f:
            for ln in f.read().split("\n"):
                yield ln[:-1] if ln.endswith("\r") else ln

    def upper(s):
        return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)

    gene_list = [ln.split()[0] for ln in lines("real/dango-string/yeast_string_genes.txt.gz") if ln]
    gi = {g: i for i, g in enumerate(gene_list)}
    ug = {}
    for g, i in gi.items():
        u = upper(g)
        ug[u] = i if u not in ug or ug[u] == i else None
    alias, ualias = {}, {}

    def put(d, key, g, prec):
        cur = d.get(key)
        if cur is None or cur[0] > prec:
            d[key] = (prec, g)
        elif cur[0] == prec and cur[1] != g:
            d[key] = (prec, None)

    def add(key, g, prec):
        if not key or key in gi:
            return
        put(alias, key, g, prec)
        put(ualias, upper(key), g, prec)

    for ln in lines("real-raw/sgd_features/SGD_features.tab.gz"):
        if not ln:
            continue
        f = ln.split("\t")
        assert len(f) == 16
        if f[3] in gi:
            g = gi[f[3]]
            add(f[4], g, 0)
            add(f[0], g, 0)
            for a in f[5].split("|"):
                add(a, g, 1)
    for prec, rel, gc, ac in ((2, "real/yeastract/orftogene.txt.gz", 1, 0),
                              (4, "real/yeast-gem/SGDgeneNames.tsv.gz", 0, 1)):
        for n, ln in enumerate(lines(rel)):
            if n == 0 or not ln:
                continue
            f = ln.split("\t")
            if f[gc] in gi:
                add(f[ac], gi[f[gc]], prec)

    def resolve(s):
        if s in gi:
            return gi[s]
        if s in alias:
            return alias[s][1]
        u = upper(s)
        if u in ug:
            return ug[u]
        return ualias.get(u, (0, None))[1]

    edges = {}

    def count(rows, unordered, keep=lambda r: True):
        c = dict(rows=0, filtered=0, unresolved=0, duplicates=0, kept=0)
        kept = []
        names = {}
        seen = set()
        for a, b, row in rows:
            c["rows"] += 1
            if not keep(row):
                c["filtered"] += 1
                continue
            ga, gb = resolve(a), resolve(b)
            for n, g in ((a, ga), (b, gb)):
                if g is None:
                    names[n] = names.get(n, 0) + 1
            if ga is None or gb is None:
                c["unresolved"] += 1
                continue
            if unordered:
                k = (min(ga, gb), max(ga, gb))
                if k in seen:
                    c["duplicates"] += 1
                    continue
                seen.add(k)
            c["kept"] += 1
            kept.append((ga, gb))
        c["unresolved_names"] = len(names)
        edges[len(edges)] = kept
        return c, names

    want = {}
    for ch in ("neighborhood", "fusion", "cooccurence", "database"):
        rows = []
        for ln in lines(f"real/dango-string/yeast_string_{ch}_adjacency.txt.gz"):
            if ln:
                i, j, w = ln.split()
                rows.append((gene_list[int(i) - 1], gene_list[int(j) - 1], float(w)))
        want["string_" + ch] = count(rows, True)
    rows = []
    for n, ln in enumerate(lines("real-raw/string/4932.protein.physical.links.v12.0.txt.gz")):
        if n and ln:
            a, b, s = ln.split(" ")
            rows.append((a.split(".", 1)[1], b.split(".", 1)[1], int(s)))
    want["string_physical"] = count(rows, True, lambda s: s >= 400)
    rows = [tuple(ln.split(";")) + (None,) for ln in
            lines("real/yeastract/RegulationTwoColumnTable_both.tsv.gz") if ln]
    want["regulatory"] = count(rows, False)
    for name, rel in (("physical_bim", "real/scl-bioinfo/BIM.txt.gz"),
                      ("physical_krogan", "real/bionic/Krogan-2006.txt.gz"),
                      ("coexpression_hu", "real/bionic/Hu-2007.txt.gz"),
                      ("genetic_similarity", "real/bionic/Costanzo-2016.txt.gz")):
        rows = [tuple(ln.split()[:2]) + (None,) for ln in lines(rel) if ln.strip()]
        want[name] = count(rows, True)
    rows = []
    hdr = None
    for ln in lines("real-raw/biogrid/yeast.tab2.txt.gz"):
        if not ln:
            continue
        f = ln.split("\t")
        if hdr is None:
            hdr = {c: k for k, c in enumerate(f)}
            continue
        rows.append((f[hdr["Systematic Name Interactor A"]], f[hdr["Systematic Name Interactor B"]],
                     f))
    want["biogrid_sample"] = count(rows, True, lambda f: f[hdr["Experimental System Type"]] ==
                                   "physical" and f[hdr["Organism Interactor A"]] == "559292" and
                                   f[hdr["Organism Interactor B"]] == "559292")

    order = list(want)
    expected.more = more(lines, resolve)
    return gene_list, want, {order[k]: e for k, e in edges.items()}


def more(lines, resolve):
    """The metabolism (from yeast-GEM's flat tables, derived from the same
    model) and the three Costanzo SGA subsets (strain tags stripped), by the
    documented rules: (metabolism counts, its unresolved names, [per table
    counts], the tables' unresolved names)."""
    def table(rel):
        return [ln.split("\t") for n, ln in enumerate(lines(rel)) if n and ln]

    m = dict(reactions=0, rmr=len(table("real/yeast-gem/rxn_met_stoich.tsv.gz")),
             metabolites=len(table("real/yeast-gem/metabolites.tsv.gz")),
             model_genes=len(table("real/yeast-gem/genes.tsv.gz")), rules=0, gpr=0,
             unresolved=0)
    m_names = set()
    for f in table("real/yeast-gem/reactions.tsv.gz"):
        m["reactions"] += 1
        tokens = f[5].replace("(", " ").replace(")", " ").split()
        genes = [t for t in tokens if t.lower() not in ("and", "or")]
        m["rules"] += bool(genes)
        distinct = set()
        for t in genes:
            g = resolve(t)
            if g is None:
                m["unresolved"] += 1
                m_names.add(t)
            else:
                distinct.add(g)
        m["gpr"] += len(distinct)
    m["unresolved_names"] = len(m_names)
    s_names, tables = set(), []
    for part in ("ExE", "ExN_NxE", "NxN"):
        c = dict(rows=0, kept=0, dropped_unresolved=0, unresolved_names=0, labels=6,
                 categories=1)
        for n, ln in enumerate(lines(f"real-raw/sga_costanzo2016/SGA_{part}.txt.gz")):
            if n == 0 or not ln:
                continue
            f = ln.split("\t")
            c["rows"] += 1
            miss = [x for x in (f[0].rsplit("_", 1)[0], f[2].rsplit("_", 1)[0])
                    if resolve(x) is None]
            for x in miss:
                if x not in s_names:
                    s_names.add(x)
                    c["unresolved_names"] += 1
            c["dropped_unresolved"] += bool(miss)
            c["kept"] += not miss
        tables.append(c)
    return m, m_names, tables, s_names


def main():
    exe, recipe = sys.argv[1], sys.argv[2]
    root = os.environ.get("PERTLOAD_REAL_DATA") or os.path.join(
        os.environ["PERTLOAD_SOURCE_ROOT"], "tests", "data")
    with tempfile.TemporaryDirectory() as tmp:
        unres_path = os.path.join(tmp, "unresolved.tsv")
        out = subprocess.run([exe, "recipe", "check", "--root", root, "--unresolved", unres_path,
                              recipe], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        with open(unres_path) as f:
            unres_lines = f.read().splitlines()
    got, got_samples, got_metab = {}, [], None
    for line in out.stdout.splitlines():
        parts = line.split()
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if line.startswith("source "):
            got[parts[1]] = kv
        elif line.startswith("metabolism "):
            got_metab = kv
        elif line.startswith("samples "):
            got_samples.append(kv)
    assert unres_lines[0] == "source\tname\tcount\tfirst_seen", unres_lines[0]
    listed = {}
    for line in unres_lines[1:]:
        src, name, count, where = line.split("\t")
        listed.setdefault(src, {})[name] = int(count)

    gene_list, want, _ = expected(root)
    assert set(got) == set(want), (sorted(got), sorted(want))
    bad = []
    for src, (c, names) in want.items():
        for k, v in c.items():
            if int(got[src][k]) != v:
                bad.append(f"{src}: {k} = {got[src][k]}, expected {v}")
        if listed.get(src, {}) != names:
            bad.append(f"{src}: the unresolved list differs from the expected one "
                       f"({len(listed.get(src, {}))} vs {len(names)} names)")
    # the figures of the provenance notes
    assert want["string_physical"][0]["rows"] == 352606
    assert want["regulatory"][0]["rows"] == 90895
    assert want["string_neighborhood"][0]["rows"] == 91220
    m_want, m_names, s_want, s_names = expected.more
    assert got_metab is not None and len(got_samples) == 3, out.stdout
    for k, v in m_want.items():
        if got_metab[k] != str(v):
            bad.append(f"metabolism: {k} = {got_metab[k]}, expected {v}")
    if set(listed.get("metabolism", {})) != m_names:
        bad.append("metabolism: the unresolved list differs from the expected one")
    for i, c in enumerate(s_want):
        for k, v in c.items():
            if got_samples[i][k] != str(v):
                bad.append(f"samples {i}: {k} = {got_samples[i][k]}, expected {v}")
    if set(listed.get("samples", {})) != s_names:
        bad.append("samples: the unresolved list differs from the expected one")
    assert m_want["reactions"] == 4131 and m_want["rmr"] == 15567
    assert sum(c["rows"] for c in s_want) == 150
    assert not bad, "\n".join(bad)
    print(f"metabolism, {len(s_want)} sample tables and {len(want)} sources agree: " + ", ".join(
        f"{s} kept {c['kept']}" for s, (c, _) in sorted(want.items())))


if __name__ == "__main__":
    main()
