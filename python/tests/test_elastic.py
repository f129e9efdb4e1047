"""Elastic resume (DESIGN section 22, loader/plan.h step 1e): a state taken
after some steps of W ranks resumes on W' ranks. What the W ranks consumed
plus what the W' ranks yield is every sample once (padding only in the new
last step), the W' ranks run equal steps, the rest is the same whichever
rank's state is loaded, no consumed batch is served again, and the next
epoch is the new world's ordinary one. A 4-rank job of processes (RANK,
WORLD_SIZE) is killed mid-epoch and resumed at 3, 6 and 1 ranks."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import pertload

KW = {"batch_size": 16, "seed": 5}
CASES = {
    "shuffle": ({"shuffle": True}, None),
    "block": ({"order": "block", "block_rows": 4}, None),
    "budget": ({"shuffle": True, "budget": "removed=600"}, None),
    "weights": ({"shuffle": True}, [3, 1, 2, 2]),
}
NEW_WEIGHTS = {1: [1], 2: [1, 2], 3: [2, 1, 2], 5: [1, 1, 2, 1, 1], 6: [1, 2, 1, 1, 3, 1]}


def loaders(db, world, kw, weights=None):
    return [pertload.Loader(db, rank=r, world_size=world, rank_weights=weights, **KW, **kw)
            for r in range(world)]


def take(loader, steps):
    """The rows of the first `steps` batches of loader's epoch, and its state."""
    it = iter(loader)
    rows = [next(it).row.tolist() for _ in range(steps)]
    state = loader.state_dict()
    loader.close()
    return rows, state


def check_union(n, consumed, served, name, elastic=True):
    """consumed: rows taken before; served: per new rank its batches. The
    new ranks run equal steps; every row comes once but for padding, which
    is in the new last step only and, elastic, repeats no consumed row (the
    same world's resume pads as its plan, from the epoch's start)."""
    assert len({len(b) for b in served}) == 1, (name, [len(b) for b in served])
    once = consumed + [r for b in served for batch in b[:-1] for r in batch]
    last = [r for b in served for r in (b[-1] if b else [])]
    assert len(once) == len(set(once)), f"{name}: a row twice before the new last step"
    assert not elastic or not set(last) & set(consumed), f"{name}: a consumed row again"
    assert set(once) | set(last) == set(range(n)), f"{name}: rows missing"


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("old,new,stop", [(4, 3, 5), (4, 6, 2), (4, 1, 7), (2, 2, 3),
                                          (3, 5, 0), (4, 2, 9)])
def test_resume_on_another_world(medium, case, old, new, stop):
    kw, weights = CASES[case]
    old_w = (weights if old == 4 else NEW_WEIGHTS[old]) if weights else None
    new_w = NEW_WEIGHTS[new] if weights else None
    consumed, states = [], []
    for lo in loaders(medium.db, old, kw, old_w):
        rows, sd = take(lo, stop)
        consumed += [r for b in rows for r in b]
        states.append(sd)
    assert all(s["batches_consumed"] == stop for s in states)
    served, firsts = [], []
    for r, lo in enumerate(loaders(medium.db, new, kw, new_w)):
        lo.load_state_dict(states[r % old])  # any rank's state: the same rest
        n = len(lo)
        batches = [b.row.tolist() for b in lo]
        assert len(batches) == n, (case, r)
        assert lo.state_dict()["batches_consumed"] == n + (stop if old == new else 0)
        served.append(batches)
        firsts.append(batches[:1])
    check_union(medium.n, consumed, served, f"{case} {old}->{new} at {stop}", old != new)
    if case == "budget":  # the budget cuts batches short of batch_size
        assert any(len(b) < KW["batch_size"] for s in served for b in s[:-1])
    # the whole state list works too, and gives the same rest
    again = loaders(medium.db, new, kw, new_w)[0]
    again.load_state_dict(states)
    assert [b.row.tolist() for b in again][:1] == firsts[0]


def test_same_world_keeps_the_plan(medium):
    """W' = W: the rest is the ordinary resume (the same batches as the
    uninterrupted epoch), with or without elastic positions before."""
    kw = {"shuffle": True}
    full = [[b.row.tolist() for b in lo] for lo in loaders(medium.db, 3, kw)]
    lo = loaders(medium.db, 3, kw)[1]
    head, sd = take(lo, 6)
    again = loaders(medium.db, 3, kw)[1]
    again.load_state_dict(sd)
    assert head + [b.row.tolist() for b in again] == full[1]


