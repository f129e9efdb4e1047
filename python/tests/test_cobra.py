"""Reaction rule gpr against COBRApy on the real yeast-GEM model.

COBRApy loads yeast-GEM.yml (the model as published); pertload builds a
database from the rules of the derived reactions.tsv through `pertload build
--rules`, with one stored sample per deletion set: every single-gene deletion
and 2,500 random double and triple deletions. The removed reactions of every
sample, as batches of a `pertload serve` ring deliver them, must be the
reactions whose rule COBRApy evaluates to false with those genes knocked out
(`GPR.eval(knockouts)`), and for some sets the reactions COBRApy's own
`Gene.knock_out()` leaves non-functional."""

import gzip
import os
import random
import shutil
from pathlib import Path

import cobra  # Debian's python3-cobra (scripts/install-deps.sh)
import numpy as np
import pytest

import pertload
from conftest import run_cli

N_MULTI = 2500


def real_dir():
    root = os.environ.get("PERTLOAD_REAL_DATA")
    base = Path(root) if root else Path(__file__).resolve().parents[2] / "tests" / "data"
    return base / "real" / "yeast-gem"


def gunzip(src, dst):
    with gzip.open(src, "rb") as f, open(dst, "wb") as g:
        shutil.copyfileobj(f, g)
    return dst


@pytest.fixture(scope="module")
def yeast(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("yeast")
    d = real_dir()
    model = cobra.io.load_yaml_model(str(gunzip(d / "yeast-GEM.yml.gz", tmp / "yeast-GEM.yml")))
    rows = [ln.split("\t") for ln in
            gzip.open(d / "reactions.tsv.gz", "rt").read().splitlines()]
    assert rows[0][0] == "rxn_id" and rows[0][5] == "gene_reaction_rule"
    (tmp / "rules.tsv").write_text("".join(f"{r[0]}\t{r[5]}\n" for r in rows))
    genes = [ln.split("\t")[0] for ln in
             gzip.open(d / "genes.tsv.gz", "rt").read().splitlines()[1:]]
    (tmp / "genes.txt").write_text("".join(g + "\n" for g in genes))
    stoich = gzip.open(d / "rxn_met_stoich.tsv.gz", "rt").read().splitlines()[1:]
    (tmp / "rmr.tsv").write_text("".join(ln + "\n" for ln in stoich))
    (tmp / "phys.tsv").write_text(f"{genes[0]}\t{genes[1]}\n")
    rng = random.Random(20261125)
    sets = [[g] for g in genes]
    for _ in range(N_MULTI):
        sets.append(rng.sample(genes, rng.choice((2, 3))))
    (tmp / "samples.tsv").write_text(
        "genes\tk\n" + "".join(f"{';'.join(s)}\t{len(s)}\n" for s in sets))
    db = tmp / "db"
    run_cli("build", "-o", db, "--genes", tmp / "genes.txt", "--edges",
            f"physical={tmp / 'phys.tsv'}", "--rules", tmp / "rules.tsv", "--rmr",
            tmp / "rmr.tsv", "--samples", tmp / "samples.tsv", "--quiet")
    return model, db, sets, [r[0] for r in rows[1:]]


def removed_by_pertload(db, n):
    """Row -> sorted reaction names removed, from the batches of a ring."""
    out = {}
    loader = pertload.Loader(db, batch_size=256, shuffle=False)
    names = loader.graph.reaction_names
    assert loader.graph.reaction_rule == "gpr"
    for batch in loader:
        pos, ptr = batch.reaction
        for i, row in enumerate(batch.row):
            out[int(row)] = sorted(names[j] for j in pos[ptr[i]:ptr[i + 1]])
    assert len(out) == n
    return out


def test_removed_reactions_equal_cobrapy(yeast):
    model, db, sets, rxn_ids = yeast
    assert [r.id for r in model.reactions] == rxn_ids
    assert len(model.genes) == 1161
    got = removed_by_pertload(db, len(sets))
    assert sum(len(s) == 1 for s in sets) == 1161
    assert sum(len(s) > 1 for s in sets) >= 2000
    differ = []
    for row, ko in enumerate(sets):
        # Only reactions of a deleted gene can change: every other rule holds
        # (rules have no negation); those are checked too for some sets.
        every = row % 97 == 0
        cand = model.reactions if every else {r for g in ko
                                              for r in model.genes.get_by_id(g).reactions}
        want = sorted(r.id for r in cand if r.gene_reaction_rule and not r.gpr.eval(set(ko)))
        if got[row] != want:
            differ.append((ko, got[row], want))
    assert not differ, f"{len(differ)} deletion sets differ, first: {differ[:3]}"
    # The example of the yeast-GEM rules: r_0001 survives the loss of YDL174C.
    ydl = sets.index(["YDL174C"])
    assert "r_0001" not in got[ydl]
    assert model.reactions.get_by_id("r_0001").gpr.eval({"YDL174C"})


def test_knock_out_context_agrees(yeast):
    """COBRApy's knock_out() (bounds to zero for non-functional reactions)
    on a sample of the sets, the whole model scanned each time."""
    model, db, sets, _ = yeast
    got = removed_by_pertload(db, len(sets))
    rng = random.Random(7)
    for row in rng.sample(range(len(sets)), 40) + [sets.index(["YDL174C"])]:
        with model:
            for g in sets[row]:
                model.genes.get_by_id(g).knock_out()
            want = sorted(r.id for r in model.reactions if r.genes and not r.functional)
        assert got[row] == want, sets[row]


def test_masks_command_names_the_rule(yeast):
    _, db, _, _ = yeast
    import json
    out = json.loads(run_cli("masks", db, "--genes", "YDL174C,YEL039C", "--json").stdout)
    assert out["reaction_rule"] == "gpr"
    names = pertload.Loader(db).graph.reaction_names
    assert "r_0001" not in [names[i] for i in out["reaction"]]
    out = json.loads(run_cli("masks", db, "--genes", "YDL174C,YEL071W", "--json").stdout)
    assert "r_0001" in [names[i] for i in out["reaction"]]
    assert "reaction rule: gpr" in run_cli("inspect", db).stdout
    assert np.all(np.diff(out["reaction"]) > 0)
