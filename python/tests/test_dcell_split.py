"""examples/dcell.py --split COLUMN: training on one level of a category
column, the other level's loss reported after every epoch, against a
recomputation over that level's rows read from the sample table."""

import contextlib
import io
import math
import os
import random
import re
import subprocess
import sys
from argparse import Namespace

import numpy as np
import pytest
import torch

import pertload
from conftest import run_cli
from test_ontology import write_ontology

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "dcell.py")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import dcell  # noqa: E402  (examples/dcell.py)

# epoch, train level, its loss, its labels, evaluated level, its loss, MSE, labels
EPOCH = re.compile(r"^epoch (\d+): (\w+) loss (\S+) \((\d+) labels\), (\w+) loss (\S+), "
                   r"root MSE (\S+) \((\d+) labels\)$")


@pytest.fixture(scope="module")
def split_onto(small, tmp_path_factory):
    """small's samples with a column split (every fourth row test, the
    others train) and fold (a, b or val), an ontology, no edge type; the
    levels' rows as the table gives them."""
    tmp = tmp_path_factory.mktemp("dcell_split")
    write_ontology(tmp / "onto.txt", small.genes, random.Random(6))
    head, *body = (small.dir / "samples.tsv").read_text().splitlines()
    split = ["test" if i % 4 == 0 else "train" for i in range(len(body))]
    fold = [("a", "b", "val")[i % 3] for i in range(len(body))]
    (tmp / "samples.tsv").write_text("\n".join(
        [head + "\tsplit\tfold"] + [f"{ln}\t{s}\t{f}" for ln, s, f in zip(body, split, fold)])
        + "\n")
    db = tmp / "db"
    run_cli("build", "-o", db, "--genes", small.dir / "genes.txt", "--samples",
            tmp / "samples.tsv", "--categories", "split,fold", "--ontology-dcell",
            tmp / "onto.txt", "--quiet")
    assert pertload.Loader(db).n_samples == small.n
    rows = {("split", lv): [r for r, s in enumerate(split) if s == lv] for lv in ("train", "test")}
    rows.update({("fold", lv): [r for r, f in enumerate(fold) if f == lv]
                 for lv in ("a", "b", "val")})
    return db, rows


def args(db, **kw):
    a = dict(db=str(db), batch_size=32, min_width=4, width_share=0.3, all_terms=False,
             by="pair", seed=0, split="split", epochs=2, train_level="train", eval_level=None)
    a.update(kw)
    return Namespace(**a)


def run_split(a):
    """dcell.train_split in this process: (the model after training, the
    epoch lines' fields)."""
    torch.manual_seed(a.seed)
    graph = pertload.Loader(a.db).graph
    sched = graph.ontology.schedule(
        width=lambda n: max(a.min_width, math.ceil(a.width_share * n)))
    model = dcell.DCell(sched)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        dcell.train_split(model, opt, a, graph)
    lines = [m.groups() for m in map(EPOCH.match, out.getvalue().splitlines()) if m]
    assert [int(g[0]) for g in lines] == list(range(a.epochs)), out.getvalue()
    return model, lines, out.getvalue()


def known(small, rows):
    return int((~np.isnan(small.labels[rows, 0])).sum())


@pytest.mark.parametrize("by", ["pair", None])
def test_split_reports_the_other_levels_loss(small, split_onto, by):
    db, rows = split_onto
    a = args(db, by=by or "group", all_terms=by is None)
    model, lines, text = run_split(a)
    train, test = rows[("split", "train")], rows[("split", "test")]
    assert f"training on 'train' ({len(train)} samples), evaluating 'test' ({len(test)} " \
        "samples)" in text
    for _, fit, tr, n_tr, level, ev, mse, n_ev in lines:
        assert (fit, level) == ("train", "test") and int(n_tr) == known(small, train)
        assert int(n_ev) == known(small, test) > 0
        assert all(math.isfinite(float(v)) for v in (tr, ev, mse))
    # the last line's figures: the trained model over the test rows, from
    # the table (the rows' labels and deleted genes, the ontology's terms)
    y = torch.from_numpy(small.labels[test, 0])
    loader = pertload.Loader(db, batch_size=len(small.ids), rows=test, pad=False)
    b = next(iter(loader))
    assert b.row.tolist() == test
    with torch.no_grad():
        pred, aux, got_y, _ = dcell.run_batch(model, b, a)
    torch.testing.assert_close(got_y, y, equal_nan=True)
    ok = ~torch.isnan(y)
    want_loss = dcell.dcell_loss(pred, aux, y).item()
    want_mse = ((pred[ok] - y[ok]) ** 2).mean().item()
    *_, ev, mse, _ = lines[-1]
    assert float(ev) == pytest.approx(want_loss, abs=1e-3)
    assert float(mse) == pytest.approx(want_mse, abs=1e-3)
    loader.close()


def test_split_levels_chosen_and_refused(small, split_onto):
    db, rows = split_onto
    _, lines, text = run_split(args(db, split="fold", train_level="a", epochs=1))
    assert lines[0][1] == "a" and int(lines[0][3]) == known(small, rows[("fold", "a")])
    assert lines[0][4] == "val" and int(lines[0][7]) == known(small, rows[("fold", "val")])
    _, lines, _ = run_split(args(db, split="fold", train_level="a", eval_level="b", epochs=1))
    assert lines[0][4] == "b" and int(lines[0][7]) == known(small, rows[("fold", "b")])
    for kw, msg in (({"split": "nope"}, "--split nope: the database has no category column "
                     "'nope' (its category columns: split, fold)"),
                    ({"train_level": "x"}, "--train-level x: column 'split' has no such "
                     "level (its levels: test, train)"),
                    ({"eval_level": "train"}, "--eval-level train: a level of column 'split' "
                     "other than the trained 'train' is expected (its levels: test, train)"),
                    ({"split": "fold", "train_level": "val"}, "--split fold: name the level "
                     "to evaluate with --eval-level (its levels: a, b, val)")):
        with pytest.raises(SystemExit, match=re.escape(msg)):
            run_split(args(db, **kw))


def test_split_from_the_command_line(split_onto):
    db, _ = split_onto
    r = subprocess.run([sys.executable, EXAMPLE, str(db), "--split", "split", "--epochs", "2",
                        "--batch-size", "64"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [m for m in map(EPOCH.match, r.stdout.splitlines()) if m]
    assert [int(m.group(1)) for m in lines] == [0, 1], r.stdout
    assert not any(ln.startswith("step ") for ln in r.stdout.splitlines())