def test_twice_elastic_and_next_epoch(medium):
    """4 ranks, then 3 from step 4, then 6 from step 5 of the 3: once in
    all; the epoch after is the 6-rank world's ordinary epoch; a state of
    the resumed epoch carries its position."""
    kw = {"shuffle": True}
    consumed, sd = [], None
    for lo in loaders(medium.db, 4, kw):
        rows, sd = take(lo, 4)
        consumed += [r for b in rows for r in b]
    mid = None
    for lo in loaders(medium.db, 3, kw):
        lo.load_state_dict(sd)
        rows, mid = take(lo, 5)
        consumed += [r for b in rows for r in b]
    assert mid["from"] == 4 * 16 * 4 and mid["world_size"] == 3
    served = []
    news = loaders(medium.db, 6, kw)
    for lo in news:
        lo.load_state_dict(mid)
        served.append([b.row.tolist() for b in lo])
    check_union(medium.n, consumed, served, "4->3->6")
    ordinary = loaders(medium.db, 6, kw)
    for lo, o in zip(news, ordinary):
        lo.set_epoch(1)
        o.set_epoch(1)
        assert len(lo) == len(o)
        assert [b.row.tolist() for b in lo] == [b.row.tolist() for b in o]
        assert "from" not in lo.state_dict()
    # without set_epoch, the iteration after the resumed epoch is the whole
    # epoch of the new world
    lo = loaders(medium.db, 6, kw)[2]
    lo.load_state_dict(mid)
    rest = [b.row.tolist() for b in lo]
    whole = [b.row.tolist() for b in lo]
    assert whole == [b.row.tolist() for b in loaders(medium.db, 6, kw)[2]]
    assert len(rest) < len(whole)


def per_row(batch):
    """{row: (its perturbed genes, its k-hop genes)} of a batch."""
    (gp, gptr), (kp, kptr) = ((batch.perturbation_indices, batch.perturbation_ptr),
                              batch.khop["genes"])
    return {int(r): (gp[gptr[i]:gptr[i + 1]].tolist(), kp[kptr[i]:kptr[i + 1]].tolist())
            for i, r in enumerate(batch.row)}


def test_subset_and_khop_lists(medium):
    """A subset (rows) with k-hop lists: the W' ranks' batches carry each
    row's own lists, the subset's rows once."""
    kw = dict(batch_size=8, shuffle=True, seed=3, rows=list(range(101, 1900, 3)), khop=1)
    want = {}
    for b in pertload.Loader(medium.db, rank=0, world_size=1, **kw):
        want.update(per_row(b))
    got, sd = {}, None
    for r in range(5):
        lo = pertload.Loader(medium.db, rank=r, world_size=5, **kw)
        it = iter(lo)
        for _ in range(4):
            got.update(per_row(next(it)))
        sd = lo.state_dict()
        lo.close()
    for r in range(2):
        lo = pertload.Loader(medium.db, rank=r, world_size=2, **kw)
        lo.load_state_dict(sd)
        for b in lo:
            got.update(per_row(b))
    assert got == want and sorted(want) == kw["rows"]


def test_evaluation_pad_false(medium):
    """pad=False: every sample exactly once across the old and new ranks."""
    kw = {"pad": False, "batch_size": 7}
    consumed, sd = [], None
    for r in range(4):
        lo = pertload.Loader(medium.db, rank=r, world_size=4, seed=5, **kw)
        rows, sd = take(lo, 3)
        consumed += [x for b in rows for x in b]
    for r in range(3):
        lo = pertload.Loader(medium.db, rank=r, world_size=3, seed=5, **kw)
        lo.load_state_dict(sd)
        consumed += [x for b in lo for x in b.row.tolist()]
    assert sorted(consumed) == list(range(medium.n))


