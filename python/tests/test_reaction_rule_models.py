"""The reaction rule of a recipe's model file (`metabolism: {format:
yeast-gem}` or `sbml`): `reaction_rule: any` gives TorchCell's masks, a
reaction removed when any of its genes is deleted, and `gpr` (the default
there) removes a reaction when its rule is false.

The real yeast-GEM model as published, read here by PyYAML on its own: the
removed reactions of every single-gene deletion and of random double and
triple deletions, as the batches of a loader deliver them, against brute
force over the model's gene-reaction rules; the lazy layout's reaction and
RMR masks against the same oracle; the recipe key against `build --recipe
--reaction-rule`; SBML beside yeast-GEM."""

import gzip
import os
import random
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import pertload
from conftest import pertload_bin, run_cli
from test_recipe_build import rule_text, sbml_model, write_inputs

N_MULTI = 1500
TOKEN = re.compile(r"[^\s()]+")


def real_dir():
    root = os.environ.get("PERTLOAD_REAL_DATA")
    base = Path(root) if root else Path(__file__).resolve().parents[2] / "tests" / "data"
    return base / "real" / "yeast-gem"


def rule_genes(rule):
    """The gene names of a gene_reaction_rule text."""
    return {t for t in TOKEN.findall(rule or "") if t not in ("and", "or")}


def rule_holds(rule, deleted):
    """The rule's truth with the genes `deleted` knocked out (no rule: true)."""
    if not rule:
        return True
    expr = TOKEN.sub(lambda m: m.group(0) if m.group(0) in ("and", "or")
                     else str(m.group(0) not in deleted), rule)
    return eval(expr, {"__builtins__": {}})  # only True, False, and, or, ()


def removed(db):
    """Row -> sorted reaction names removed, from the batches of a loader."""
    out = {}
    with pertload.Loader(db, batch_size=256, shuffle=False, threads=1) as loader:
        names = loader.graph.reaction_names
        for batch in loader:
            pos, ptr = batch.reaction
            for i, row in enumerate(batch.row):
                out[int(row)] = sorted(names[j] for j in pos[ptr[i]:ptr[i + 1]])
    return out


def recipe(d, fmt, model, rule=None, samples="samples.tsv"):
    """A recipe of genes.txt, no edges, `samples` and the model file."""
    key = f", reaction_rule: {rule}" if rule else ""
    p = d / f"{fmt}-{rule or 'default'}.yaml"
    p.write_text(f"version: 1\ngenes: {{file: genes.txt}}\nedges: []\n"
                 f"samples: {{format: tsv, file: {samples}}}\n"
                 f"metabolism: {{format: {fmt}, file: {model}{key}}}\n")
    return p


@pytest.fixture(scope="module")
def gem(tmp_path_factory):
    d = tmp_path_factory.mktemp("gem")
    path = real_dir() / "yeast-GEM.yml.gz"
    with gzip.open(path, "rt") as f:
        top = dict(yaml.load(f, Loader=yaml.CSafeLoader))
    rules = {}
    for r in top["reactions"]:
        r = dict(r)
        rules[r["id"]] = r.get("gene_reaction_rule", "")
    genes = [dict(g)["id"] for g in top["genes"]]
    assert len(rules) == 4131 and len(genes) == 1161
    assert set().union(*map(rule_genes, rules.values())) == set(genes)
    (d / "genes.txt").write_text("".join(g + "\n" for g in genes))
    rng = random.Random(20261128)
    sets = [[g] for g in genes] + [rng.sample(genes, rng.choice((2, 3)))
                                   for _ in range(N_MULTI)]
    (d / "samples.tsv").write_text(
        "genes\tk\n" + "".join(f"{';'.join(s)}\t{len(s)}\n" for s in sets))
    dbs = {}
    for rule in ("any", "gpr", None):
        dbs[rule] = d / f"db-{rule}"
        run_cli("build", "--recipe", recipe(d, "yeast-gem", path, rule), "-o", dbs[rule],
                "--quiet")
    dbs["cli"] = d / "db-cli"
    run_cli("build", "--recipe", recipe(d, "yeast-gem", path), "--reaction-rule", "any",
            "-o", dbs["cli"], "--quiet")
    return rules, sets, dbs


def test_any_removes_a_reaction_when_any_of_its_genes_is_deleted(gem):
    rules, sets, dbs = gem
    assert pertload.Graph(pertload._lib.Database(dbs["any"])).reaction_rule == "any"
    got = removed(dbs["any"])
    assert len(got) == len(sets)
    differ = [(ko, got[row]) for row, ko in enumerate(sets)
              if got[row] != sorted(r for r, rule in rules.items() if rule_genes(rule) & set(ko))]
    assert not differ, f"{len(differ)} deletion sets differ, first: {differ[:3]}"
    # r_0001 ((YDL174C and YEL039C) or ...) goes with YDL174C alone
    assert "r_0001" in got[sets.index(["YDL174C"])]


