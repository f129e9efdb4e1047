#!/usr/bin/python3
"""Instructions per batch of the consumer process, nothing kept: one client
against others, counted by valgrind (callgrind), which repeat where
wall-clock times on a shared machine do not.

For each client and each epoch size N, a consumer (this interpreter under
`valgrind --tool=callgrind --trace-children=no`) iterates one epoch of DB,
shuffled, rows=range(N): each batch's labels and removed lists touched and
dropped before the next (as bench/stream_epoch.py's default loop does), so
no slot is ever copied. `pertload serve` is the consumer's child and runs
natively: it fills the ring ahead of the slow traced consumer, whose waits
for data are futex waits in pl_ring_next_within (system calls, not counted with
--collect-systime=no). The figure

    instructions per batch = (I(N2) - I(N1)) / (batches(N2) - batches(N1))

cancels what both runs share: the interpreter's start, the imports, the
serve's start and the loader's set-up. N1 must give more batches than the
ring has slots (16 at most by default): each slot's first use maps its
window, which then falls within both runs (a warning says when it does
not). Ratios are to the first client.

A client is NAME=PYTHONPATH:LIB:PROGRAM[:DB]: the directory holding its
`pertload` package, its libpertload.so and its pertload program (an older
client goes with its own library and serve), and optionally a database of
its own format version (else DB).

usage: consumer_instructions.py DB --client NAME=PYDIR:LIB:BIN[:DB] [...]
                                [--rows N1 N2] [--batch-size B] [--runs R]
                                [--python PY] [--keep-out DIR] [--json]

e.g. consumer_instructions.py DB --client new=build/python:build/libpertload.so:build/cli/pertload
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

# The most slots a ring has by default (Loader's `slots`).
SLOTS = 16

# The consumer: one epoch, nothing kept. touch() reads through locals that
# go when it returns, so no view of a batch outlives its step.
CONSUMER = r"""
import json, sys
import pertload

def touch(b):
    s = float(b.labels[:, 0].sum())
    n = 0
    for pos, _ in b.removed.values():
        n += pos.shape[0]
    return s, n

db, rows, batch_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lo = pertload.Loader(db, batch_size=batch_size, shuffle=True, seed=0, threads=2,
                     rows=range(rows), rank=0, world_size=1)
batches = samples = removed = 0
for b in lo:
    removed += touch(b)[1]
    samples += len(b)
    batches += 1
b = None
stats = lo.stats() if hasattr(lo, "stats") else None
lo.close()
print(json.dumps({"batches": batches, "samples": samples, "removed": removed,
                  "consumer_wait_ns": (stats or {}).get("consumer_wait_ns")}))
