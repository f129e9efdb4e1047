#!/usr/bin/python3
"""The batches PyG and TorchCell-style models consume, on the CPU:
layout="pyg" (a torch_geometric Batch) and layout="lazy" (full graphs with
masks) against what a user's pipeline does per sample, each against a
memset of its own output bytes (a fresh zeroed buffer of the same size, in
the same run), and one end-to-end epoch (Loader + layout="pyg" + a
one-layer HeteroConv(SAGEConv) step) with the share of time spent waiting
for data.

Per-sample pipelines (written here, on the same batches):
- from_data_list: each sample's HeteroData built with PyG's subgraph (the
  kept genes' edges), then Batch.from_data_list;
- TorchCell-style lazy: per sample a kept-edge mask from a gene -> edge
  positions incidence table (built once, not timed) over the full graph's
  edges, then a lazy collate (each sample's edges copied with node offsets,
  masks concatenated).

With --device cuda the two layouts are built on the device from the
graph already there (only the batch's lists cross the bus), the per-sample
pipelines run on the CPU as a user's DataLoader would and their output is
moved to the device (the move timed), each memset is a zeroed device
buffer, and the epoch's step runs on the device; every timing waits for the
device (torch.cuda.synchronize).

With --device cuda the layouts by the library's kernels are timed beside
the torch ops a library without them runs (the client before the kernels),
and the epoch runs three ways in the same run: the layout built in the loop
by torch ops, by the kernels, and by Loader(device=, prefetch=2) ahead of
the step on a side stream; each beside the step alone on batches already
laid out (the floor: "above the step alone" is the data pipeline's share).

usage: model_layouts.py DB [--batch-size 64] [--batches 3] [--types T1,T2]
                           [--epoch-batches 10] [--device cpu|cuda]
                           [--no-per-sample] [--switch-interval MS]
Needs torch_geometric importable (e.g. PyG 2.4.0 unpacked on PYTHONPATH).
"""
import sys
import time

import torch
import torch_geometric
from torch_geometric.data import Batch, HeteroData
from torch_geometric.nn import HeteroConv, SAGEConv, global_mean_pool
from torch_geometric.utils import subgraph

import pertload
from pyg_layout import at_least, best, first_batches, options, out_bytes  # the sibling bench


def per_sample_pyg(batch, graph, ei, types):
    """Each sample's HeteroData by PyG's subgraph, then from_data_list."""
    N = graph.n_genes
    pert, pptr = batch.perturbation_indices, batch.perturbation_ptr
    data = []
    for i in range(len(batch)):
        keep = torch.ones(N, dtype=torch.bool)
        keep[torch.from_numpy(pert[pptr[i]:pptr[i + 1]]).long()] = False
        d = HeteroData()
        d["gene"].num_nodes = N
        d["gene"].n_id = torch.arange(N)
        for t in types:
            d["gene", t, "gene"].edge_index = subgraph(keep, ei[t], num_nodes=N)[0]
        data.append(d)
    return Batch.from_data_list(data)


