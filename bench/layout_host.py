#!/usr/bin/python3
"""The host's share of a layout built by the library's kernels: per batch,
batch.to_torch(DEVICE, layout=L) as it runs, and again with the kernels'
launches left out (each call returns at once; the outputs are allocated,
the lists checked and uploaded, the PyG Batch assembled as before), each
followed by a device synchronisation. The second is what the host spends
around the kernels, the floor of the layout however fast they run.

On a CPU device the kernels' host twin stands in for the device (the
library's element functions in a loop), so "with the kernels" is then the
twin's work, not a device's; "launches left out" is the host's share all
the same.

usage: layout_host.py DB [--device D] [--layouts pyg,lazy] [--batch-size B]
                         [--batches N] [--types T1,T2,...] [--repeat R]
"""
import sys
import time

import torch

from pertload import kernels

from pyg_layout import first_batches, options


def timed(batches, device, layout, types, repeat):
    """The least over `repeat` passes of the mean seconds a batch takes to be
    laid out on `device` and synchronised."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for b in batches:
            b.to_torch(device, layout=layout, edge_types=types)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, (time.perf_counter() - t0) / len(batches))
    return best


def main():
    ap = options(__doc__, 20)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layouts", default="pyg,lazy")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda" and not kernels.enabled(device):
        print("layout_host: this library has no CUDA kernels", file=sys.stderr)
        return 2
    kernels.enabled = lambda dev: True  # on the CPU: the kernels' host twin
    graph, types, _, batches = first_batches(a)
    graph.tensors_on(device)
    print(f"{len(batches)} batches of {a.batch_size}, {len(types)} edge types, on {device}")
    launch = kernels._call
    for layout in a.layouts.split(","):
        batches[0].to_torch(device, layout=layout, edge_types=types)  # warm: allocator, imports
        full = timed(batches, device, layout, types, a.repeat)
        kernels._call = lambda name, *args: None
        try:
            host = timed(batches, device, layout, types, a.repeat)
        finally:
            kernels._call = launch
        print(f"layout={layout!r}: {full * 1e6:,.0f} us a batch with the kernels, "
              f"{host * 1e6:,.0f} us with their launches left out (the host's share "
              f"{host / full:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