"""


def parse_client(text, default_db):
    """NAME=PYDIR:LIB:BIN[:DB] as a dict (paths made absolute)."""
    name, sep, rest = text.partition("=")
    parts = rest.split(":")
    if not sep or not name or len(parts) not in (3, 4):
        raise SystemExit(f"--client {text!r}: NAME=PYDIR:LIB:BIN[:DB] expected")
    paths = [os.path.abspath(p) for p in parts]
    for p in paths:
        if not os.path.exists(p):
            raise SystemExit(f"--client {name}: {p} does not exist")
    return {"name": name, "pythonpath": paths[0], "lib": paths[1], "bin": paths[2],
            "db": paths[3] if len(paths) == 4 else default_db}


def count(a, client, rows, outdir):
    """Run the consumer once under callgrind: (instructions, its JSON line)."""
    env = dict(os.environ, PYTHONPATH=client["pythonpath"], PERTLOAD_LIB=client["lib"],
               PERTLOAD_BIN=client["bin"], PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    tag = f"{client['name']}-{rows}-{len(os.listdir(outdir))}"
    out = os.path.join(outdir, f"callgrind.{tag}.%p")
    cmd = [a.valgrind, "--tool=callgrind", "--trace-children=no", "--collect-systime=no",
           f"--callgrind-out-file={out}", a.python, "-B", "-c", CONSUMER, client["db"],
           str(rows), str(a.batch_size)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{client['name']}, {rows} rows: exit {p.returncode}\n{p.stderr[-3000:]}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    # The consumer's own file (a child forked before its exec may leave none).
    files = glob.glob(os.path.join(outdir, f"callgrind.{tag}.*"))
    totals = []
    for f in files:
        with open(f) as fh:
            for line in fh:
                if line.startswith(("summary:", "totals:")):
                    totals.append((int(line.split()[1]), f))
                    break
    if not totals:
        raise SystemExit(f"{client['name']}, {rows} rows: no callgrind totals in {files}")
    instructions, path = max(totals)
    result.update(instructions=instructions, file=path)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--client", action="append", required=True,
                    help="NAME=PYDIR:LIB:BIN[:DB] (repeat; the first is the reference)")
    ap.add_argument("--rows", type=int, nargs=2, default=[2000, 10000], metavar=("N1", "N2"))
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--runs", type=int, default=1, help="runs of each client (interleaved)")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--keep-out", help="keep the callgrind files in this directory")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    n1, n2 = a.rows
    if n2 <= n1:
        raise SystemExit("--rows: N2 must be larger than N1")
    clients = [parse_client(c, os.path.abspath(a.db)) for c in a.client]
    with tempfile.TemporaryDirectory(prefix="pl-callgrind-") as tmp:
        outdir = a.keep_out or tmp
        os.makedirs(outdir, exist_ok=True)
        results = []
        for run in range(a.runs):
            for c in clients:
                r1, r2 = count(a, c, n1, outdir), count(a, c, n2, outdir)
                if r2["batches"] <= r1["batches"]:
                    raise SystemExit(f"{c['name']}: batches {r1['batches']} and {r2['batches']}")
                if r1["batches"] <= SLOTS:
                    print(f"warning: {n1} rows give {r1['batches']} batches, not more than "
                          f"{SLOTS} slots: slot set-up counts in the difference", file=sys.stderr)
                per = (r2["instructions"] - r1["instructions"]) / (r2["batches"] - r1["batches"])
                results.append({"client": c["name"], "run": run + 1, "rows": [n1, n2],
                                "batches": [r1["batches"], r2["batches"]],
                                "samples": [r1["samples"], r2["samples"]],
                                "instructions": [r1["instructions"], r2["instructions"]],
                                "files": [r1["file"], r2["file"]] if a.keep_out else None,
                                "removed": [r1["removed"], r2["removed"]],
                                "consumer_wait_s": [None if r["consumer_wait_ns"] is None
                                                    else r["consumer_wait_ns"] / 1e9
                                                    for r in (r1, r2)],
                                "per_batch": per})
    ref = [r["per_batch"] for r in results if r["client"] == clients[0]["name"]]
    ref = sum(ref) / len(ref)
    for r in results:
        r["ratio"] = r["per_batch"] / ref
    if a.json:
        print(json.dumps({"valgrind": subprocess.run([a.valgrind, "--version"],
                                                     capture_output=True, text=True).stdout.strip(),
                          "batch_size": a.batch_size, "results": results}, indent=1))
        return 0
    print(f"{'client':<12} {'run':>3} {'I(' + str(n1) + ')':>15} {'I(' + str(n2) + ')':>15} "
          f"{'batches':>9} {'instr/batch':>12} {'ratio':>6}")
    for r in results:
        print(f"{r['client']:<12} {r['run']:>3} {r['instructions'][0]:>15,} "
              f"{r['instructions'][1]:>15,} {r['batches'][0]:>4}/{r['batches'][1]:<4} "
              f"{r['per_batch']:>12,.0f} {r['ratio']:>6.3f}")
    print(f"ratio: to the mean of {clients[0]['name']}'s runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
