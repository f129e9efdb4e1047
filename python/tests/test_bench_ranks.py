"""bench/ranks.py, the multi-rank part of `pertload bench`: the rewrite to
singles, doubles and triples, the per-step spread and the samples/s and
stall share over time (the whole run is checked by test_bench_report)."""
import random

import numpy as np
import pytest

import pertload
from conftest import bench_module, run_cli


def _ranks():
    return bench_module("ranks")


def test_mix_samples(tmp_path):
    """Row i deletes i % 3 + 1 distinct known genes, its own first; ids and
    labels stay; the built database has a third each of 1, 2 and 3 genes."""
    ranks = _ranks()
    src = tmp_path / "in"
    run_cli("synth", src, "--genes", 300, "--samples", 300, "--scale", 0.02, "--seed", 3,
            "--quiet")
    before = (src / "samples.tsv").read_text().splitlines()
    assert ranks.mix_samples(str(src)) == 300
    after = (src / "samples.tsv").read_text().splitlines()
    assert after[0] == before[0] and len(after) == len(before) == 301
    genes = set((src / "genes.txt").read_text().split())
    gi = before[0].split("\t").index("genes")
    counts = {1: 0, 2: 0, 3: 0}
    for i, (old, new) in enumerate(zip(before[1:], after[1:])):
        o, n = old.split("\t"), new.split("\t")
        assert o[:gi] + o[gi + 1:] == n[:gi] + n[gi + 1:], i
        mine, theirs = n[gi].split(";"), [g for g in o[gi].split(";") if g]
        assert len(mine) == i % 3 + 1 and len(set(mine)) == len(mine), (i, mine)
        assert set(mine) <= genes
        keep = min(len(theirs), len(mine))
        assert mine[:keep] == theirs[:keep], (i, mine, theirs)
        counts[len(mine)] += 1
    assert counts == {1: 100, 2: 100, 3: 100}
    args = (src / "build-args.txt").read_text().splitlines()
    run_cli("build", "-o", tmp_path / "db", *args)
    per = []
    for b in pertload.Loader(tmp_path / "db", batch_size=64, rank=0, world_size=1):
        per += list(np.diff(b.perturbation_ptr))
    assert sorted(per) == [1] * 100 + [2] * 100 + [3] * 100


def test_spread_and_quantile():
    ranks = _ranks()
    times = [[1.0, 2.0, 4.0], [3.0, 2.0, 4.0], [2.0, 2.0, 1.0, 9.0]]
    # step 0: (3 - 1) / 2; step 1: 0; step 2: (4 - 1) / 3; step 3 is not every rank's
    assert ranks.spread(times) == pytest.approx([1.0, 0.0, 1.0])
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert ranks.quantile(xs, 0.5) == 3.0
    assert ranks.quantile(xs, 0.9) == pytest.approx(4.6)
    assert ranks.quantile([7.0], 0.9) == 7.0
    assert np.isnan(ranks.quantile([], 0.5))


def test_over_time():
    """Counters sampled at uneven times give each bin's rate and stall share;
    the rates times the bin widths add up to the samples consumed."""
    ranks = _ranks()
    # 100 samples/s from t = 1 to t = 3 (none before), half of 1.5 - 2.5 s waiting.
    recs = [(1.0, 0, 0), (1.5, 50, 0), (2.5, 150, 500_000_000), (3.0, 200, 500_000_000)]
    rate, stall = ranks.over_time(recs, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert rate == pytest.approx([0.0, 100.0, 100.0, 0.0])
    assert stall == pytest.approx([0.0, 0.25, 0.25, 0.0])
    rng = random.Random(5)
    t, n, w, recs = 0.0, 0, 0, []
    for _ in range(200):
        t += rng.uniform(0.001, 0.05)
        n += rng.randrange(0, 65)
        w += rng.randrange(0, 10_000_000)
        recs.append((t, n, w))
    edges = [t * i / 17 for i in range(18)]
    rate, stall = ranks.over_time(recs, edges)
    assert sum(r * (hi - lo) for r, lo, hi in zip(rate, edges, edges[1:])) == pytest.approx(n)
    assert all(0 <= s <= 1 for s in stall)