def incidence(ei, N):
    """gene -> positions of the edges it touches (both ends), as (ptr, idx)."""
    E = ei.shape[1]
    ends = torch.cat([ei[0], ei[1]])
    pos = torch.arange(E).repeat(2)
    loop = torch.cat([torch.zeros(E, dtype=torch.bool), ei[0] == ei[1]])
    ends, pos = ends[~loop], pos[~loop]
    order = torch.argsort(ends, stable=True)
    ptr = torch.zeros(N + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(ends, minlength=N).cumsum(0)
    return ptr, pos[order]


def per_sample_lazy(batch, graph, ei, inc, types):
    """TorchCell-style: per sample a mask from the incidence table, then a
    lazy collate (edges copied with offsets, masks concatenated)."""
    N = graph.n_genes
    pert, pptr = batch.perturbation_indices, batch.perturbation_ptr
    out = HeteroData()
    for t in types:
        ptr, idx = inc[t]
        E = ei[t].shape[1]
        edges, masks = [], []
        for i in range(len(batch)):
            mask = torch.ones(E, dtype=torch.bool)
            for g in pert[pptr[i]:pptr[i + 1]].tolist():
                mask[idx[ptr[g]:ptr[g + 1]]] = False
            edges.append(ei[t] + i * N)
            masks.append(mask)
        out["gene", t, "gene"].edge_index = torch.cat(edges, 1)
        out["gene", t, "gene"].mask = torch.cat(masks)
    out["gene"].num_nodes = N * len(batch)
    out["gene"].batch = torch.arange(len(batch)).repeat_interleave(N)
    return out


class OneLayer(torch.nn.Module):
    def __init__(self, n_genes, types, dim=16):
        super().__init__()
        self.emb = torch.nn.Embedding(n_genes, dim)
        self.conv = HeteroConv({("gene", t, "gene"): SAGEConv(dim, dim) for t in types})
        self.out = torch.nn.Linear(dim, 1)

    def forward(self, b):
        h = self.conv({"gene": self.emb(b["gene"].n_id)}, b.edge_index_dict)["gene"]
        return self.out(global_mean_pool(h, b["gene"].batch, size=b.num_graphs)).squeeze(1)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _kernels(on):
    """Layouts by the library's kernels (on) or by the torch ops of a
    library without them (the client before the kernels)."""
    pertload.kernels.enabled = (lambda dev: dev.type == "cuda" and pertload.kernels.built()
                                ) if on else (lambda dev: False)


def step(model, opt, b):
    y = b.y[:, 0].nan_to_num()
    loss = ((model(b) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def epoch(db, types, batch_size, n_batches, device, mode="loop"):
    """One epoch of n_batches: (seconds, seconds waiting for data, of which
    seconds to the first batch (the serve process's start), and seconds
    building the layout). mode "loop": the layout built in the step's loop
    and waited for (the step then waits for the device); "prefetch":
    Loader(device=, layout="pyg", prefetch=2), the layouts built ahead on a
    side stream (the wait is the time next() blocks; layout not separable)."""
    pre = mode == "prefetch"
    opts = dict(device=device, layout="pyg", edge_types=types, prefetch=2) if pre else {}
    loader = pertload.Loader(db, batch_size=batch_size, shuffle=True, seed=2,
                             rows=range(batch_size * n_batches), **opts)
    model = OneLayer(loader.graph.n_genes, types).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader.graph.tensors_on(device)  # the shared graph's upload, once per job: not timed
    t0 = time.perf_counter()
    it = iter(loader)  # starts the serve process: counted as waiting
    wait, start, layout = time.perf_counter() - t0, None, 0.0
    while True:
        w0 = time.perf_counter()
        batch = next(it, None)
        if batch is None:
            break
        if start is None:
            start = time.perf_counter() - t0
        w1 = time.perf_counter()
        if pre:
            b = batch
        else:
            b = batch.to_torch(device, layout="pyg", edge_types=types)
            sync(device)
        layout += time.perf_counter() - w1
        wait += time.perf_counter() - w0
        step(model, opt, b)
        sync(device)  # the step's own device work counts to the step, not to the wait
    if pre:
        print(f"  (prefetch: next() blocked on the thread {it.blocked_s * 1e3:.1f} ms, handing "
              f"batches over (stream wait, record_stream) {it.handoff_s * 1e3:.1f} ms, "
              f"switch interval {sys.getswitchinterval() * 1e3:g} ms)")
    loader.close()
    return time.perf_counter() - t0, wait, start, layout


def model_only(db, types, batch_size, n_batches, device):
    """Seconds a step of the same model takes on batches already laid out on
    the device (no data pipeline at all): the step's floor."""
    loader = pertload.Loader(db, batch_size=batch_size, shuffle=True, seed=2,
                             rows=range(batch_size * min(n_batches, 4)))
    built = [b.to_torch(device, layout="pyg", edge_types=types) for b in loader]
    loader.close()
    model = OneLayer(loader.graph.n_genes, types).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step(model, opt, built[0])
    sync(device)
    t0 = time.perf_counter()
    for i in range(n_batches):
        step(model, opt, built[i % len(built)])
        sync(device)
    return (time.perf_counter() - t0) / n_batches


def main():
    ap = options(__doc__, 3, "batches timed per pipeline (0: the epoch alone)", least_batches=0)
    ap.add_argument("--epoch-batches", type=at_least(0), default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-per-sample", action="store_true",
                    help="leave out the per-sample peer pipelines (slow)")
    ap.add_argument("--switch-interval", type=at_least(0, float), default=0,
                    help="also an epoch with prefetch under this sys.setswitchinterval (ms)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    dev = torch.device(a.device)
    graph, types, g, batches = first_batches(a)
    ei = {t: g[("gene", t, "gene")]["edge_index"] for t in types}
    inc = {t: incidence(ei[t], graph.n_genes) for t in types}
    gd = graph.to_torch(dev) if dev.type != "cpu" else g

    def timed(f):  # the call, with what it queued on the device
        def run():
            out = f()
            sync(dev)
            return out
        return run

    cuda = dev.type == "cuda"
    pipes = [("pyg", True, lambda b: b.to_torch(dev, layout="pyg", graph=gd, edge_types=types)),
             ("lazy", True, lambda b: b.to_torch(dev, layout="lazy", graph=gd,
                                                 edge_types=types))]
    if cuda:  # the client before the kernels, in the same run
        pipes += [("pyg, torch ops", False, pipes[0][2]), ("lazy, torch ops", False, pipes[1][2])]
    if not a.no_per_sample:
        pipes += [("from_data_list", True, lambda b: per_sample_pyg(b, graph, ei, types).to(dev)),
                  ("torchcell", True,
                   lambda b: per_sample_lazy(b, graph, ei, inc, types).to(dev))]
    rows = {name: [0.0, 0.0, 0] for name, _, _ in pipes}
    for b in batches:
        for name, kern, f0 in pipes:
            _kernels(kern)
            f = timed(lambda: f0(b))
            out = f()
            n = out_bytes(out)
            del out
            r = rows[name]
            r[0] += best(f, 1 if name in ("from_data_list", "torchcell") else 3)
            r[1] += best(timed(lambda: torch.zeros(n, dtype=torch.uint8, device=dev)), 3)
            r[2] += n
    _kernels(True)
    k = len(batches)
    base_of = {"from_data_list": "pyg", "torchcell": "lazy", "pyg, torch ops": "pyg",
               "lazy, torch ops": "lazy"}
    for _ in range(1 if k else 0):
        print(f"{k} batches of {a.batch_size}, {len(types)} edge types "
              f"({sum(e.shape[1] for e in ei.values()) / 1e6:.2f}M edges in the graph); "
              f"one CPU thread; layouts and memsets on {dev}; torch {torch.__version__}, "
              f"torch_geometric {torch_geometric.__version__}; library kernels: "
              f"{pertload.kernels.built() and cuda}")
        print("| pipeline | ms a batch | MiB out | x memset of its bytes | vs pertload |")
        print("|---|---|---|---|---|")
        for name, _, _ in pipes:
            t, tm, n = rows[name]
            base = base_of.get(name)
            vs = "" if base is None else f"{t / rows[base][0]:.1f}x slower than {base}"
            print(f"| {name} | {t / k * 1e3:.2f} | {n / k / 2**20:.0f} | {t / tm:.1f} | {vs} |")
    if a.epoch_batches:
        floor = model_only(a.db, types, a.batch_size, a.epoch_batches, dev)
        print(f"epochs of {a.epoch_batches} batches (Loader + layout='pyg' + one-layer "
              f"HeteroConv step) on {dev}; the step alone on batches already laid out: "
              f"{floor * 1e3:.2f} ms")
        print("| client | ms a step | waiting for data | of which the layout | "
              "above the step alone | first batch |")
        print("|---|---|---|---|---|---|")
        modes = [("loop, torch ops", False, "loop"), ("loop, kernels", True, "loop"),
                 ("prefetch=2, kernels", True, "prefetch")] if cuda else \
                [("loop", True, "loop"), ("prefetch=2", True, "prefetch")]
        if a.switch_interval:
            modes.append((f"prefetch=2, switch interval {a.switch_interval:g} ms", True,
                          "prefetch"))
        default_switch = sys.getswitchinterval()
        for name, kern, mode in modes:
            _kernels(kern)
            sys.setswitchinterval(a.switch_interval / 1e3 if "switch" in name
                                  else default_switch)
            total, wait, start, layout = epoch(a.db, types, a.batch_size, a.epoch_batches, dev,
                                               mode)
            steps = total - start
            per = steps / a.epoch_batches
            lay = f"{layout / steps:.0%}" if mode == "loop" else "(overlapped)"
            print(f"| {name} | {per * 1e3:.2f} | {(wait - start) / steps:.1%} | {lay} | "
                  f"{(per - floor) / per:.1%} | {start * 1e3:.0f} ms |")
        _kernels(True)
        sys.setswitchinterval(default_switch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
