"""Category columns are kept apart from the labels (the category store):
`build --samples FILE --categories split` on a plain samples TSV and a
recipe's `categories:` give labels that are exactly the file's numeric
columns, read back here from the file itself, and split= takes the rows of a
level; a column listed under both labels and categories is in both (its
label holds the level's code); malformed inputs are errors naming file, line
and reason, with no database left behind."""

import math
import random
import re
import subprocess

import numpy as np
import pytest

import pertload
from conftest import pertload_bin, run_cli

LEVELS = ("train", "val", "test")


def write_inputs(root, n=700, with_id=False, seed=4):
    """genes, one edge file and a samples TSV (genes, [id,] fitness, split,
    score) with some missing scores; returns the TSV's path."""
    rnd = random.Random(seed)
    genes = [f"G{i:03d}" for i in range(50)]
    root.mkdir(parents=True, exist_ok=True)
    (root / "genes.txt").write_text("".join(g + "\n" for g in genes))
    (root / "phys.tsv").write_text("".join(f"{rnd.choice(genes)}\t{rnd.choice(genes)}\n"
                                           for _ in range(120)))
    head = ["genes", "id", "fitness", "split", "score"] if with_id else \
        ["genes", "fitness", "split", "score"]
    lines = ["\t".join(head)]
    for i in range(n):
        g = ";".join(rnd.sample(genes, rnd.randint(1, 3)))
        split = LEVELS[i] if i < 3 else rnd.choice(("train",) * 6 + ("val",) * 2 + ("test",))
        score = "NA" if i % 11 == 5 else f"{rnd.uniform(-2, 2):.4f}"
        row = [g, str(1000 + 3 * i)] if with_id else [g]
        lines.append("\t".join(row + [f"{rnd.random():.4f}", split, score]))
    path = root / "samples.tsv"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_table(path):
    """The TSV's rows as dicts (an independent reading of the file)."""
    head, *body = path.read_text().splitlines()
    return [dict(zip(head.split("\t"), ln.split("\t"))) for ln in body]


def number(text):
    return math.nan if text == "NA" else float(text)


def all_labels(db):
    """[n_samples, n_labels] float32 labels and the ids, in row order."""
    loader = pertload.Loader(db, batch_size=64, shuffle=False)
    labels = np.full((loader.graph.n_samples, loader.graph.n_labels), -7, np.float32)
    ids = np.zeros(loader.graph.n_samples, np.uint64)
    for b in loader:
        labels[b.row] = b.labels
        ids[b.row] = b.sample_id
    loader.close()
    return labels, ids


def build_plain(root, out, *extra):
    samples = root / "samples.tsv"
    return subprocess.run([pertload_bin(), "build", "-o", str(out), "--genes",
                           str(root / "genes.txt"), "--edges", f"physical={root / 'phys.tsv'}",
                           "--samples", str(samples), "--quiet", *map(str, extra)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("with_id", [False, True])
def test_plain_tsv_with_categories(tmp_path, with_id):
    src = write_inputs(tmp_path / "in", with_id=with_id)
    table = read_table(src)
    # without --categories the text column is a bad number, as before
    r = build_plain(tmp_path / "in", tmp_path / "nocat")
    assert r.returncode != 0 and "bad number 'train' in column 'split'" in r.stderr, r.stderr
    assert not (tmp_path / "nocat").exists()
    db = tmp_path / "db"
    r = build_plain(tmp_path / "in", db, "--categories", "split")
    assert r.returncode == 0, r.stderr
    graph = pertload.Loader(db).graph
    assert graph.label_names == ["fitness", "score"]
    want_levels = list(dict.fromkeys(t["split"] for t in table))
    assert graph.categories == {"split": want_levels}
    labels, ids = all_labels(db)
    want = np.array([[number(t["fitness"]), number(t["score"])] for t in table], np.float32)
    assert labels.shape == want.shape
    assert np.array_equal(np.isnan(labels), np.isnan(want))
    assert np.array_equal(np.nan_to_num(labels), np.nan_to_num(want))
    want_ids = [int(t["id"]) for t in table] if with_id else list(range(len(table)))
    assert ids.tolist() == want_ids
    for level in LEVELS:
        rows = [r for r, t in enumerate(table) if t["split"] == level]
        got = [r for b in pertload.Loader(db, batch_size=50, split=level) for r in b.row.tolist()]
        assert sorted(got) == rows, level
    text = run_cli("inspect", db).stdout
    assert f"category: split\t{chr(9).join(want_levels)}" in text, text
    assert "category columns: 1 (kept apart from the labels)" in text


def test_recipe_label_and_category_column_is_both(tmp_path):
    src = write_inputs(tmp_path / "in")
    table = read_table(src)
    recipe = tmp_path / "in" / "recipe.yaml"
    recipe.write_text("version: 1\ngenes: {file: genes.txt}\nedges:\n"
                      "  - {name: physical, format: delim, file: phys.tsv, source: 1, "
                      "target: 2}\n"
                      "samples: {format: table, file: samples.tsv, labels: [fitness, split], "
                      "categories: [split]}\n")
    db = tmp_path / "db"
    run_cli("build", "--recipe", recipe, "-o", db, "--quiet")
    graph = pertload.Loader(db).graph
    assert graph.label_names == ["fitness", "split"]
    levels = list(dict.fromkeys(t["split"] for t in table))
    assert graph.categories == {"split": levels}
    labels, _ = all_labels(db)
    assert np.array_equal(labels[:, 0], np.array([float(t["fitness"]) for t in table],
                                                 np.float32))
    assert labels[:, 1].tolist() == [levels.index(t["split"]) for t in table]
    rows = [r for r, t in enumerate(table) if t["split"] == "val"]
    assert sorted(r for b in pertload.Loader(db, split="val") for r in b.row.tolist()) == rows


def set_field(path, k, col, value):
    """Line k (0-based) of the TSV with field `col` replaced by `value`."""
    lines = path.read_text().splitlines()
    fields = lines[k].split("\t")
    fields[col] = value
    lines[k] = "\t".join(fields)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("case", ["unknown", "empty-level", "genes", "twice", "empty-name",
                                  "numeric-label"])
def test_malformed_categories(tmp_path, case):
    root = tmp_path / "in"
    src = write_inputs(root, n=40)
    cats = {"unknown": "nope", "twice": "split,split", "genes": "genes",
            "empty-name": "split,"}.get(case, "split")
    if case == "empty-level":  # line 8: an empty split value
        set_field(src, 7, 2, "")
    if case == "numeric-label":  # line 13: text in the label column score
        set_field(src, 12, 3, "x1")
    before = sorted(p.name for p in tmp_path.iterdir())
    r = build_plain(root, tmp_path / "db", "--categories", cats)
    assert r.returncode != 0
    want = {"unknown": rf"{re.escape(str(src))}:1: the header has no 'nope' column",
            "empty-level": rf"{re.escape(str(src))}:8:\d+: empty value in category column "
                           r"'split'",
            "genes": r"column 'genes' is given two roles",
            "twice": r"column 'split' is given two roles",
            "empty-name": r"--categories 'split,': an empty column name",
            "numeric-label": rf"{re.escape(str(src))}:13:\d+: bad number 'x1' in label column "
                             r"'score'"}[case]
    assert re.search(want, r.stderr), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing left behind
