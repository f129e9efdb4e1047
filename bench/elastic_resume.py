#!/usr/bin/python3
"""Time to the first batch after an elastic resume (docs/ranks.md, DESIGN
section 22), beside an ordinary epoch start.

For each database (made by `pertload synth --samples N` and `pertload build`
under WORK unless given) it times, ROUNDS times in turn, from the call to
the first batch in hand:
  - start: rank 0 of 4 ranks, iter() of a fresh epoch (shuffled);
  - elastic: rank 0 of 3 ranks, load_state_dict() of a state taken at the
    middle of the 4-rank epoch, then iter() (the position is computed and
    serve plans the rest of the epoch from it; nothing before is served);
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
    """Seconds from the loader's start (or its load_state_dict) to its first
    batch; the loader closed."""
    loader = pertload.Loader(db, rank=0, world_size=world, **KW)
    t0 = time.perf_counter()
    if state is not None:
        loader.load_state_dict(state)
    it = iter(loader)
    next(it)
    dt = time.perf_counter() - t0
    loader.close()
    return dt


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
    return {"samples": n, "rounds": rounds,
            **{k: {"median_s": round(statistics.median(v), 3),
                   "min_s": round(min(v), 3), "max_s": round(max(v), 3)}
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
