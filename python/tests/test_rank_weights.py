"""Weighted ranks (Loader(rank_weights=...), serve --rank-weights): batches as
loader/plan.h step 2d documents them (re-derived here), shares in proportion
to the weights, the same number of steps on every rank, exactly once, resume."""

import pytest

import pertload
from conftest import plan_batches


def weighted_plan(n, seed, epoch, rank, weights, B, drop_last):
    order = [r for b in plan_batches(n, seed, epoch, True, 0, 1, n, False) for r in b]
    total, top = sum(weights), max(weights)
    T = B * total // top
    c = [T * sum(weights[:r]) // total for r in range(len(weights) + 1)]
    steps = n // T if drop_last else -(-n // T)
    return [[order[(k * T + c[rank] + i) % n] for i in range(c[rank + 1] - c[rank])]
            for k in range(steps)]


@pytest.mark.parametrize("weights,drop", [([3, 2, 2], False), ([1, 4], True),
                                          ([2, 1, 1, 1], False)])
def test_weighted_ranks_are_the_documented_plan(medium, weights, drop):
    world, union, steps = len(weights), [], set()
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=48, shuffle=True, seed=6, rank=rank,
                                 world_size=world, drop_last=drop, rank_weights=weights)
        loader.set_epoch(4)
        got = [b.row.tolist() for b in loader]
        assert got == weighted_plan(medium.n, 6, 4, rank, weights, 48, drop)
        assert len(got) == len(loader)
        steps.add(len(got))
        # shares in proportion: within one sample a batch of the weight's size
        assert abs(len(got[0]) - 48 * weights[rank] / max(weights)) < 1
        union += [r for b in got for r in b]
    assert len(steps) == 1
    if drop:
        assert len(union) == len(set(union))
    else:
        assert set(union) == set(range(medium.n))


def test_resume_and_checks(medium):
    kw = dict(batch_size=40, shuffle=True, seed=1, rank=1, world_size=2, rank_weights=[1, 3])
    full = [b.row.tolist() for b in pertload.Loader(medium.db, **kw)]
    loader = pertload.Loader(medium.db, **kw)
    it = iter(loader)
    head = [next(it).row.tolist() for _ in range(4)]
    sd = loader.state_dict()
    loader.close()
    assert sd["rank_weights"] == [1, 3]
    again = pertload.Loader(medium.db, **kw)
    again.load_state_dict(sd)
    assert head + [b.row.tolist() for b in again] == full
    with pytest.raises(ValueError, match="rank_weights"):
        pertload.Loader(medium.db, world_size=2, rank=0, rank_weights=[1])
    with pytest.raises(ValueError, match="rank_weights"):
        pertload.Loader(medium.db, world_size=2, rank=0, rank_weights=[1, 0])
    with pytest.raises(ValueError, match="row order"):
        pertload.Loader(medium.db, world_size=2, rank=0, rank_weights=[1, 2], order="block")
