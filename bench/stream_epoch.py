#!/usr/bin/python3
"""Stream one epoch of a pertload database into this Python process.

The main job of pertload: `pertload serve` fills a shared-memory ring and this
consumer iterates the batches (zero-copy numpy views), touching every removed
list, then prints samples/s and the stall times of both sides of the ring:
"consumer waited" is the time a training loop would have sat idle for data.

usage: stream_epoch.py DB [--batch-size B] [--threads T] [--dense bits|bool]
                          [--shuffle] [--seed S] [--epoch E] [--to-torch]
                          [--hold-one]

--hold-one leaves a view of each batch bound until the next step (the loop
variable of `for positions, _ in batch.removed.values()`): every slot is
then copied when handed back (copy-on-keep, docs/kept-data-and-workers.md).
"""
import argparse
import os
import sys
import time

import pertload


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dense", choices=["bits", "bool"])
    ap.add_argument("--shuffle", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--to-torch", action="store_true",
                    help="also build every dense mask with torch on the CPU")
    ap.add_argument("--hold-one", action="store_true",
                    help="keep a view of each batch bound for one step")
    a = ap.parse_args()
    loader = pertload.Loader(a.db, batch_size=a.batch_size, shuffle=a.shuffle, seed=a.seed,
                             threads=a.threads, dense=a.dense)
    loader.set_epoch(a.epoch)
    samples = removed = 0
    stats = None
    t0 = time.perf_counter()
    cpu0 = os.times()
    it = iter(loader)
    for batch in it:
        samples += len(batch)
        # No view of the batch outlives the step (a name bound to one, such as
        # a loop variable, would have its slot copied at the next batch).
        if a.hold_one:
            for positions, _ in batch.removed.values():  # positions stays bound
                removed += positions.shape[0]
        else:
            removed += sum(positions.shape[0] for positions, _ in batch.removed.values())
        if a.to_torch:
            batch.to_torch("cpu")
        stats = loader.stats() or stats
    dt = time.perf_counter() - t0
    cpu1 = os.times()
    loader.close()
    print(f"epoch {a.epoch}: {samples} samples in {len(loader)} batches of {a.batch_size} "
          f"in {dt:.2f} s: {samples / dt:,.0f} samples/s "
          f"({removed / max(samples, 1):.0f} removed edges per sample)")
    if stats:
        print(f"ring: {stats['n_slots']} slots x {stats['slot_bytes'] / 2**20:.1f} MiB; "
              f"consumer waited for data {stats['consumer_wait_ns'] / 1e9:.2f} s "
              f"({100 * stats['consumer_wait_ns'] / 1e9 / dt:.0f}% of the epoch), "
              f"producer waited for free slots {stats['producer_wait_ns'] / 1e9:.2f} s")
    print(f"consumer process CPU {cpu1.user - cpu0.user + cpu1.system - cpu0.system:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
