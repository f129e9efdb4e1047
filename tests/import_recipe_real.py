"""`pertload recipe check` on the recipe for the real yeast files, against
counts computed here, independently, from the same gzip'd files.

usage: import_recipe_real.py PERTLOAD RECIPE
The data folder is $PERTLOAD_REAL_DATA, else <source root>/tests/data
($PERTLOAD_SOURCE_ROOT). The oracle implements the documented rules of
preprocess/import (names.h, import.h, reader.h, metab.h, samples.h) and of
preprocess/ontology/ontology.h on its own: exact gene name,
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
    expected.ontology = ontology(root, resolve)
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


def ontology(root, resolve, namespaces=("biological_process",), relations=("is_a", "part_of"),
             exclude_evidence=("ND",), min_term_genes=3):
    """GO (OBO) and the SGD GAF with the recipe's filters, by the documented
    rules of ontology.h: (counts terms, annotations, strata, rows,
    unresolved, unresolved_names; {unresolved name: rows})."""
    def lines(rel):
        with gzip.open(os.path.join(root, rel), "rt", encoding="utf-8", newline="") as f:
            for ln in f.read().split("\n"):
                yield ln[:-1] if ln.endswith("\r") else ln

    # OBO: [Term] stanzas; edges child -> parent of the relations asked for
    defined, obsolete, ns, alt, edges = [], set(), {}, {}, []
    term = None
    for ln in lines("real-raw/go/gene_ontology.1_2.obo.gz"):
        ln = ln.strip()
        if ln.startswith("["):
            term = "" if ln == "[Term]" else None
            continue
        if term is None or ":" not in ln or ln.startswith("!"):
            continue
        tag, val = ln.split(":", 1)
        val = val.split("!", 1)[0].split()
        if tag == "id":
            term = val[0]
            defined.append(term)
        elif tag == "namespace":
            ns[term] = val[0]
        elif tag == "is_obsolete" and val[0] == "true":
            obsolete.add(term)
        elif tag == "alt_id":
            alt.setdefault(val[0], term)
        elif tag == "is_a" and "is_a" in relations:
            edges.append((term, val[0]))
        elif tag == "relationship" and val[0] in relations:
            edges.append((term, val[1]))
    dset = set(defined)
    keep = {t for t in defined if t not in obsolete and ns.get(t) in namespaces}
    parents = {t: [] for t in keep}
    children = {t: [] for t in keep}
    for c, p in edges:
        if c in keep and p in keep:
            parents[c].append(p)
            children[p].append(c)
    # GAF rows: NOT and excluded evidence dropped, then the term, then the gene
    c = dict(rows=0, unresolved=0)
    names, rows = {}, []
    for ln in lines("real-raw/go/gene_association.sgd.gz"):
        if not ln or ln.startswith("!"):
            continue
        f = ln.split("\t")
        c["rows"] += 1
        if "NOT" in f[3].split("|") or f[6] in exclude_evidence:
            continue
        t = f[4] if f[4] in dset else alt.get(f[4])
        if t is None:
            continue
        g = resolve(f[2])
        for s in f[10].split("|"):
            if g is None and s:
                g = resolve(s)
        if g is None:
            g = resolve(f[1])
        if g is None:
            c["unresolved"] += 1
            names[f[2]] = names.get(f[2], 0) + 1
            continue
        rows.append((g, t))
    # genes(T): annotated to T or to a descendant
    genes = {}

    def closure(t):
        if t not in genes:
            s = set(g for g in direct.get(t, ()))
            for ch in children[t]:
                s |= closure(ch)
            genes[t] = s
        return genes[t]

    direct = {}
    for g, t in rows:
        if t in keep:
            direct.setdefault(t, set()).add(g)
    kept = {t for t in keep if len(closure(t)) >= max(min_term_genes, 1)}
    # removed terms: annotations to the nearest kept ancestors, children to
    # the nearest kept descendants
    anc, desc = {}, {}

    def near(t, up, memo):
        if t not in memo:
            s = set()
            for x in (parents if up else children)[t]:
                s |= {x} if x in kept else near(x, up, memo)
            memo[t] = s
        return memo[t]

    seen, n_ann = set(), 0
    for g, t in rows:
        if t not in keep:
            continue
        for k in ({t} if t in kept else near(t, True, anc)):
            if (g, k) not in seen:
                seen.add((g, k))
                n_ann += 1
    stratum = {}

    def strat(t):
        if t not in stratum:
            ch = set()
            for x in children[t]:
                ch |= {x} if x in kept else near(x, False, desc)
            stratum[t] = 1 + max(map(strat, ch)) if ch else 0
        return stratum[t]

    c.update(terms=len(kept), annotations=n_ann, strata=1 + max(map(strat, kept)),
             unresolved_names=len(names))
    return c, names


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
    got, got_samples, got_metab, got_onto = {}, [], None, None
    for line in out.stdout.splitlines():
        parts = line.split()
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if line.startswith("source "):
            got[parts[1]] = kv
        elif line.startswith("metabolism "):
            got_metab = kv
        elif line.startswith("samples "):
            got_samples.append(kv)
        elif line.startswith("ontology "):
            got_onto = kv
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
    o_want, o_names = expected.ontology
    assert got_onto is not None, out.stdout
    for k, v in o_want.items():
        if got_onto[k] != str(v):
            bad.append(f"ontology: {k} = {got_onto[k]}, expected {v}")
    if listed.get("ontology", {}) != o_names:
        bad.append("ontology: the unresolved list differs from the expected one")
    # the figures of the provenance notes (SOURCES.md): 87,711 GAF rows
    assert o_want["rows"] == 87711
    assert m_want["reactions"] == 4131 and m_want["rmr"] == 15567
    assert sum(c["rows"] for c in s_want) == 150
    assert not bad, "\n".join(bad)
    print(f"ontology ({o_want['terms']} terms, {o_want['annotations']} annotations), "
          f"metabolism, {len(s_want)} sample tables and {len(want)} sources agree: " + ", ".join(
        f"{s} kept {c['kept']}" for s, (c, _) in sorted(want.items())))


if __name__ == "__main__":
    main()