def test_refusals(medium, small):
    lo = pertload.Loader(medium.db, rank=0, world_size=4, **KW, shuffle=True)
    _, sd = take(lo, 2)
    new = dict(rank=0, world_size=3, shuffle=True)
    with pytest.raises(ValueError, match="batch_size=16, this loader 32"):
        pertload.Loader(medium.db, batch_size=32, **new).load_state_dict(sd)
    with pytest.raises(ValueError, match="database="):
        pertload.Loader(small.db, batch_size=16, **new).load_state_dict(sd)
    with pytest.raises(ValueError, match="n_samples=2000, this loader 300"):  # older states
        pertload.Loader(small.db, batch_size=16, **new).load_state_dict(
            {k: v for k, v in sd.items() if k != "database"})
    with pytest.raises(ValueError, match="database=.0000000000000000., this loader"):
        pertload.Loader(medium.db, batch_size=16, **new).load_state_dict(
            dict(sd, database="0" * 16))
    with pytest.raises(ValueError, match="subset"):
        pertload.Loader(medium.db, batch_size=16, rows=range(2000), **new).load_state_dict(sd)
    with pytest.raises(ValueError, match="state_dicts differ: batches_consumed=2 at rank 0, "
                                         "3 at rank 1"):
        pertload.Loader(medium.db, batch_size=16, **new).load_state_dict(
            [sd, dict(sd, rank=1, batches_consumed=3)])
    with pytest.raises(ValueError, match="batches_consumed 99 is outside 0..32"):
        pertload.Loader(medium.db, batch_size=16, **new).load_state_dict(
            dict(sd, batches_consumed=99))
    wl = pertload.Loader(medium.db, rank=0, world_size=2, rank_weights=[1, 2], **KW,
                         shuffle=True)
    _, wsd = take(wl, 2)
    with pytest.raises(ValueError, match=r"rank_weights=\[1, 2\] for 2 ranks; give this "
                                         "loader of 3 rank_weights of its own"):
        pertload.Loader(medium.db, batch_size=16, **new).load_state_dict(wsd)
    with pytest.raises(ValueError, match="rank_weights"):  # the old weights: refused
        pertload.Loader(medium.db, batch_size=16, rank_weights=[1, 2], **new)


RANK = """
import json, os, sys, time, pertload
db, out, kw, stop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
state = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
loader = pertload.Loader(db, **kw)   # RANK and WORLD_SIZE from the environment
if state is not None:
    loader.load_state_dict(state)
rows, n = [], len(loader)
for batch in loader:
    rows.append(batch.row.tolist())
    if len(rows) == stop:  # the checkpoint of the step, then wait for the kill
        json.dump({"rows": rows, "state": loader.state_dict()}, open(out + ".tmp", "w"))
        os.rename(out + ".tmp", out)
        time.sleep(600)
json.dump({"rows": rows, "len": n}, open(out, "w"))
"""


def ranks(tmp_path, tag, db, world, kw, stop, state=None):
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world))
        out = tmp_path / f"{tag}{rank}.json"
        args = [sys.executable, "-c", RANK, str(db), str(out), json.dumps(kw), str(stop)]
        procs.append((subprocess.Popen(args + ([json.dumps(state)] if state else []),
                                       env=env), out))
    return procs


@pytest.mark.parametrize("case", sorted(CASES))
def test_killed_job_resumes_at_3_6_1_ranks(medium, tmp_path, case):
    kw, weights = CASES[case]
    kw = dict(KW, **kw, **({"rank_weights": weights} if weights else {}))
    procs = ranks(tmp_path, "job", medium.db, 4, kw, 6)
    deadline = time.time() + 120
    while not all(out.exists() for _, out in procs):
        assert time.time() < deadline and all(p.poll() is None for p, _ in procs)
        time.sleep(0.05)
    for p, _ in procs:  # preempted
        p.send_signal(signal.SIGKILL)
        p.wait()
    got = [json.load(open(out)) for _, out in procs]
    consumed = [r for g in got for b in g["rows"] for r in b]
    state = got[0]["state"]  # rank 0's checkpoint
    for new in (3, 6, 1):
        nkw = dict(kw, **({"rank_weights": NEW_WEIGHTS[new]} if weights else {}))
        ps = ranks(tmp_path, f"w{new}_", medium.db, new, nkw, 0, state)
        assert all(p.wait(timeout=120) == 0 for p, _ in ps)
        res = [json.load(open(out)) for _, out in ps]
        assert all(g["len"] == len(g["rows"]) for g in res)
        check_union(medium.n, consumed, [g["rows"] for g in res], f"{case} 4->{new}")


def test_persistent_serve_after_an_elastic_epoch(medium):
    """persistent=True: the resumed epoch's serve (started at the position)
    is not asked for the next epoch, which is the new world's ordinary one."""
    kw = {"shuffle": True, "persistent": True}
    _, sd = take(loaders(medium.db, 4, kw)[0], 3)
    lo = loaders(medium.db, 3, kw)[1]
    lo.load_state_dict(sd)
    rest = [b.row.tolist() for b in lo]
    lo.set_epoch(1)
    nxt = [b.row.tolist() for b in lo]
    lo.close()
    plain = loaders(medium.db, 3, {"shuffle": True})[1]
    plain.set_epoch(1)
    assert nxt == [b.row.tolist() for b in plain] and len(rest) < len(nxt)
