"""`pertload build --recipe` and the fingerprints.

The real yeast recipe against an oracle that reads the raw files on its own
(tests/import_recipe_real.py), the recipe path against the file path, failed
recipe builds, and the client refusing batches and graphs of different
databases. Digests and fingerprints are recomputed here with an XXH64 of
this file's own, from the public specification."""

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pertload
from conftest import pertload_bin, run_cli

SOURCE = Path(__file__).resolve().parents[2]
M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, v):
    return (_rotl((acc + v * P2) & M64, 31) * P1) & M64


def xxh64(data, seed=0):
    """XXH64 of `data` (bytes), as the xxHash specification defines it."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        words = np.frombuffer(data, "<u8", (n // 32) * 4).tolist()
        for k in range(0, len(words), 4):
            v = [_round(v[j], words[k + j]) for j in range(4)]
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ _round(0, x)) * P1 + P4) & M64
        i = (n // 32) * 32
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h = ((_rotl(h ^ _round(0, int.from_bytes(data[i:i + 8], "little")), 27) * P1) + P4) & M64
        i += 8
    if i + 4 <= n:
        h = ((_rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * P1 & M64), 23) * P2) + P3) & M64
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * P5 & M64), 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    return h ^ (h >> 32)


def test_xxh64_known_values():
    # reference values of the xxHash project (XXH64, seed 0)
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"a") == 0xD24EC4F1A98C6E5B
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert xxh64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1


def gene_fp(names):
    return xxh64(b"".join(n.encode() + b"\0" for n in names))


def edge_fp(ei):
    return xxh64(ei[0].astype("<i4").tobytes() + ei[1].astype("<i4").tobytes())


def inspect(db):
    return run_cli("inspect", db).stdout


def build_fails(*args):
    r = subprocess.run([pertload_bin(), "build", *map(str, args)], capture_output=True,
                       text=True)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    return r.stderr


# ------------------------------------------------------------ the real recipe

def test_real_recipe_against_the_raw_files(tmp_path):
    sys.path.insert(0, str(SOURCE / "tests"))
    try:
        import import_recipe_real
    finally:
        sys.path.pop(0)
    root = Path(os.environ.get("PERTLOAD_REAL_DATA") or SOURCE / "tests" / "data")
    recipe = SOURCE / "recipes" / "yeast-real.yaml"
    db = tmp_path / "yeast"
    unres = tmp_path / "unresolved.tsv"
    out = run_cli("build", "--recipe", recipe, "--root", root, "-o", db, "--quiet",
                  "--unresolved", unres)
    assert out.stdout == ""
    genes, want, kept = import_recipe_real.expected(str(root))
    # every unresolved name, the metabolism's and the sample tables' too,
    # as `recipe check` lists them and as the oracle finds them
    listed = {}
    for ln in unres.read_text().splitlines()[1:]:
        source, name = ln.split("\t")[:2]
        listed.setdefault(source, set()).add(name)
    _, m_names, _, s_names = import_recipe_real.expected.more
    o_want, o_names = import_recipe_real.expected.ontology
    assert listed.get("metabolism", set()) == m_names
    assert listed.get("ontology", set()) == set(o_names) and o_names
    assert listed.get("samples", set()) == s_names and s_names
    check = run_cli("recipe", "check", "--root", root, "--unresolved", tmp_path / "check.tsv",
                    recipe)
    assert check.returncode == 0
    assert unres.read_text() == (tmp_path / "check.tsv").read_text()
    g = pertload.Graph(pertload._lib.Database(db))
    assert g.gene_names == genes
    assert g.type_names == list(want)
    text = inspect(db)
    for name, (counts, _) in want.items():
        # the edge arrays: every kept edge, in file order
        ei = g.edge_index[name]
        expect = np.array(kept[name], np.int64).reshape(-1, 2).T
        np.testing.assert_array_equal(ei, expect, err_msg=name)
        assert g.n_edges[name] == counts["kept"]
        assert g.edge_fingerprints[name] == edge_fp(ei)
        assert re.search(rf"^  {name} +{counts['kept']} edges, fingerprint "
                         rf"{g.edge_fingerprints[name]:016x}$", text, re.M), name
        line = re.search(rf"^recipe source: {name} (.*)$", text, re.M).group(1)
        got = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        for k in ("rows", "filtered", "unresolved", "duplicates", "kept"):
            assert int(got[k]) == counts[k], (name, k, got[k], counts[k])
    # spot checks by name: the first rows of two raw files are edges
    gi = {n: i for i, n in enumerate(genes)}
    import gzip
    with gzip.open(root / "real/bionic/Krogan-2006.txt.gz", "rt") as f:
        a, b = f.readline().split()[:2]
    assert (gi[a], gi[b]) == tuple(g.edge_index["physical_krogan"][:, 0])
    with gzip.open(root / "real/scl-bioinfo/BIM.txt.gz", "rt") as f:
        rows = [ln.split()[:2] for ln in f.read().splitlines()[:50]]
    bim = set(zip(*g.edge_index["physical_bim"].tolist()))
    for a, b in rows:
        assert (gi[a], gi[b]) in bim or (gi[b], gi[a]) in bim
    # fingerprints, the stored recipe and the digests of its inputs
    assert g.gene_fingerprint == gene_fp(genes)
    assert f"gene fingerprint: {g.gene_fingerprint:016x}" in text
    assert g.recipe == recipe.read_text()
    assert run_cli("inspect", "--recipe", db).stdout == recipe.read_text()
    inputs = re.findall(r"^recipe input: (\d+)\t([0-9a-f]{16})\t(.*)$", text, re.M)
    assert len(inputs) == 21  # 15, yeast-GEM, three SGA tables, GO and its GAF
    for size, digest, path in inputs:
        data = Path(path).read_bytes()
        assert int(size) == len(data) and int(digest, 16) == xxh64(data), path
    # the metabolism (yeast-GEM YAML) and the samples (SGA tables) against
    # the oracle's own counts from the flat tables and the raw SGA files
    m, _, tables, _ = import_recipe_real.expected.more
    assert (f"metabolism: {m['reactions']} reactions, {m['metabolites']} metabolites, "
            f"{m['gpr']} GPR edges, {m['rmr']} RMR edges") in text
    assert f"({m['rules']} reactions with a gene-reaction rule)" in text
    kept = sum(t["kept"] for t in tables)
    assert re.search(rf"^samples: {kept} in ", text, re.M), text
    assert "labels: epsilon pvalue query_smf array_smf dmf dmf_std\n" in text
    assert "category columns: 1 (kept apart from the labels)" in text
    assert (m["reactions"], m["rmr"], kept) == (4131, 15567, 148)
    # the category column keeps its level names: the Arraytype/Temp values in
    # order of first appearance over the tables' rows, in recipe order
    levels = []
    for part in ("ExE", "ExN_NxE", "NxN"):
        with gzip.open(root / f"real-raw/sga_costanzo2016/SGA_{part}.txt.gz", "rt") as f:
            for n, ln in enumerate(f):
                v = ln.rstrip("\n").split("\t")[4] if n and ln.strip() else None
                if v is not None and v not in levels:
                    levels.append(v)
    # the ontology (GO biological process, SGD annotations) against the
    # oracle's own OBO/GAF reading, closure and filter
    assert re.search(rf"^ontology: {o_want['terms']} terms, \d+ child links, \d+ direct "
                     rf"\(term, gene\) pairs, {o_want['annotations']} annotations; depth "
                     rf"{o_want['strata']} \(strata\)", text, re.M), text
    line = re.search(r"^recipe source: ontology (.*)$", text, re.M).group(1)
    got = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    for k in ("terms", "annotations", "strata", "rows", "unresolved"):
        assert int(got[k]) == o_want[k], (k, got[k], o_want[k])
    assert got["file"] == str(root / "real-raw/go/gene_ontology.1_2.obo.gz")
    assert got["annotation_file"] == str(root / "real-raw/go/gene_association.sgd.gz")
    graph = pertload.Loader(db).graph
    assert graph.categories == graph.label_levels == {"arraytype_temp": levels}
    assert "arraytype_temp" not in graph.label_names
    assert f"category: arraytype_temp\t{chr(9).join(levels)}" in text
    run_cli("verify", db)


# ------------------------------------------------------- recipe = file path

GENES = ["YAL001C", "YAL002W", "YAL003W", "YAL004W", "YAL005C", "YAL007C"]
PHYS = [("YAL001C", "YAL002W", 0.9), ("YAL003W", "YAL004W", 0.2), ("YAL005C", "YAL001C", 0.5),
        ("YAL002W", "YAL007C", 0.7)]
REG = [("YAL002W", "YAL005C"), ("YAL002W", "YAL003W"), ("YAL007C", "YAL001C")]
SAMPLES = ("genes\tid\tfitness\nYAL001C\t1\t0.5\nYAL003W;YAL005C\t2\t-1\nYAL002W\t3\t2\n"
           "YAL004W;YAL007C\t4\tNA\n")


def write_inputs(d, genes=GENES):
    d.mkdir()
    (d / "genes.txt").write_text("".join(g + "\n" for g in genes))
    (d / "phys.tsv").write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in PHYS))
    (d / "reg.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in REG))
    (d / "samples.tsv").write_text(SAMPLES)
    (d / "recipe.yaml").write_text(
        "version: 1\ngenes: {file: genes.txt}\nedges:\n"
        "  - {name: physical, format: delim, file: phys.tsv, source: 1, target: 2, score: 3}\n"
        "  - {name: regulatory, format: delim, file: reg.tsv, source: 1, target: 2}\n"
        "samples: {format: tsv, file: samples.tsv}\n")
    return d


def file_build(d, out):
    run_cli("build", "-o", out, "--genes", d / "genes.txt", "--edges",
            f"physical={d / 'phys.tsv'}", "--edges", f"regulatory={d / 'reg.tsv'}",
            "--samples", d / "samples.tsv", "--quiet")


def batches(db):
    out = []
    with pertload.Loader(db, batch_size=2, threads=1) as loader:
        for b in loader:
            out.append({k: np.array(v) for k, v in b.arrays.items()})
    return out


def test_recipe_equals_file_path(tmp_path):
    d = write_inputs(tmp_path / "in")
    a, b = tmp_path / "files", tmp_path / "recipe"
    file_build(d, a)
    run_cli("build", "--recipe", d / "recipe.yaml", "-o", b, "--quiet")
    ga = pertload.Graph(pertload._lib.Database(a))
    gb = pertload.Graph(pertload._lib.Database(b))
    assert ga.gene_names == gb.gene_names == GENES
    for t in ("physical", "regulatory"):
        np.testing.assert_array_equal(ga.edge_index[t], gb.edge_index[t])
    assert (ga.gene_fingerprint, ga.edge_fingerprints) == (gb.gene_fingerprint,
                                                         gb.edge_fingerprints)

    def summary(db):  # all but the build parameters and the recipe lines
        return [ln for ln in inspect(db).replace(str(db), "DB").splitlines()
                if not ln.startswith(("build parameters:", "recipe", "sizes:"))]
    assert summary(a) == summary(b)
    ba, bb = batches(a), batches(b)
    assert len(ba) == len(bb) == 2
    for x, y in zip(ba, bb):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)
    assert gb.recipe == (d / "recipe.yaml").read_text()
    assert ga.recipe == "" and ga.label_levels == gb.label_levels == {}
    check = run_cli("recipe", "check", d / "recipe.yaml").stdout
    assert f"samples format=tsv file={d}/samples.tsv payload=- (read by build)" in check


# ------------------------------------------------------------ failed builds

def nothing_at(out):
    assert not out.exists()
    assert not list(out.parent.glob(out.name + "*")), list(out.parent.iterdir())


def test_failed_recipe_builds_leave_nothing(tmp_path):
    d = write_inputs(tmp_path / "in")
    out = tmp_path / "db"
    r = d / "recipe.yaml"
    text = r.read_text()
    # an edge source whose file is missing: the recipe line that names it
    r.write_text(text.replace("file: reg.tsv", "file: nope.tsv"))
    err = build_fails("--recipe", r, "-o", out)
    assert f"{r}:5: {d}/nope.tsv: " in err and "No such file" in err, err
    nothing_at(out)
    # an unknown gene, strict: the file, line and column
    (d / "reg2.tsv").write_text("YAL002W\tYAL005C\nYAL002W\tNOTAGENE\n")
    r.write_text(text.replace("file: reg.tsv", "file: reg2.tsv"))
    err = build_fails("--recipe", r, "--strict", "-o", out)
    assert f"{d}/reg2.tsv:2:9: unresolved gene name 'NOTAGENE' (strict mode)" in err, err
    nothing_at(out)
    # an unresolved list that cannot be created: checked before building
    err = build_fails("--recipe", r, "--unresolved", d / "no" / "u.tsv", "-o", out)
    assert f"{d}/no/u.tsv: cannot create" in err, err
    nothing_at(out)
    # not strict: the row is dropped and counted, in the database and the list
    run_cli("build", "--recipe", r, "--unresolved", d / "u.tsv", "-o", out, "--quiet")
    assert "regulatory format=delim rows=2 filtered=0 unresolved=1 duplicates=0 kept=1" in \
        inspect(out)
    assert (d / "u.tsv").read_text() == ("source\tname\tcount\tfirst_seen\n"
                                         f"regulatory\tNOTAGENE\t1\t{d}/reg2.tsv:2\n")
    out2 = tmp_path / "db2"
    # a samples row naming an unknown gene, strict
    (d / "s2.tsv").write_text("genes\nYAL001C\nYAL002W;NOPE\n")
    r.write_text(text.replace("file: samples.tsv", "file: s2.tsv"))
    err = build_fails("--recipe", r, "--strict", "-o", out2)
    assert f"{d}/s2.tsv:3:9: unknown gene 'NOPE'" in err, err
    nothing_at(out2)
    # a recipe error
    r.write_text(text + "sampels: 3\n")
    err = build_fails("--recipe", r, "-o", out2)
    assert f"{r}:7:1: unknown key 'sampels'" in err, err
    nothing_at(out2)
    # the output exists already
    r.write_text(text)
    err = build_fails("--recipe", r, "-o", out)
    assert "already exists" in err


# ------------------------------------------------------------- fingerprints

def test_batches_and_graphs_of_different_databases_refused(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    file_build(write_inputs(tmp_path / "ia"), a)
    # the same genes in another order: the same counts, other indices
    file_build(write_inputs(tmp_path / "ib", GENES[::-1]), b)
    # the same genes, one edge of type physical replaced: same counts again
    dc = write_inputs(tmp_path / "ic")
    (dc / "phys.tsv").write_text((dc / "phys.tsv").read_text().replace(
        "YAL003W\tYAL004W", "YAL003W\tYAL007C"))
    file_build(dc, c)
    ga, gb, gc = (pertload.Graph(pertload._lib.Database(x)) for x in (a, b, c))
    assert ga.n_edges == gb.n_edges == gc.n_edges and ga.n_genes == gb.n_genes
    assert ga.gene_fingerprint != gb.gene_fingerprint
    assert ga.gene_fingerprint == gc.gene_fingerprint == gene_fp(GENES)
    assert gb.gene_fingerprint == gene_fp(GENES[::-1])
    assert ga.edge_fingerprints["regulatory"] == gc.edge_fingerprints["regulatory"]
    assert ga.edge_fingerprints["physical"] != gc.edge_fingerprints["physical"]
    with pertload.Loader(a, batch_size=2, threads=1) as loader:
        for batch in loader:
            assert batch.gene_fingerprint == ga.gene_fingerprint
            assert batch.edge_fingerprints == ga.edge_fingerprints
            pertload.check_same_database(batch, ga)
            pertload.check_same_database(batch, loader.graph)
            with pytest.raises(pertload.LoaderError, match="the batch and the graph come from "
                               "different databases: different gene lists"):
                pertload.check_same_database(batch, gb)
            with pytest.raises(pertload.LoaderError, match="different databases: edge type "
                               "'physical' differs"):
                pertload.check_same_database(batch, gc)
            with pytest.raises(pertload.LoaderError, match="different gene lists"):
                batch.to_torch(graph=gb)
            t = batch.to_torch(graph=ga)
            assert t["gene"]["mask"].shape[1] == len(GENES)


# ------------------------------------------- model files and sample tables

def test_model_and_sample_tables(tmp_path):
    """A yeast-gem model and a table with a category build through the
    in-memory seams; an unresolved gene in a sample table fails --strict at
    its file:line:col and leaves nothing behind."""
    d = write_inputs(tmp_path / "in")
    (d / "model.yml").write_text(
        "reactions:\n"
        "  - {id: r1, metabolites: {a: -1, b: 2}, gene_reaction_rule: YAL001C and YAL002W}\n"
        "  - {id: r2, metabolites: {b: -1}, gene_reaction_rule: yal003w or YAL004W}\n"
        "  - {id: r3, metabolites: {c: 1}}\n")
    (d / "screen.csv").write_text("query,array,fitness,split\nYAL001C,YAL002W,0.5,train\n"
                                  "YAL003W,,1.5,test\nYAL005C,NOPE,2,train\n")
    recipe = d / "recipe.yaml"
    recipe.write_text(
        "version: 1\ngenes: {file: genes.txt}\nedges:\n"
        "  - {name: physical, format: delim, file: phys.tsv, source: 1, target: 2}\n"
        "metabolism: {format: yeast-gem, file: model.yml}\n"
        "samples: {format: table, file: screen.csv, sep: ',', gene_columns: [query, array],"
        " categories: [split]}\n")
    db = tmp_path / "db"
    run_cli("build", "--recipe", recipe, "-o", db, "--quiet")
    text = inspect(db)
    assert "metabolism: 3 reactions, 3 metabolites, 4 GPR edges, 4 RMR edges" in text
    assert "(2 reactions with a gene-reaction rule)" in text
    assert re.search(r"^samples: 2 in ", text, re.M), text
    assert "labels: fitness\n" in text  # the category split is no label
    assert "category: split\ttrain\ttest\n" in text
    run_cli("verify", db)
    err = build_fails("--recipe", recipe, "--strict", "-o", tmp_path / "db2")
    assert f"{d}/screen.csv:4:9: unresolved gene name 'NOPE' (strict mode)" in err, err
    assert not any(p.name.startswith("db2") for p in tmp_path.iterdir())


# ------------------------------------------------------------------ ontology

OBO = ("format-version: 1.2\n\n[Term]\nid: GO:0000001\nnamespace: biological_process\n\n"
       "[Term]\nid: GO:0000002\nnamespace: biological_process\nis_a: GO:0000001\n\n"
       "[Term]\nid: GO:0000003\nnamespace: biological_process\n"
       "relationship: part_of GO:0000001\n\n"
       "[Term]\nid: GO:0000004\nnamespace: molecular_function\n")


def gaf_row(symbol, term, synonyms=""):
    return (f"SGD\tS0\t{symbol}\t\t{term}\tPMID:1\tIDA\t\tP\tname\t{synonyms}\tgene\t"
            f"taxon:4932\t20111224\tSGD\t\t\n")


def test_recipe_ontology(tmp_path):
    """The ontology part: its names resolve through the recipe's aliases, its
    files are digested, its counts stored; with exact names it equals
    `build --ontology --annotations` of the same files; malformed parts,
    --strict and a missing file fail at recipe:line:col (or the file's
    position) and leave nothing behind."""
    d = write_inputs(tmp_path / "in")
    (d / "go.obo").write_text(OBO)
    exact = [gaf_row("YAL001C", "GO:0000002"), gaf_row("YAL002W", "GO:0000003"),
             gaf_row("YAL003W", "GO:0000002"), gaf_row("YAL005C", "GO:0000004")]
    (d / "exact.gaf").write_text("!gaf-version: 2.0\n" + "".join(exact))
    (d / "alias.tsv").write_text("YAL004W\tTFC3\n")
    (d / "named.gaf").write_text("".join(exact) + gaf_row("TFC3", "GO:0000003") +
                                 gaf_row("S000001", "GO:0000003", "x|yal007c") +
                                 gaf_row("NOPE", "GO:0000002"))
    base = (d / "recipe.yaml").read_text()
    recipe = d / "go.yaml"

    def write(part, aliases=False):
        text = base.replace("genes: {file: genes.txt}", "genes: {file: genes.txt, aliases: "
                            "[{file: alias.tsv, format: table}]}") if aliases else base
        recipe.write_text(text + part)

    # exact names: the same ontology as the file path
    write("ontology:\n  format: obo\n  file: go.obo\n  annotations: exact.gaf\n"
          "  namespaces: [biological_process]\n  relations: [is_a, part_of]\n")
    a, b = tmp_path / "a", tmp_path / "b"
    run_cli("build", "--recipe", recipe, "-o", a, "--quiet")
    run_cli("build", "-o", b, "--genes", d / "genes.txt", "--edges",
            f"physical={d / 'phys.tsv'}", "--edges", f"regulatory={d / 'reg.tsv'}",
            "--samples", d / "samples.tsv", "--ontology", d / "go.obo", "--annotations",
            d / "exact.gaf", "--go-namespace", "biological_process", "--go-relations",
            "is_a,part_of", "--quiet")
    oa, ob = pertload.Loader(a).graph.ontology, pertload.Loader(b).graph.ontology
    assert oa.term_names == ob.term_names == ["GO:0000001", "GO:0000002", "GO:0000003"]
    np.testing.assert_array_equal(oa.annotation_index, ob.annotation_index)
    np.testing.assert_array_equal(oa.children[1], ob.children[1])
    np.testing.assert_array_equal(oa.stratum, ob.stratum)
    text = inspect(a)
    assert (f"recipe source: ontology format=obo terms=3 annotations=3 strata=2 rows=4 "
            f"unresolved=0 file={d}/go.obo annotation_file={d}/exact.gaf") in text, text
    for f in ("go.obo", "exact.gaf"):
        data = (d / f).read_bytes()
        assert f"recipe input: {len(data)}\t{xxh64(data):016x}\t{d}/{f}" in text, text
    # names through the aliases (column 3), a synonym (column 11); one unresolved
    write("ontology:\n  format: obo\n  file: go.obo\n  annotations: named.gaf\n"
          "  relations: [is_a, part_of]\n  min_term_genes: 2\n", aliases=True)
    c = tmp_path / "c"
    u = tmp_path / "u.tsv"
    run_cli("build", "--recipe", recipe, "-o", c, "--quiet", "--unresolved", u)
    o = pertload.Loader(c).graph.ontology
    genes = pertload.Loader(c).graph.gene_names
    pairs = {(genes[g], o.term_names[t]) for g, t in o.annotation_index.T}
    assert ("YAL004W", "GO:0000003") in pairs and ("YAL007C", "GO:0000003") in pairs
    assert o.term_names == ["GO:0000001", "GO:0000002", "GO:0000003"]  # GO:4: one gene
    assert "ontology format=obo terms=3 annotations=5 strata=2 rows=7 unresolved=1 " in \
        inspect(c)
    assert f"ontology\tNOPE\t1\t{d}/named.gaf:7\n" in u.read_text()
    # --strict: the unresolved name at its file:line:col; nothing left
    out = tmp_path / "db"
    err = build_fails("--recipe", recipe, "--strict", "-o", out)
    assert f"{d}/named.gaf:7:8: unresolved gene name 'NOPE' (strict mode)" in err, err
    nothing_at(out)
    # a missing annotations file: the recipe line of the part
    write("ontology:\n  format: obo\n  file: go.obo\n  annotations: gone.gaf\n")
    err = build_fails("--recipe", recipe, "-o", out)
    assert f"{recipe}:8: {d}/gone.gaf: " in err and "No such file" in err, err
    nothing_at(out)
    # malformed parts: recipe:line:col and the reason, nothing left
    for part, where, reason in [
            ("ontology:\n  format: obo\n  file: go.obo\n", "8:3",
             "'ontology' of format 'obo' without 'annotations'"),
            ("ontology:\n  format: dcell\n  file: go.obo\n  relations: [is_a]\n", "10:3",
             "key 'relations' does not apply to format 'dcell'"),
            ("ontology:\n  format: obo\n  file: go.obo\n  annotations: exact.gaf\n"
             "  evidence: [IDA]\n  exclude_evidence: [IEA]\n", "8:3",
             "'ontology': give 'evidence' or 'exclude_evidence', not both"),
            ("ontology:\n  format: obo\n  file: go.obo\n  annotations: exact.gaf\n"
             "  min_genes: 3\n", "11:3", "unknown key 'min_genes' in 'ontology'"),
            ("ontology:\n  format: gaf\n  file: go.obo\n", "8:11",
             "unknown ontology format 'gaf' (obo or dcell)"),
            ("ontology:\n  format: obo\n  file: go.obo\n  annotations: exact.gaf\n"
             "  namespaces: [biological_process]\n  min_term_genes: many\n", "12:19",
             "'min_term_genes' must be a non-negative integer, not 'many'")]:
        write(part)
        err = build_fails("--recipe", recipe, "-o", out)
        assert f"{recipe}:{where}: {reason}" in err, (part, err)
        nothing_at(out)
    # a namespace no term has: named, nothing left
    write("ontology:\n  format: obo\n  file: go.obo\n  annotations: exact.gaf\n"
          "  namespaces: [biological_proces]\n")
    err = build_fails("--recipe", recipe, "-o", out)
    assert "no term has the namespace 'biological_proces'" in err, err
    nothing_at(out)


# ------------------------------------- pertload's own files through a recipe

def synth_recipe(tmp_path, rule, seed):
    """`pertload synth` files named by a recipe (edges `delim` with `sep:
    tab`, metabolism `tsv` with its reactions, rules, RMR and `reaction_rule`,
    samples `tsv` with a payload), and the file-path arguments of the same
    files."""
    d = tmp_path / "synth"
    run_cli("synth", d, "--genes", 120, "--samples", 40, "--scale", 0.05, "--seed", seed,
            "--payload-dim", 3, "--quiet")
    types = ["physical", "regulatory", "string12_0_experimental"]
    edges = "".join(f"  - {{name: {t}, format: delim, file: edges/{t}.tsv, sep: tab, "
                    f"header: false, source: 1, target: 2, pairs: as_listed}}\n" for t in types)
    (d / "recipe.yaml").write_text(
        "version: 1\ngenes: {file: genes.txt}\nedges:\n" + edges +
        "metabolism: {format: tsv, reactions: reactions.txt, rules: rules.tsv, rmr: rmr.tsv, "
        f"reaction_rule: {rule}}}\n"
        "samples: {format: tsv, file: samples.tsv, payload: payload.npy}\n")
    args = ["--genes", d / "genes.txt"]
    for t in types:
        args += ["--edges", f"{t}={d / 'edges' / (t + '.tsv')}"]
    for k in ("reactions.txt", "rules.tsv", "rmr.tsv", "samples.tsv", "payload.npy"):
        args += ["--" + k.split(".")[0], d / k]
    return d, args + ["--reaction-rule", rule]


@pytest.mark.parametrize("rule,seed", [("gpr", 3), ("any", 4)])
def test_recipe_tsv_parts_equal_the_file_path(tmp_path, rule, seed):
    """Every part of a recipe of pertload's own text files builds the
    database the file path builds from the same files: graph, metabolism,
    reaction rule, labels, payload and every batch."""
    d, args = synth_recipe(tmp_path, rule, seed)
    a, b = tmp_path / "files", tmp_path / "recipe"
    run_cli("build", "-o", a, *args, "--quiet")
    run_cli("build", "--recipe", d / "recipe.yaml", "-o", b, "--quiet")
    ga = pertload.Graph(pertload._lib.Database(a))
    gb = pertload.Graph(pertload._lib.Database(b))
    assert ga.reaction_rule == gb.reaction_rule == rule
    assert ga.type_names == gb.type_names == ["physical", "regulatory",
                                              "string12_0_experimental"]
    assert (ga.gene_fingerprint, ga.edge_fingerprints) == (gb.gene_fingerprint,
                                                         gb.edge_fingerprints)
    # the edges as the files list them, by gene name
    genes = (d / "genes.txt").read_text().split()
    for t in ga.type_names:
        rows = [ln.split()[:2] for ln in (d / "edges" / f"{t}.tsv").read_text().splitlines()]
        assert [[genes[i] for i in gb.edge_index[t][k]] for k in (0, 1)] == \
            [[r[0] for r in rows], [r[1] for r in rows]], t

    def summary(db):
        return [ln for ln in inspect(db).replace(str(db), "DB").splitlines()
                if not ln.startswith(("build parameters:", "recipe", "sizes:"))]
    sa = summary(a)
    assert sa == summary(b)
    n_rxn = len((d / "reactions.txt").read_text().split())
    n_rmr = len((d / "rmr.tsv").read_text().splitlines())
    assert any(ln.startswith(f"metabolism: {n_rxn} reactions, ") and
               ln.endswith(f" RMR edges") and f" {n_rmr} RMR" in ln for ln in sa), sa
    ba, bb = batches(a), batches(b)
    assert len(ba) == len(bb) == 20
    payload = np.load(d / "payload.npy")
    for x, y in zip(ba, bb):
        assert x.keys() == y.keys() and "payload" in x
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)
    np.testing.assert_array_equal(np.concatenate([y["payload"] for y in bb]),
                                  payload.astype(np.float32))
    text = inspect(b)
    for f in ("reactions.txt", "rules.tsv", "rmr.tsv", "samples.tsv", "payload.npy"):
        data = (d / f).read_bytes()
        assert f"recipe input: {len(data)}\t{xxh64(data):016x}\t{d}/{f}" in text, (f, text)


def sbml_model(reactions):
    """An SBML L3 FBC v2 model as COBRApy writes it (R_, M_, G_ prefixes,
    `__45__` for '-'): reactions [(id, {metabolite: stoichiometry}, rule)],
    a rule a gene name, ("and"|"or", [rule, ...]) or None."""
    mets = list(dict.fromkeys(m for _, st, _ in reactions for m in st))
    genes = list(dict.fromkeys(g for _, _, r in reactions for g in rule_genes(r)))
    esc = lambda s: s.replace("-", "__45__")

    def assoc(r):
        if isinstance(r, str):
            return f'<fbc:geneProductRef fbc:geneProduct="G_{esc(r)}"/>'
        return f"<fbc:{r[0]}>" + "".join(assoc(x) for x in r[1]) + f"</fbc:{r[0]}>"

    def refs(kind, st, sign):
        items = [(m, sign * v) for m, v in st.items() if sign * v > 0]
        return (f"<listOf{kind}>" + "".join(
            f'<speciesReference species="M_{esc(m)}" stoichiometry="{v:g}" constant="true"/>'
            for m, v in items) + f"</listOf{kind}>") if items else ""
    rxns = "".join(
        f'<reaction id="R_{esc(i)}" reversible="false" fast="false">' + refs("Reactants", st, -1)
        + refs("Products", st, 1) + (f"<fbc:geneProductAssociation>{assoc(r)}"
                                     "</fbc:geneProductAssociation>" if r else "")
        + "</reaction>\n" for i, st, r in reactions)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" '
            'xmlns:fbc="http://www.sbml.org/sbml/level3/version1/fbc/version2" level="3" '
            'version="1" fbc:required="false">\n<model id="m" fbc:strict="true">\n'
            '<listOfCompartments><compartment id="c" constant="true"/></listOfCompartments>\n'
            "<listOfSpecies>" + "".join(
                f'<species id="M_{esc(m)}" compartment="c" hasOnlySubstanceUnits="false" '
                'boundaryCondition="false" constant="false"/>' for m in mets) +
            "</listOfSpecies>\n<fbc:listOfGeneProducts>" + "".join(
                f'<fbc:geneProduct fbc:id="G_{esc(g)}" fbc:label="{g}"/>' for g in genes) +
            "</fbc:listOfGeneProducts>\n<listOfReactions>\n" + rxns +
            "</listOfReactions>\n</model>\n</sbml>\n")


def rule_genes(r):
    if r is None:
        return []
    if isinstance(r, str):
        return [r]
    return [g for x in r[1] for g in rule_genes(x)]


def rule_text(r, top=True):
    if isinstance(r, str):
        return r
    s = f" {r[0]} ".join(rule_text(x, False) for x in r[1])
    return s if top else f"({s})"


def test_recipe_sbml_equals_yeast_gem(tmp_path):
    """The same model as SBML and as yeast-GEM YAML, each named by a recipe,
    builds the same metabolism (reactions, metabolites, GPR, RMR and
    stoichiometries, compiled rules) and the same batches; the GPR and RMR
    pairs are those of the model as written here."""
    d = write_inputs(tmp_path / "in")
    model = [("r-1", {"a": -1, "b": 2}, ("or", [("and", ["YAL001C", "YAL002W"]), "YAL003W"])),
             ("r-2", {"b": -1.5, "c": 0.5}, "YAL005C"),
             ("r-3", {"c": 1}, None),
             ("r-4", {"a": -2, "d": 1}, ("and", ["YAL007C", ("or", ["YAL004W", "YAL001C"])]))]
    (d / "model.xml").write_text(sbml_model(model))
    (d / "model.yml").write_text("reactions:\n" + "".join(
        f"  - id: {i}\n    metabolites: {{{', '.join(f'{m}: {v:g}' for m, v in st.items())}}}\n"
        + (f"    gene_reaction_rule: {rule_text(r)}\n" if r else "") for i, st, r in model))
    base = (d / "recipe.yaml").read_text()
    dbs = {}
    for fmt, f in (("sbml", "model.xml"), ("yeast-gem", "model.yml")):
        r = d / f"{fmt}.yaml"
        r.write_text(base + f"metabolism: {{format: {fmt}, file: {f}}}\n")
        dbs[fmt] = tmp_path / fmt
        run_cli("build", "--recipe", r, "-o", dbs[fmt], "--quiet")
    gs, gy = (pertload.Graph(pertload._lib.Database(dbs[k])) for k in ("sbml", "yeast-gem"))
    assert gs.reaction_names == gy.reaction_names == ["r-1", "r-2", "r-3", "r-4"]
    assert gs.metabolite_names == gy.metabolite_names == ["a", "b", "c", "d"]
    gi = {g: i for i, g in enumerate(GENES)}
    want_gpr = [(gi[g], k) for k, (_, _, r) in enumerate(model)
                for g in dict.fromkeys(rule_genes(r))]
    want_rmr = [(k, "abcd".index(m), v) for k, (_, st, _) in enumerate(model)
                for m, v in st.items()]
    for g in (gs, gy):
        assert sorted(map(tuple, g.gpr.T.tolist())) == sorted(want_gpr)
        assert list(map(tuple, g.rmr.T.tolist())) == [(k, m) for k, m, _ in want_rmr]
        np.testing.assert_array_equal(g.rmr_stoich, [v for _, _, v in want_rmr])
        assert g.reaction_rule == "gpr"
    for x, y in zip(gs.rules, gy.rules):
        np.testing.assert_array_equal(x, y)
    text = {k: inspect(v) for k, v in dbs.items()}
    assert "metabolism: 4 reactions, 4 metabolites, 7 GPR edges, 7 RMR edges" in text["sbml"]
    assert (f"recipe source: metabolism format=sbml reactions=4 metabolites=4 rmr=7 rules=3 "
            f"gpr=7 unresolved=0 file={d}/model.xml") in text["sbml"], text["sbml"]
    ba, bb = batches(dbs["sbml"]), batches(dbs["yeast-gem"])
    assert len(ba) == len(bb) == 2
    for x, y in zip(ba, bb):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)


def test_recipe_check_of_tsv_parts_and_its_usage(tmp_path):
    """`recipe check` names the tsv metabolism and samples files it leaves to
    the build; its usage errors exit 2 with the reason and the usage line."""
    d, _ = synth_recipe(tmp_path, "gpr", 5)
    out = run_cli("recipe", "check", d / "recipe.yaml").stdout
    assert (f"metabolism format=tsv reactions={d}/reactions.txt gpr=- rules={d}/rules.tsv "
            f"rmr={d}/rmr.tsv (read by build)") in out, out
    assert f"samples format=tsv file={d}/samples.tsv payload={d}/payload.npy (read by build)" \
        in out, out
    usage = "usage: pertload recipe check [--root DIR] [--strict] [--unresolved FILE]"
    for args, why in (([], "expected the subcommand 'check'"),
                      (["frob"], "expected the subcommand 'check'"),
                      (["check"], "no recipe given"),
                      (["check", "a", "b"], "more than one recipe"),
                      (["check", "--max-line", "nope", "r"],
                       "--max-line wants a number of bytes (4M, 1G)"),
                      (["check", "--root"], "--root needs a value")):
        r = subprocess.run([pertload_bin(), "recipe", *args], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and r.stderr.startswith(f"pertload recipe: {why}\n{usage}"), \
            (args, r.stderr)
    r = subprocess.run([pertload_bin(), "recipe", "check", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(usage), r.stdout
