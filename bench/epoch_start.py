#!/usr/bin/python3
"""Epoch start: the time from iter() to the first batch of epochs 0..N, as a
training loop sees it, through each client path (shuffled, batch 64):

  loader        Loader (its serve kept across epochs: the default);
  loader-new    Loader(persistent=False): a new serve an epoch (the client
                before issue 38);
  datamodule-0  DataModule train loader without workers (the split's Dataset
                keeps its Loader's serve);
  datamodule-W  DataModule train loader with W persistent workers, each
                keeping its serve.

Epoch 0 starts every serve (process, database, sample table, ring); epochs
1..N are the figure (target <= 20 ms). Each epoch is iterated to its end.
Prints, per path, epoch 0 and epochs 1..N in ms (each, then min, median and
max); with --json, one JSON object.

usage: epoch_start.py DB [--epochs N] [--rows R] [--workers W]
                         [--batch-size B] [--threads T] [--only NAME,...] [--json]
"""
import argparse
import json
import os
import statistics
import time

import pertload

PATHS = ("loader", "loader-new", "datamodule-0", "datamodule-W")


def iterable(a, path):
    """What a training loop iterates once per epoch for `path`, and a function
    that moves it to epoch e (None where every iteration is the next epoch)."""
    rows = range(a.rows)
    kw = dict(batch_size=a.batch_size, threads=a.threads, rank=0, world_size=1)
    if path.startswith("loader"):
        lo = pertload.Loader(a.db, shuffle=True, rows=rows, persistent=path == "loader", **kw)
        return lo, lo.set_epoch, lo.close
    workers = 0 if path == "datamodule-0" else a.workers
    dm = pertload.DataModule(a.db, splits={"train": rows}, num_workers=workers,
                             persistent_workers=workers > 0, **kw)
    return dm.train_dataloader(), None, dm.teardown


def first_batches(a, path):
    """Seconds to the first batch of epochs 0..a.epochs through `path`."""
    it_of, set_epoch, close = iterable(a, path)
    out = []
    try:
        for e in range(a.epochs + 1):
            if set_epoch is not None:
                set_epoch(e)
            t0 = time.perf_counter()
            it = iter(it_of)
            next(it)
            out.append(time.perf_counter() - t0)
            for _ in it:
                pass
            del it
    finally:
        close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--epochs", type=int, default=10, help="epochs after the first")
    ap.add_argument("--rows", type=int, default=1280, help="rows an epoch (20 batches)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=",".join(PATHS))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    only = a.only.split(",")
    unknown = set(only) - set(PATHS)
    if unknown:
        ap.error(f"--only: unknown path {sorted(unknown)[0]!r} ({', '.join(PATHS)})")
    a.rows = min(a.rows, pertload.Loader(a.db, rank=0, world_size=1, persistent=False).n_samples)
    res = {"rows": a.rows, "batch_size": a.batch_size, "threads": a.threads,
           "workers": a.workers, "epochs": a.epochs, "load": os.getloadavg()[0],
           "first_batch_s": {}}
    for path in only:
        res["first_batch_s"][path.replace("-W", f"-{a.workers}")] = first_batches(a, path)
    res["load_after"] = os.getloadavg()[0]
    if a.json:
        print(json.dumps(res, indent=1))
        return
    print(f"iter() to the first batch, ms ({a.rows} rows an epoch, batch {a.batch_size}, "
          f"{a.threads} serve threads; load {res['load']:.1f} -> {res['load_after']:.1f})")
    print(f"{'path':14} {'epoch 0':>8} {'1..N min':>9} {'median':>7} {'max':>7}  epochs 1..N")
    for path, t in res["first_batch_s"].items():
        ms = [x * 1e3 for x in t]
        rest = ms[1:] or [float("nan")]
        print(f"{path:14} {ms[0]:8.1f} {min(rest):9.1f} {statistics.median(rest):7.1f} "
              f"{max(rest):7.1f}  {' '.join(f'{x:.1f}' for x in ms[1:])}")


if __name__ == "__main__":
    main()
