#!/usr/bin/python3
"""Time to the first batch after an elastic resume (docs/ranks.md, DESIGN
section 22), beside an ordinary epoch start.

For each database (made by `pertload synth --samples N` and `pertload build`
under WORK unless given) it times, ROUNDS times in turn, load_state_dict()
(load_s) and iter() to the first batch in hand (first_s):
  - start: rank 0 of 4 ranks, a fresh epoch (shuffled; no load);
  - elastic: rank 0 of 3 ranks loading a state taken at the middle of the
    4-rank epoch (the client computes the position and the new plan's
    count; serve plans the rest of the epoch from the position, nothing
    before it is served);
  - same: rank 0 of 4 ranks resuming that state at its batch (the plain
    resume of the same world size).
Each with a private sample table (shared_table=False: no round reuses
another's), and prints the medians and ranges as JSON.

usage: elastic_resume.py WORK [--samples N,N...] [--db DB ...] [--rounds R]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import pertload

KW = dict(batch_size=64, shuffle=True, seed=0, shared_table=False)


def database(work, n):
    """A synthetic database of n samples under work (made once)."""
    src, db = os.path.join(work, "synth-%d" % n), os.path.join(work, "db-%d" % n)
    if not os.path.exists(os.path.join(db, "data.mdb")):
        exe = pertload._lib.program_path()
        subprocess.run([exe, "synth", src, "--samples", str(n), "--quiet"], check=True)
        with open(os.path.join(src, "build-args.txt")) as f:
            args = [a for a in f.read().split("\n") if a]
        subprocess.run([exe, "build", "-o", db, "--quiet"] + args, check=True)
    return db


def first_batch(db, world, state=None):
    """(seconds of load_state_dict, seconds from iter() to the first batch);
    the loader closed."""
    loader = pertload.Loader(db, rank=0, world_size=world, **KW)
    t0 = time.perf_counter()
    if state is not None:
        loader.load_state_dict(state)
    t1 = time.perf_counter()
    it = iter(loader)
    next(it)
    t2 = time.perf_counter()
    loader.close()
    return t1 - t0, t2 - t1


def middle_state(db):
    """The state of rank 0 of 4 ranks at the middle of the epoch (made by
    editing batches_consumed: every rank's state is the same then)."""
    loader = pertload.Loader(db, rank=0, world_size=4, **KW)
    sd = dict(loader.state_dict(), batches_consumed=len(loader) // 2)
    loader.close()
    return sd


def measure(db, rounds):
    sd = middle_state(db)
    times = {"start": [], "elastic": [], "same": []}
    for _ in range(rounds):
        times["start"].append(first_batch(db, 4))
        times["elastic"].append(first_batch(db, 3, sd))
        times["same"].append(first_batch(db, 4, sd))
    n = pertload.Loader(db, rank=0, world_size=1).n_samples

    def spread(v):
        return [round(statistics.median(v), 3), round(min(v), 3), round(max(v), 3)]
    return {"samples": n, "rounds": rounds, "[median, min, max]": {
        k: {"load_s": spread([t[0] for t in v]), "first_s": spread([t[1] for t in v])}
        for k, v in times.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("work")
    ap.add_argument("--samples", default="2000000,13525071")
    ap.add_argument("--db", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    dbs = a.db or [database(a.work, int(n)) for n in a.samples.split(",") if n]
    print(json.dumps([measure(db, a.rounds) for db in dbs], indent=1))


if __name__ == "__main__":
    main()
