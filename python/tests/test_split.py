"""Loaders over the levels of a split column (split=, serve --split): a
database built by `pertload build --recipe` from a sample table with text
`split` and `fold` columns (stored as categories, apart from the labels:
the batches' one label is the table's fitness) runs each level's rows,
found here by reading the table itself, exactly once across ranks and
resumably; the levels are disjoint and cover every row; DataModule takes its
train/val/test loaders from the column's levels."""

import os
import signal
import subprocess

import numpy as np
import pytest
from torch.utils.data import DataLoader

import pertload
from conftest import FOLD, SPLIT, N_SPLIT_ROWS as N, pertload_bin, plan_batches, run_cli, unique


def epoch_rows(loader):
    return [b.row.tolist() for b in loader]


@pytest.mark.parametrize("world", [1, 3])
def test_split_rows_exactly_once_across_ranks(split_db, world):
    graph = pertload.Loader(split_db.db).graph
    assert graph.categories == {"split": [*SPLIT, "holdout"], "fold": list(FOLD)}
    assert graph.label_levels == graph.categories  # the earlier name
    assert graph.label_names == ["fitness"]  # the categories are no labels
    seen = {}
    for level in SPLIT:
        want = split_db.rows["split", level]
        union = []
        for rank in range(world):
            loader = pertload.Loader(split_db.db, batch_size=40, shuffle=True, seed=3, rank=rank,
                                     world_size=world, split=level)
            loader.set_epoch(1)
            assert loader.n_samples == len(want)
            batches = []
            for b in loader:
                assert b.labels.shape == (len(b.row), 1)
                assert np.array_equal(b.labels[:, 0], split_db.fitness[b.row])
                batches.append(b.row.tolist())
            # plan.h step 0: the plan over positions of the level's rows, ascending
            assert batches == [[want[p] for p in b] for b in
                               plan_batches(len(want), 3, 1, True, rank, world, 40, False)]
            assert len(batches) == len(loader)
            union += [r for b in batches for r in b]
        assert len(union) == -(-len(want) // world) * world
        assert set(union) == set(want)
        seen[level] = set(union)
    assert not (seen["train"] & seen["val"] or seen["train"] & seen["test"] or
                seen["val"] & seen["test"])
    assert seen["train"] | seen["val"] | seen["test"] == set(range(N))


def test_split_is_its_rows_and_resumes(split_db):
    want = split_db.rows["fold", "validation"]
    kw = dict(batch_size=16, shuffle=True, seed=2)
    full = epoch_rows(pertload.Loader(split_db.db, split=("fold", "validation"), **kw))
    assert full == epoch_rows(pertload.Loader(split_db.db, rows=want, **kw))
    assert sorted(r for b in full for r in b) == want
    loader = pertload.Loader(split_db.db, split=["fold", "validation"], **kw)
    it = iter(loader)
    head = [next(it).row.tolist() for _ in range(5)]
    sd = loader.state_dict()
    loader.close()
    resumed = pertload.Loader(split_db.db, split=("fold", "validation"), **kw)
    resumed.load_state_dict(sd)
    assert len(resumed) == len(full) - 5
    assert head + epoch_rows(resumed) == full
    # the state of a split is that of its rows; another level's is refused
    pertload.Loader(split_db.db, rows=want, **kw).load_state_dict(sd)
    with pytest.raises(ValueError, match="n_samples|subset"):
        pertload.Loader(split_db.db, split=("fold", "test"), **kw).load_state_dict(sd)


@pytest.mark.parametrize("kw, match", [
    (dict(split="validation"), r"split split=validation: category column 'split' has no "
                               r"level 'validation' \(levels: 'train', 'val', 'test', "
                               r"'holdout'\)"),
    (dict(split=("fitness", "train")), "label 'fitness' is not a category column "
                                       r"\(category columns: 'split', 'fold'\)"),
    (dict(split=("folds", "train")), "no category column 'folds'"),
    (dict(split="holdout"), "split split=holdout: no row of the database holds level "
                            "'holdout'"),
    (dict(split=("a=b", "train")), "without '='"),
    (dict(split=3), "a level name"),
    (dict(split=("split",)), "a level name"),
    (dict(split="train", rows=[1, 2]), "rows and split cannot be combined"),
    (dict(split="train", budget="removed=99"), "split and budget cannot be combined"),
])
def test_bad_splits_are_refused(split_db, kw, match):
    with pytest.raises(ValueError, match=match):
        pertload.Loader(split_db.db, **kw)


def test_serve_split(split_db):
    """serve --split LEVEL (column `split`) and COLUMN=LEVEL: the epoch's
    batches on the ready line; errors name the column and level."""
    for spec, rows in (("test", split_db.rows["split", "test"]),
                       ("fold=train", split_db.rows["fold", "train"])):
        p = subprocess.Popen([pertload_bin(), "serve", "--ring", unique("split-cli"),
                              "--batch-size", "32", "--world-size", "3", "--rank", "2",
                              "--split", spec, str(split_db.db)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=60)
        share = -(-len(rows) // 3)
        assert f", {-(-share // 32)} batches," in line, line
    for args, err in (
            (["--split", "nope"], "--split nope: category column 'split' has no level 'nope' "
                                  "(levels: 'train', 'val', 'test', 'holdout')"),
            (["--split", "fold=val"], "--split fold=val: category column 'fold' has no level "
                                      "'val' (levels: 'train', 'validation', 'test')"),
            (["--split", "fitness=1"], "label 'fitness' is not a category column"),
            (["--split", "holdout"], "no row of category column 'split' holds level "
                                     "'holdout'"),
            (["--split", "train", "--rows", "0:9"], "--rows and --split cannot be combined"),
            (["--split", "train", "--budget", "removed=50"],
             "--split and --budget cannot be combined")):
        r = subprocess.run([pertload_bin(), "serve", "--ring", unique("split-bad"), "--quiet", *args,
                            str(split_db.db)], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert err in r.stderr, r.stderr


def test_datamodule_takes_the_split_column(split_db):
    dm = pertload.DataModule(split_db.db, batch_size=64, layout="lists", num_workers=2)
    assert dm.splits == {"train": ("split", "train"), "val": ("split", "val"),
                         "test": ("split", "test")}
    for name, dl in (("train", dm.train_dataloader()), ("val", dm.val_dataloader()),
                     ("test", dm.test_dataloader())):
        got, want = [r for t in dl for r in t.row.tolist()], split_db.rows["split", name]
        if name == "train":
            # two workers: two shares, the shorter one padded (plan.h step 2)
            assert set(got) == set(want) and len(got) == -(-len(want) // 2) * 2
            assert len(dl) == len(dm.datasets[name]) == sum(
                len(plan_batches(len(want), 0, 0, False, w, 2, 64, False)) for w in range(2))
        else:  # evaluation: every row once (pad=False)
            assert sorted(got) == want
            assert len(dl) == len(dm.datasets[name]) == sum(
                -(-len(want[w::2]) // 64) for w in range(2))
    # another column, its "validation" level as val; a level name in splits
    dm = pertload.DataModule(split_db.db, split_column="fold", batch_size=100, layout="lists")
    assert dm.splits == {"train": ("fold", "train"), "val": ("fold", "validation"),
                         "test": ("fold", "test")}
    got = [r for t in dm.val_dataloader() for r in t.row.tolist()]
    assert sorted(got) == split_db.rows["fold", "validation"]
    dm = pertload.DataModule(split_db.db, {"train": "val", "test": ("fold", "test")},
                             batch_size=100, layout="lists")
    assert sorted(r for t in dm.train_dataloader() for r in t.row.tolist()) == \
        split_db.rows["split", "val"]
    with pytest.raises(ValueError, match="no 'val' split"):
        dm.val_dataloader()


def test_datamodule_without_a_split_column(split_db, small):
    with pytest.raises(ValueError, match="no splits given and .* has no category column "
                                         "'split' \\(category columns: none\\)"):
        pertload.DataModule(small.db)
    with pytest.raises(ValueError, match="split_column 'fitness' is not a category column"):
        pertload.DataModule(split_db.db, split_column="fitness")


def test_split_rows_are_read_once_per_process(split_db, monkeypatch):
    from pertload import _lib, subset

    monkeypatch.setattr(subset, "_cache", {})
    calls, parent = [], os.getpid()
    real = _lib.Database.level_rows

    def counted(self, column, level):
        if os.getpid() != parent:
            raise AssertionError("a worker read the split's rows again")
        calls.append((column, level))
        return real(self, column, level)

    monkeypatch.setattr(_lib.Database, "level_rows", counted)
    ds = pertload.Dataset(split_db.db, batch_size=50, split="test", layout="lists")
    got = [r for t in DataLoader(ds, batch_size=None, num_workers=2) for r in t.row.tolist()]
    assert set(got) == set(split_db.rows["split", "test"])
    assert calls == [("split", "test")]  # the probe's; the forked workers reuse it
    pertload.Loader(split_db.db, split="test")
    assert len(calls) == 1
    assert np.array_equal(next(iter(subset._cache.values())),
                          split_db.rows["split", "test"])


def test_datamodule_names_the_column_a_split_lacks(tmp_path):
    # DCell's files as published: one per split, train and test only
    (tmp_path / "genes.txt").write_text("G0\nG1\nG2\nG3\n")
    (tmp_path / "topo").write_text("ROOT: R 4\nGENES: G3\nTERMS: L\n"
                                   "ROOT: L 3\nGENES: G0 G1 G2\nTERMS:\n")
    (tmp_path / "train.txt").write_text("2 G0 G1 0.25\n2 G2 G3 -0.5\n")
    (tmp_path / "test.txt").write_text("2 G1 G3 0.125\n")
    (tmp_path / "r.yaml").write_text(
        "version: 1\ngenes: {file: genes.txt}\nontology: {format: dcell, file: topo}\n"
        "samples:\n"
        "  - {format: dcell_samples, file: train.txt, set: {split: train}}\n"
        "  - {format: dcell_samples, file: test.txt, set: {split: test}}\n")
    db = tmp_path / "db"
    run_cli("build", "--recipe", tmp_path / "r.yaml", "-o", db, "--quiet")
    dm = pertload.DataModule(db, batch_size=2, layout="lists")
    assert sorted(dm.splits) == ["test", "train"]
    assert sum(len(b.row) for b in dm.train_dataloader()) == 2
    dm.teardown("fit")  # the train loader's kept serve (the exception below holds dm)
    with pytest.raises(ValueError) as e:
        dm.val_dataloader()
    msg = str(e.value)
    assert "was given" not in msg
    assert "no 'val' split: category column 'split' of" in msg
    assert "has none of the levels 'val', 'validation', 'valid', 'dev' (its levels: 'train', " \
           "'test')" in msg, msg
    # splits given without val: says what was given
    dm = pertload.DataModule(db, {"train": "train"}, batch_size=2, layout="lists")
    with pytest.raises(ValueError, match=r"no 'test' split was given \(splits= names 'train'\)"):
        dm.test_dataloader()


def test_loader_over_no_sample_raises(tmp_path):
    # standard names against systematic ones: the build stops naming them,
    # unless allow_empty takes the empty table; the Loader then refuses
    (tmp_path / "genes.txt").write_text("YAL001C\nYBL002W\n")
    (tmp_path / "e.txt").write_text("YAL001C YBL002W\n")
    (tmp_path / "s.txt").write_text("2 TFC3 VPS8 0.1\n2 TFC3 ACT1 0.2\n")
    part = "  - {format: dcell_samples, file: s.txt%s}\n"
    recipe = ("version: 1\ngenes: {file: genes.txt}\nedges:\n  - {name: e, format: delim, "
              "file: e.txt, sep: space, source: 1, target: 2}\nsamples:\n")
    (tmp_path / "r.yaml").write_text(recipe + part % "")
    db = tmp_path / "db"
    r = subprocess.run([pertload_bin(), "build", "--recipe", tmp_path / "r.yaml", "-o", db,
                        "--quiet"], capture_output=True, text=True)
    assert r.returncode != 0 and not db.exists()
    assert "s.txt: the sample table keeps no sample: 2 rows, 2 with an unresolved gene " \
           "name; most frequent unresolved names: 'TFC3' (2), 'VPS8' (1), 'ACT1' (1)" \
        in r.stderr, r.stderr
    (tmp_path / "r.yaml").write_text(recipe + part % ", allow_empty: true")
    run_cli("build", "--recipe", tmp_path / "r.yaml", "-o", db, "--quiet")
    with pytest.raises(ValueError, match="holds no sample: a Loader over it would yield no "
                                         "batch"):
        pertload.Loader(db, batch_size=4)
