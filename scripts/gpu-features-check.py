#!/usr/bin/env python3
"""Node features stored in the database, on a device: layouts "pyg" and
"lazy" built on --device (default cuda) equal the same batches built on the
CPU, tensor for tensor, and x of every node type with features equals
features[n_id] computed here with numpy (docs/gpu.md).

    scripts/gpu-features-check.py [--device cuda] [--batches 4] [--keep DIR]

Builds a small database with `pertload synth` and `pertload build
--node-features` (float32 gene, float16 reaction features) in a temporary
folder (DIR with --keep), then reads batches with pertload.Loader. Needs the
pertload program, libpertload and the Python package (PERTLOAD_BIN,
PERTLOAD_LIB and PYTHONPATH, or an installation), numpy and torch;
torch_geometric when it imports (layout "pyg" is then a PyG Batch).
Prints one line per check and a last line "gpu-features-check: ok" or
"gpu-features-check: FAILED (N checks)"; exits 0 only when every check
passed. With --device cpu it runs unchanged on a machine without a GPU.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

import pertload


def tensors(batch):
    """{(store, attribute): tensor} of a batch of layout pyg or lazy (a PyG
    Batch or the mapping)."""
    out = {}
    if hasattr(batch, "node_types"):
        for key in list(batch.node_types) + list(batch.edge_types):
            for name, v in batch[key].items():
                if torch.is_tensor(v):
                    out[(key, name)] = v
        return out
    for key, store in batch.items():
        if isinstance(store, dict):
            for name, v in store.items():
                if torch.is_tensor(v):
                    out[(key, name)] = v
        elif torch.is_tensor(store):
            out[(key, "")] = store
    return out


def same(a, b):
    """Equal dtype, shape and values, NaN equal to NaN (missing labels)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0), b.nan_to_num(0))
    return torch.equal(a, b)


def build(folder):
    """A synthetic database with gene and reaction features; the features."""
    prog = pertload.program_path()
    inputs = os.path.join(folder, "inputs")
    subprocess.run([prog, "synth", inputs, "--genes", "200", "--samples", "64", "--scale",
                    "0.02", "--seed", "3", "--quiet"], check=True)
    with open(os.path.join(inputs, "build-args.txt")) as f:
        args = f.read().split()
    n_genes = sum(1 for ln in open(os.path.join(inputs, "genes.txt")) if ln.strip())
    n_reactions = sum(1 for ln in open(os.path.join(inputs, "reactions.txt")) if ln.strip())
    rng = np.random.default_rng(1)
    feats = {"gene": rng.standard_normal((n_genes, 16)).astype(np.float32),
             "reaction": rng.standard_normal((n_reactions, 8)).astype(np.float16)}
    spec = []
    for node, a in feats.items():
        path = os.path.join(folder, f"{node}.npy")
        np.save(path, a)
        spec += ["--node-features", f"{node}={path}"]
    db = os.path.join(folder, "db")
    subprocess.run([prog, "build", "-o", db, *args, *spec, "--quiet"], check=True, cwd=folder)
    return db, feats


def check(db, feats, device, n_batches):
    """The failed checks' descriptions (printing every check)."""
    failed = []

    def verdict(ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            failed.append(what)

    with pertload.Loader(db, batch_size=16, shuffle=True, seed=5) as loader:
        graph = loader.graph
        verdict(set(graph.features) == set(feats) and all(
            graph.node_features(n).tobytes() == a.tobytes() for n, a in feats.items()),
            "the database's features equal the .npy files")
        for k, batch in enumerate(loader):
            if k == n_batches:
                break
            for layout in ("pyg", "lazy"):
                here = tensors(batch.to_torch(device, layout=layout))
                cpu = tensors(batch.to_torch("cpu", layout=layout))
                where = f"batch {k} layout {layout}"
                verdict(set(here) == set(cpu), f"{where}: the same stores and attributes")
                devs = {str(t.device).split(":")[0] for t in here.values()}
                verdict(devs == {torch.device(device).type},
                        f"{where}: every tensor on {device} ({sorted(devs)})")
                diff = [key for key in cpu if key in here and not same(here[key].cpu(), cpu[key])]
                verdict(not diff, f"{where}: {len(cpu)} tensors equal the CPU's"
                        + (f" (differ: {diff[:4]})" if diff else ""))
                for node, a in feats.items():
                    n_id = here[(node, "n_id")].cpu().numpy()
                    x = here.get((node, "x"))
                    verdict(x is not None and x.dtype == torch.from_numpy(a).dtype and
                            np.array_equal(x.cpu().numpy(), a[n_id]),
                            f"{where}: {node} x [{len(n_id)}, {a.shape[1]}] = features[n_id]")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--keep", help="build in this folder and keep it")
    a = ap.parse_args()
    if torch.device(a.device).type == "cuda" and not torch.cuda.is_available():
        print("gpu-features-check: FAILED (torch sees no CUDA device; --device cpu checks the "
              "CPU path)")
        return 1
    print(f"gpu-features-check: device {a.device}, torch {torch.__version__}", flush=True)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        failed = check(*build(a.keep), a.device, a.batches)
    else:
        with tempfile.TemporaryDirectory(prefix="pertload-features-") as d:
            failed = check(*build(d), a.device, a.batches)
    print("gpu-features-check: " + (f"FAILED ({len(failed)} checks)" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
