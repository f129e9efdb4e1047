#!/usr/bin/python3
"""Kept batches and DataLoader workers: what copy-on-keep and worker
processes cost against the ring read directly (DESIGN sections 15 and 16).

One epoch of DB (each figure from a fresh serve, shuffled, batch 64):
  loader       Loader alone, nothing kept: each batch's labels and removed
               lists touched and dropped (the zero-copy path);
  keep         Loader, every batch kept: torch.from_numpy(b.labels[:, 0])
               and a removed list appended to a list (each handed-back slot
               copied; Loader.kept_bytes);
  dataset-0    Dataset (lists layout) in a DataLoader without workers;
  dataset-W    the same with W worker processes (one shared-memory buffer a
               batch, unpacked here as views);
  epoch start  the time from iter() to the first batch of the second epoch:
               a Loader with persistent=True (its serve kept) and without
               (a new serve), and W workers with persistent_workers and
               each worker's serve kept, with persistent_workers and a new
               serve an epoch (the client before persistent serves), and
               without persistent workers; --repeat R interleaves R rounds.
Prints samples/s and the ratios to `loader`, the main process's CPU a batch
and, for dataset-W, the workers' own CPU a batch and their serves' (each
worker reports its CPU seconds as it exits); with --json, one JSON object.

usage: keep_workers.py DB [--rows N] [--workers W] [--batch-size B]
                          [--threads T] [--only NAME,...] [--rounds R]
                          [--repeat R] [--json]
--rounds R runs the epochs R times in turn and prints, per path, its % of
`loader` over the rounds (min, median, max).
"""
import argparse
import functools
import gc
import json
import multiprocessing.util as mp_util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

import pertload


def touch(b):
    """What a training step reads of a batch (no copy)."""
    if isinstance(b, dict):  # to_torch(layout="lists") of an older client's Dataset
        return float(b["labels"][:, 0].sum()) + sum(
            len(v["removed"]) for v in b.values() if isinstance(v, dict) and "removed" in v)
    s = float(b.labels[:, 0].sum())
    for pos, _ in b.removed.values():
        s += pos.shape[0]
    return s


def run_loader(a, keep):
    lo = pertload.Loader(a.db, batch_size=a.batch_size, shuffle=True, threads=a.threads,
                         rows=range(a.rows), rank=0, world_size=1)
    kept, n = [], 0
    t0, c0 = time.perf_counter(), _cpu()
    for b in lo:
        touch(b)
        n += len(b)
        if keep:
            kept.append((torch.from_numpy(b.labels[:, 0]), b.removed[sorted(b.removed)[0]][0]))
    dt, cpu = time.perf_counter() - t0, _cpu() - c0
    return {"samples": n, "seconds": dt, "samples_per_s": n / dt,
            "consumer_cpu_us_per_batch": cpu / len(lo) * 1e6,
            "kept_batches": getattr(lo, "kept_batches", 0),
            "kept_bytes": getattr(lo, "kept_bytes", 0)}


def run_dataset(a, workers):
    ds = pertload.Dataset(a.db, batch_size=a.batch_size, shuffle=True, threads=a.threads,
                          rows=range(a.rows), rank=0, world_size=1, layout="lists")
    n = batches = 0
    with tempfile.TemporaryDirectory() as tmp:
        dl = DataLoader(ds, batch_size=None, num_workers=workers,
                        worker_init_fn=functools.partial(_report_cpu_at_exit, tmp))
        t0, c0 = time.perf_counter(), _cpu()
        for b in dl:
            touch(b)
            n += len(b)
            batches += 1
        dt, cpu = time.perf_counter() - t0, _cpu() - c0
        del dl  # its workers joined: each wrote its CPU seconds at exit
        gc.collect()
        own = [json.loads((Path(tmp) / f).read_text()) for f in os.listdir(tmp)]
    out = {"samples": n, "seconds": dt, "samples_per_s": n / dt,
           "consumer_cpu_us_per_batch": cpu / batches * 1e6}
    if workers:
        out["workers_cpu_us_per_batch"] = sum(w for w, _ in own) / batches * 1e6
        out["worker_serves_cpu_us_per_batch"] = sum(s for _, s in own) / batches * 1e6
        out["workers_reported"] = len(own)
    return out


def _report_cpu_at_exit(folder, worker_id):
    """worker_init_fn: the worker writes [its CPU seconds, its exited
    children's (its serve)] to a file of `folder` as it exits."""
    def write():
        t = os.times()
        path = Path(folder) / f"worker-{worker_id}-{os.getpid()}.json"
        path.write_text(json.dumps([t.user + t.system, t.children_user + t.children_system]))
    mp_util.Finalize(None, write, exitpriority=-100)  # after the Dataset's own (serve stopped)


def _cpu():
    """CPU seconds of this process (user + system), not its children's."""
    t = os.times()
    return t.user + t.system


