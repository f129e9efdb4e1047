"""Loaders over a subset of rows (rows=, serve --rows): the documented plan
over the subset's positions, exactly once across ranks, resumable, and the
rank/world_size defaults from the environment."""

import logging
import subprocess
import sys

import numpy as np
import pytest

import pertload
from conftest import pertload_bin, plan_batches, unique


def epoch_rows(loader):
    return [b.row.tolist() for b in loader]


def subset_plan(subset, seed, epoch, shuffle, rank, world, B, drop_last):
    """plan.h step 0: the plan over positions, each position the subset's row."""
    return [[subset[k] for k in b]
            for b in plan_batches(len(subset), seed, epoch, shuffle, rank, world, B, drop_last)]


def split(n, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    return perm[:n * 7 // 10], perm[n * 7 // 10:n * 85 // 100], perm[n * 85 // 100:]


@pytest.mark.parametrize("world", [1, 3])
def test_subset_rows_exactly_once_across_ranks(medium, world):
    train, val, test = split(medium.n)
    seen = {}
    for name, rows in (("train", train), ("val", val), ("test", test)):
        union = []
        for rank in range(world):
            loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=3, rank=rank,
                                     world_size=world, rows=rows, drop_last=False)
            loader.set_epoch(1)
            assert loader.n_samples == len(rows)
            got = epoch_rows(loader)
            assert got == subset_plan(rows.tolist(), 3, 1, True, rank, world, 40, False)
            assert len(got) == len(loader)
            union += [r for b in got for r in b]
        m = -(-len(rows) // world)
        assert len(union) == m * world
        assert set(union) == set(rows.tolist())
        seen[name] = set(union)
    assert not (seen["train"] & seen["val"] or seen["train"] & seen["test"] or
                seen["val"] & seen["test"])
    assert len(seen["train"] | seen["val"] | seen["test"]) == medium.n


def test_subset_range_and_contents(medium):
    loader = pertload.Loader(medium.db, batch_size=64, rows=range(100, 333))
    got = []
    for b in loader:
        for i, row in enumerate(b.row.tolist()):
            assert int(b.sample_id[i]) == medium.ids[row]
            np.testing.assert_allclose(b.labels[i], medium.labels[row], rtol=1e-6)
        got += b.row.tolist()
    assert got == list(range(100, 333))
    # The payload rows are the subset's rows too.
    for b in pertload.Loader(medium.db, batch_size=50, rows=[5, 1999, 0, 7], shuffle=True):
        np.testing.assert_array_equal(b.payload, medium.payload[b.row.astype(np.int64)])


def test_subset_resume_yields_exactly_the_rest(medium):
    _, _, test = split(medium.n, 4)
    kw = dict(batch_size=16, shuffle=True, seed=2, rows=test)
    full = epoch_rows(pertload.Loader(medium.db, **kw))
    loader = pertload.Loader(medium.db, **kw)
    it = iter(loader)
    head = [next(it).row.tolist() for _ in range(5)]
    sd = loader.state_dict()
    loader.close()
    resumed = pertload.Loader(medium.db, **kw)
    resumed.load_state_dict(sd)
    assert head + epoch_rows(resumed) == full
    other = pertload.Loader(medium.db, batch_size=16, shuffle=True, seed=2,
                            rows=np.sort(test))
    with pytest.raises(ValueError, match="subset"):
        other.load_state_dict(sd)
    everything = pertload.Loader(medium.db, batch_size=16, shuffle=True, seed=2)
    with pytest.raises(ValueError, match="n_samples|subset"):
        everything.load_state_dict(sd)


@pytest.mark.parametrize("rows, match", [
    ([0, 5, 5], "row 5 is given twice"),
    ([0, 2000], "2000 is not a row of the database's 2000"),
    ([-1], "-1 is not a row"),
    ([], "empty"),
    (range(10, 10), "start < stop"),
    (range(0, 2001), "start < stop <= 2000"),
    ([[1, 2]], "one-dimensional"),
    (["a"], "one-dimensional"),
])
def test_bad_subsets_are_refused(medium, rows, match):
    with pytest.raises(ValueError, match=match):
        pertload.Loader(medium.db, rows=rows)


@pytest.mark.parametrize("spec, err", [
    ("5:5", "a range A:B with A < B <= 300"),
    ("0:301", "a range A:B with A < B <= 300"),
    ("{dup}", "row 3 is given twice (entry 2)"),
    ("{big}", "entry 1 is 300, not a row of the database's 300"),
    ("{neg}", "entry 0 is -4, not a row"),
    ("{float}", "a one-dimensional int32, int64 or uint32 array is expected"),
    ("{twod}", "a one-dimensional int32"),
    ("{empty}", "no rows"),
    ("{missing}", "missing.npy"),
])
def test_serve_rows_errors(small, tmp_path, spec, err):
    files = {"dup": np.array([1, 3, 3], np.int32), "big": np.array([0, 300], np.uint32),
             "neg": np.array([-4], np.int64), "float": np.array([1.0]),
             "twod": np.zeros((2, 2), np.int64), "empty": np.array([], np.int64)}
    paths = {}
    for k, a in files.items():
        paths[k] = str(tmp_path / f"{k}.npy")
        np.save(paths[k], a)
    paths["missing"] = str(tmp_path / "missing.npy")
    r = subprocess.run([pertload_bin(), "serve", "--ring", unique("rows-test"), "--quiet", "--rows",
                        spec.format(**paths), str(small.db)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert err in r.stderr, r.stderr


def test_rank_defaults_from_the_environment_are_logged_once(small):
    code = """
import logging, pertload, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s: %(message)s")
a = pertload.Loader(sys.argv[1], batch_size=10)
b = pertload.Loader(sys.argv[1], batch_size=10)
e = pertload.Loader(sys.argv[1], batch_size=10, rank=0, world_size=1)
print(a.rank, a.world_size, len(a), len(e))
"""
    env = dict(__import__("os").environ, RANK="1", WORLD_SIZE="2")
    out = subprocess.run([sys.executable, "-c", code, str(small.db)], capture_output=True,
                         text=True, timeout=60, env=env).stdout.splitlines()
    assert out[-1] == "1 2 15 30"
    logged = [ln for ln in out if ln.startswith("pertload:")]
    assert len(logged) == 1
    assert "rank 1 (RANK) and world_size 2 (WORLD_SIZE) from the environment" in logged[0]
    assert "rank=0, world_size=1" in logged[0]


def test_no_log_without_the_environment(small, caplog, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with caplog.at_level(logging.INFO, logger="pertload"):
        pertload.Loader(small.db, batch_size=10)
    assert not caplog.records
