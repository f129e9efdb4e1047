"""Budgeted batches (Loader(budget=...), serve --budget): every rank the same
number of steps, every sample exactly once (padding aside), batches within
the budget, resume; with payload bytes the plan is re-derived here from
loader/plan.h (steps 2c-3c) independently of the library."""

import numpy as np
import pytest

import pertload
from conftest import KINDS, plan_batches


def epoch_rows(loader):
    return [batch.row.tolist() for batch in loader]


def payload_plan(n, seed, epoch, rank, world, cap, per_batch, drop_last):
    """Budgeted plan when every row costs the same: global batches of
    min(cap, per_batch) rows of the epoch's order, dealt to ranks in turn."""
    order = [r for b in plan_batches(n, seed, epoch, True, 0, 1, n, False) for r in b]
    k = min(cap, per_batch)
    glob = [order[i:i + k] for i in range(0, n, k)]
    G = len(glob)
    steps = G // world if drop_last else -(-G // world)
    return [glob[(s * world + rank) % G] for s in range(steps)]


@pytest.mark.parametrize("world,drop", [(1, False), (3, False), (3, True)])
def test_payload_budget_is_the_documented_plan(medium, world, drop):
    # 8 float32 = 32 bytes a row: 700 bytes hold 21 rows (cap 64)
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=64, shuffle=True, seed=3, rank=rank,
                                 world_size=world, drop_last=drop, budget="payload=700")
        loader.set_epoch(1)
        got = epoch_rows(loader)
        assert got == payload_plan(medium.n, 3, 1, rank, world, 64, 21, drop)
        assert len(got) == len(loader)


def sample_cost(batch, i):
    """What sample i removes (deleted genes and removed positions of every kind)."""
    n = int(batch.perturbation_ptr[i + 1] - batch.perturbation_ptr[i])
    for pos, ptr in batch.removed.values():
        n += int(ptr[i + 1] - ptr[i])
    for k in KINDS:
        pos, ptr = getattr(batch, k)
        n += int(ptr[i + 1] - ptr[i])
    return n


@pytest.mark.parametrize("world", [1, 4])
def test_removed_budget_equal_steps_exactly_once(medium, world):
    budget = 6000
    ranks, costs = [], []
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=256, shuffle=True, seed=8, rank=rank,
                                 world_size=world, budget=f"removed={budget}")
        rows = []
        for batch in loader:
            c = [sample_cost(batch, i) for i in range(len(batch))]
            # what a sample removes is at most what the budget counts for it
            assert sum(c) <= budget or len(batch) == 1
            costs.append(sum(c))
            rows.append(batch.row.tolist())
        assert len(rows) == len(loader)
        ranks.append(rows)
    assert len({len(r) for r in ranks}) == 1, [len(r) for r in ranks]
    sizes = {len(b) for r in ranks for b in r}
    assert len(sizes) > 1 and max(sizes) <= 256  # the sizes vary with the samples
    flat = [x for r in ranks for b in r for x in b]
    assert set(flat) == set(range(medium.n))
    # padding repeats whole batches from the epoch's start: duplicates come
    # in the first batches of rank 0's order only
    extra = len(flat) - medium.n
    assert extra == 0 or extra < 256 * world
    # a batch's cost is even: most batches are within a factor 2 of the mean
    mean = np.mean(costs)
    assert np.mean(np.abs(np.array(costs) - mean) < mean / 2) > 0.9


def test_resume_and_state(medium):
    kw = dict(batch_size=128, shuffle=True, seed=2, budget="removed=5000")
    full = epoch_rows(pertload.Loader(medium.db, **kw))
    loader = pertload.Loader(medium.db, **kw)
    it = iter(loader)
    head = [next(it).row.tolist() for _ in range(5)]
    sd = loader.state_dict()
    loader.close()
    assert sd["budget"] == "removed=5000"
    again = pertload.Loader(medium.db, **kw)
    again.load_state_dict(sd)
    assert len(again) == len(full) - 5
    assert head + epoch_rows(again) == full
    with pytest.raises(ValueError, match="budget"):
        pertload.Loader(medium.db, batch_size=128, shuffle=True, seed=2).load_state_dict(sd)


def test_budget_is_checked(small):
    for bad in ("removed", "bytes=3", "removed=0", "payload=-1"):
        with pytest.raises(ValueError, match="budget is"):
            pertload.Loader(small.db, budget=bad)
    with pytest.raises(ValueError, match="row order"):
        pertload.Loader(small.db, budget="removed=10", order="block")