def epoch_start(a, workers, persistent, serve_kept):
    """Seconds from iter() to the first batch of the second epoch (a Loader
    alone with workers=0)."""
    rows = range(min(a.rows, 20 * a.batch_size * max(workers, 1)))
    kw = dict(batch_size=a.batch_size, shuffle=True, threads=a.threads, rows=rows, rank=0,
              world_size=1, persistent=serve_kept)
    if workers == 0:
        dl = pertload.Loader(a.db, **kw)
    else:
        ds = pertload.Dataset(a.db, **kw)
        dl = DataLoader(ds, batch_size=None, num_workers=workers,
                        persistent_workers=persistent)
    for _ in dl:
        pass
    if workers == 0:
        dl.set_epoch(1)
    else:
        ds.set_epoch(1)
    t0 = time.perf_counter()
    it = iter(dl)
    next(it)
    dt = time.perf_counter() - t0
    for _ in it:
        pass
    if workers == 0:
        dl.close()
    del it, dl
    return dt


# The epoch starts measured: (name, workers or None for --workers,
# persistent_workers, Loader persistent).
STARTS = (("loader_kept", 0, False, True), ("loader_new", 0, False, False),
          ("workers_kept", None, True, True), ("workers_new_serve", None, True, False),
          ("workers_not_persistent", None, False, False))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="loader,keep,dataset-0,dataset-W,epoch-start")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the epoch starts")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of the epochs, each round one of each in turn")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    n_db = pertload.Loader(a.db, rank=0, world_size=1).n_samples
    a.rows = min(a.rows, n_db)
    only = set(a.only.split(","))
    out = {"rows": a.rows, "batch_size": a.batch_size, "threads": a.threads,
           "workers": a.workers, "load": os.getloadavg()[0]}
    rounds = []
    for _ in range(a.rounds):  # the epochs in turn, each round one of each
        r = {}
        if "loader" in only:
            r["loader"] = run_loader(a, False)
        if "keep" in only:
            r["keep"] = run_loader(a, True)
        if "dataset-0" in only:
            r["dataset-0"] = run_dataset(a, 0)
        if "dataset-W" in only:
            r[f"dataset-{a.workers}"] = run_dataset(a, a.workers)
        rounds.append(r)
    out.update(rounds[0])
    if a.rounds > 1:
        out["rounds"] = rounds
    if "epoch-start" in only:
        out["epoch_start_s"] = {name: [] for name, *_ in STARTS}
        for _ in range(a.repeat):
            for name, workers, persistent, kept in STARTS:
                out["epoch_start_s"][name].append(epoch_start(
                    a, a.workers if workers is None else workers, persistent, kept))
    out["load_after"] = os.getloadavg()[0]
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{a.rows} rows, batch {a.batch_size}, serve threads {a.threads}; load average "
          f"{out['load']:.1f} -> {out['load_after']:.1f}")
    for n, r in enumerate(rounds):
        if a.rounds > 1:
            print(f"round {n + 1}")
        print_round(r)
    ratios = {}
    for r in rounds:
        for k, v in r.items():
            if "loader" in r and k != "loader":
                ratios.setdefault(k, []).append(100 * v["samples_per_s"] /
                                                r["loader"]["samples_per_s"])
    if a.rounds > 1:
        for k, pct in ratios.items():
            pct.sort()
            print(f"{k:12s} % of loader over {len(pct)} rounds: min {pct[0]:.0f}, median "
                  f"{statistics.median(pct):.0f}, max {pct[-1]:.0f}")
    if "epoch_start_s" in out:
        for name, times in out["epoch_start_s"].items():
            print(f"epoch start  {name:24s} " + ", ".join(f"{t * 1e3:.0f}" for t in times) +
                  " ms")
    return 0


def print_round(out):
    """One round's lines: samples/s, the ratio to `loader`, CPU a batch."""
    base = out.get("loader", {}).get("samples_per_s")
    for k, v in out.items():
        if isinstance(v, dict) and "samples_per_s" in v:
            ratio = f" ({100 * v['samples_per_s'] / base:.0f}% of loader)" if base else ""
            extra = (f", {v['kept_batches']} batches kept, {v['kept_bytes'] / 2**20:.1f} MiB "
                     f"copied" if v.get("kept_batches") else "")
            if "workers_cpu_us_per_batch" in v:
                extra += (f"; workers {v['workers_cpu_us_per_batch']:.0f} us, their serves "
                          f"{v['worker_serves_cpu_us_per_batch']:.0f} us a batch")
            print(f"{k:12s} {v['samples_per_s']:>12,.0f} samples/s{ratio}, main process CPU "
                  f"{v['consumer_cpu_us_per_batch']:.0f} us a batch{extra}")


if __name__ == "__main__":
    sys.exit(main())