def test_gpr_and_the_default_remove_a_reaction_when_its_rule_is_false(gem):
    rules, sets, dbs = gem
    gpr, default, anyr = removed(dbs["gpr"]), removed(dbs[None]), removed(dbs["any"])
    assert pertload.Graph(pertload._lib.Database(dbs["gpr"])).reaction_rule == "gpr"
    assert pertload.Graph(pertload._lib.Database(dbs[None])).reaction_rule == "gpr"
    assert gpr == default
    differ = [(ko, gpr[row]) for row, ko in enumerate(sets)
              if gpr[row] != sorted(r for r, rule in rules.items()
                                    if rule_genes(rule) & set(ko) and not rule_holds(rule, ko))]
    assert not differ, f"{len(differ)} deletion sets differ, first: {differ[:3]}"
    assert "r_0001" not in gpr[sets.index(["YDL174C"])]
    # the rules tell apart: many sets lose more reactions under any
    assert sum(gpr[i] != anyr[i] for i in range(len(sets))) > 100


def test_cli_reaction_rule_equals_the_recipe_key(gem):
    _, sets, dbs = gem
    assert pertload.Graph(pertload._lib.Database(dbs["cli"])).reaction_rule == "any"
    assert removed(dbs["cli"]) == removed(dbs["any"])
    assert "--reaction-rule any" in run_cli("inspect", dbs["cli"]).stdout


def test_lazy_masks_are_torchcells(gem):
    """The lazy layout under rule any: reaction mask False where a GPR gene
    of the reaction is deleted, RMR edges masked by their reaction."""
    rules, sets, dbs = gem
    checked = 0
    with pertload.Loader(dbs["any"], batch_size=64, shuffle=False, threads=1) as loader:
        g = loader.graph
        names = g.reaction_names
        rmr_rxn = torch.as_tensor(np.asarray(g.rmr[0]), dtype=torch.long)
        for batch in loader:
            # stores read by key: a dict of them, or HeteroData where PyG imports
            data = batch.to_torch("cpu", layout="lazy", edge_types=["gpr", "rmr"])
            for i, row in enumerate(batch.row):
                ko = set(sets[int(row)])
                want = torch.tensor([not (rule_genes(rules[n]) & ko) for n in names])
                n = len(names)
                assert torch.equal(data["reaction"]["mask"][i * n:(i + 1) * n], want), ko
                e = rmr_rxn.numel()
                rmr = data["reaction", "rmr", "metabolite"]["mask"][i * e:(i + 1) * e]
                assert torch.equal(rmr, want[rmr_rxn]), ko
                checked += 1
            if checked >= 320:
                break
    assert checked >= 320


def test_sbml_and_yeast_gem_take_the_rule_alike(tmp_path):
    """A model as SBML and as yeast-GEM YAML: `any` and `gpr` stored and
    applied alike; gpr over a model without a rule is refused naming the
    recipe line and the file."""
    d = write_inputs(tmp_path / "in")
    model = [("r-1", {"a": -1, "b": 2}, ("or", [("and", ["YAL001C", "YAL002W"]), "YAL003W"])),
             ("r-2", {"b": -1, "c": 1}, "YAL005C"),
             ("r-3", {"c": 1}, None)]
    (d / "model.xml").write_text(sbml_model(model))
    (d / "model.yml").write_text("reactions:\n" + "".join(
        f"  - id: {i}\n    metabolites: {{{', '.join(f'{m}: {v:g}' for m, v in st.items())}}}\n"
        + (f"    gene_reaction_rule: {rule_text(r)}\n" if r else "") for i, st, r in model))
    got = {}
    for fmt, f in (("sbml", "model.xml"), ("yeast-gem", "model.yml")):
        for rule in ("any", "gpr"):
            db = tmp_path / f"{fmt}-{rule}"
            run_cli("build", "--recipe", recipe(d, fmt, f, rule), "-o", db, "--quiet")
            assert pertload.Graph(pertload._lib.Database(db)).reaction_rule == rule
            got[fmt, rule] = removed(db)
    # samples: YAL001C | YAL003W;YAL005C | YAL002W | YAL004W;YAL007C
    assert got["sbml", "any"] == got["yeast-gem", "any"] == {
        0: ["r-1"], 1: ["r-1", "r-2"], 2: ["r-1"], 3: []}
    assert got["sbml", "gpr"] == got["yeast-gem", "gpr"] == {0: [], 1: ["r-2"], 2: [], 3: []}
    (d / "none.yml").write_text("reactions:\n  - id: r-1\n    metabolites: {a: -1}\n")
    p = recipe(d, "yeast-gem", "none.yml", "gpr")
    r = subprocess.run([pertload_bin(), "build", "--recipe", p, "-o", tmp_path / "none"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert f"{p}:5: reaction rule gpr: {d / 'none.yml'} has no gene-reaction rule" in r.stderr
    assert not (tmp_path / "none").exists()
    # the recipe key any, the option gpr: the option wins
    db = tmp_path / "override"
    run_cli("build", "--recipe", recipe(d, "sbml", "model.xml", "any"), "--reaction-rule",
            "gpr", "-o", db, "--quiet")
    assert removed(db) == got["sbml", "gpr"]
    for args, why in ((["--reaction-rule", "all"], "--reaction-rule wants any or gpr, got 'all'"),
                      (["--reaction-rule"], "--reaction-rule wants any or gpr, got ''")):
        r = subprocess.run([pertload_bin(), "build", "--recipe", p, "-o", tmp_path / "x", *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith(f"pertload build: {why}\n"), r.stderr
